// A one-word test-and-test-and-set spin lock and its RAII guard. Held only
// around a few dozen instructions (a multi-band or sliding-log decision),
// where spinning beats parking; after a short spin it yields (spin_wait.h).
#ifndef TOKENLEASE_SRC_BASE_SPIN_LOCK_H_
#define TOKENLEASE_SRC_BASE_SPIN_LOCK_H_

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "base/spin_wait.h"

namespace tokenlease::internal {

class ABSL_LOCKABLE SpinLock {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    for (int spins = 0;; ++spins) {
      // Acquire: the previous holder's writes become visible.
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // Relaxed: only waits for the word to look free; the exchange decides.
      while (locked_.load(std::memory_order_relaxed)) SpinWait(spins++);
    }
  }
  // Release: publishes the writes made under the lock to the next holder.
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

// Holds `lock` for its scope.
class ABSL_SCOPED_LOCKABLE SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock* lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_->Lock();
  }
  ~SpinLockGuard() ABSL_UNLOCK_FUNCTION() { lock_->Unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock* const lock_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_SPIN_LOCK_H_
