// A reader-writer spin lock of one word for the registry's shards. Readers
// (every lookup by name) pay one fetch_add and one fetch_sub; writers
// (inserting a key, sweeping idle ones) are rare and short. absl::Mutex
// would do, but Debian's build runs its deadlock detector on every
// acquisition (measured: ~400 instructions per lookup).
#ifndef TOKENLEASE_SRC_BASE_RW_SPIN_LOCK_H_
#define TOKENLEASE_SRC_BASE_RW_SPIN_LOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "base/spin_wait.h"

namespace tokenlease::internal {

class ABSL_LOCKABLE RwSpinLock {
 public:
  // Acquire: the entries and map state written under the writer lock are
  // visible to the reader.
  void LockShared() ABSL_SHARED_LOCK_FUNCTION() {
    for (int spins = 0;; ++spins) {
      if ((state_.fetch_add(kReader, std::memory_order_acquire) & kWriter) ==
          0) {
        return;
      }
      // A writer holds or wants the lock: step back and wait for it.
      state_.fetch_sub(kReader, std::memory_order_relaxed);
      while (state_.load(std::memory_order_relaxed) & kWriter)
        SpinWait(spins++);
    }
  }
  // Release: this reader's accesses happen before a later writer's.
  void UnlockShared() ABSL_UNLOCK_FUNCTION() {
    state_.fetch_sub(kReader, std::memory_order_release);
  }

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    // Claim the writer bit (blocks new readers), then wait for the readers
    // already inside to leave. Acquire pairs with their release.
    for (int spins = 0;; ++spins) {
      uint32_t s = state_.load(std::memory_order_relaxed);
      if ((s & kWriter) == 0 &&
          state_.compare_exchange_weak(s, s | kWriter,
                                       std::memory_order_acquire)) {
        break;
      }
      SpinWait(spins);
    }
    for (int spins = 0;
         (state_.load(std::memory_order_acquire) & ~kWriter) != 0; ++spins) {
      SpinWait(spins);
    }
  }
  // Release: publishes the writer's changes to the next readers.
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    state_.fetch_and(~kWriter, std::memory_order_release);
  }

 private:
  static constexpr uint32_t kWriter = 1;
  static constexpr uint32_t kReader = 2;
  std::atomic<uint32_t> state_{0};
};

class ABSL_SCOPED_LOCKABLE ReaderLock {
 public:
  explicit ReaderLock(RwSpinLock* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->LockShared();
  }
  ~ReaderLock() ABSL_UNLOCK_FUNCTION() { mu_->UnlockShared(); }

 private:
  RwSpinLock* const mu_;
};

class ABSL_SCOPED_LOCKABLE WriterLock {
 public:
  explicit WriterLock(RwSpinLock* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->Lock();
  }
  ~WriterLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  RwSpinLock* const mu_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_RW_SPIN_LOCK_H_
