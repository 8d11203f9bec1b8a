// The back-off of every spin loop in tokenlease: a short burst of `pause`
// instructions (cheap, keeps the core for the lock holder's sibling
// hyper-thread), then yielding the CPU, so that a waiter on a 2-core machine
// never starves the thread it is waiting for.
#ifndef TOKENLEASE_SRC_BASE_SPIN_WAIT_H_
#define TOKENLEASE_SRC_BASE_SPIN_WAIT_H_

#include <thread>

namespace tokenlease::internal {

// Spins until `spins` reaches 64, then yields on every call.
inline void SpinWait(int spins) {
  if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_SPIN_WAIT_H_
