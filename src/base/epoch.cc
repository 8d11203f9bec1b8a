#include "base/epoch.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "base/thread_slots.h"

namespace tokenlease::internal {
namespace {

// Every slot ever registered, newest first; slots are never freed.
std::atomic<EpochSlot*> g_slots{nullptr};
std::once_flag g_setup;
// Whether reclaimers use membarrier (written once under g_setup).
bool g_membarrier = false;

void SetUpBarriers() {
#if !defined(__SANITIZE_THREAD__)
  const char* force_fences = std::getenv("TOKENLEASE_EPOCH_FENCES");
  if (force_fences != nullptr && force_fences[0] == '1') return;
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
              0) == 0) {
    g_membarrier = true;
    // Relaxed: see g_light_readers; set after registration succeeded, so a
    // reader that skips its fence is always covered by a membarrier.
    epoch_internal::g_light_readers.store(true, std::memory_order_relaxed);
  }
#endif
}

// Gives the thread's slot back when the thread exits: a pthread key's
// destructor, which glibc runs after the thread's C++ thread_local
// destructors. A critical section in one of those still has its slot, and
// never writes to a slot given back (which another thread may own by
// then). A critical section in another key's destructor registers again,
// and glibc calls this again (up to PTHREAD_DESTRUCTOR_ITERATIONS rounds).
void ReleaseSlot(void* arg) {
  EpochSlot* slot = static_cast<EpochSlot*>(arg);
  epoch_internal::tls.slot = nullptr;  // a later section registers again
  // Release: the thread's last critical section happens before a new
  // owner (acquire on claim) reuses the slot.
  slot->epoch.store(0, std::memory_order_release);
  slot->in_use.store(false, std::memory_order_release);
}

pthread_key_t SlotKey() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    // Fails only when the process is out of keys (PTHREAD_KEYS_MAX, 1024).
    if (pthread_key_create(&k, &ReleaseSlot) != 0) std::abort();
    return k;
  }();
  return key;
}

void HeavyBarrier() {
  if (g_membarrier) {
    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

}  // namespace

EpochSlot* epoch_internal::RegisterThread() {
  std::call_once(g_setup, SetUpBarriers);
  // Acquire / release: a pushed slot's fields, `next` among them, are
  // visible to the scans.
  EpochSlot* slot = ClaimOrAddSlot(g_slots, std::memory_order_acquire,
                                   std::memory_order_release);
  tls.slot = slot;
  // Allocates at most once per thread (glibc's second-level key array).
  if (pthread_setspecific(SlotKey(), slot) != 0) std::abort();
  return slot;
}

uint64_t EpochTryAdvance() {
  std::call_once(g_setup, SetUpBarriers);
  const uint64_t current =
      epoch_internal::g_epoch.load(std::memory_order_acquire);
  HeavyBarrier();
  for (EpochSlot* s = g_slots.load(std::memory_order_acquire); s != nullptr;
       s = s->next) {
    // seq_cst: under ThreadSanitizer (no membarrier) this load and the
    // reader's seq_cst exchange form the store-load pair; acquire pairs with
    // a reader's release on leaving.
    const uint64_t e = s->epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e != current) return current;  // a reader is behind
  }
  uint64_t expected = current;
  // acq_rel: one advance per observed epoch, whoever wins.
  epoch_internal::g_epoch.compare_exchange_strong(expected, current + 1,
                                                  std::memory_order_acq_rel);
  return epoch_internal::g_epoch.load(std::memory_order_acquire);
}

bool EpochReadersFence() {
  std::call_once(g_setup, SetUpBarriers);
  return !g_membarrier;
}

}  // namespace tokenlease::internal
