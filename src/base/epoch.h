// Epoch-based reclamation for readers that take no locked instruction: the
// key registries' lookups by name (sharded_registry.h) read their tables
// and entries inside an EpochGuard, and an entry or table a writer unlinked
// is freed only once every reader that could still hold it has left.
//
// A reader announces itself with a plain store of the global epoch into its
// thread's slot and leaves with another. The expensive half of the fence
// that orders "announce, then read the table" against "unlink, then look at
// the slots" is paid by the reclaimer (asymmetric fences, as in folly's
// hazard pointers): it calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
// which runs a full memory barrier on every CPU running a thread of this
// process, before it scans the slots. Where membarrier cannot be used (an
// old kernel, a seccomp filter, or TOKENLEASE_EPOCH_FENCES=1 in the
// environment) readers pay a full fence instead; under ThreadSanitizer,
// which cannot see membarrier, readers announce with a seq_cst exchange.
//
// Memory ordering. A reader's announcement (a relaxed store and a compiler
// barrier) is ordered before its loads of shared pointers by the
// reclaimer's membarrier: either the reclaimer's scan sees the announcement,
// or the reader's loads come after the barrier and see the unlink. Leaving
// is a release store that the reclaimer's acquire load pairs with, so
// everything a reader did with an object happens before it is freed. An
// object retired at epoch e is freed once the epoch reaches e + kGrace:
// each advance needs every reader inside a critical section to have
// announced the current epoch.
#ifndef TOKENLEASE_SRC_BASE_EPOCH_H_
#define TOKENLEASE_SRC_BASE_EPOCH_H_

#include <atomic>
#include <cstdint>

namespace tokenlease::internal {

// One reader slot per thread that ever entered a critical section (never
// freed; reused after its thread exits).
struct alignas(64) EpochSlot {
  // 0: not in a critical section; else the epoch announced on entry.
  std::atomic<uint64_t> epoch{0};
  std::atomic<bool> in_use{false};
  EpochSlot* next = nullptr;  // immutable once the slot is published
};

namespace epoch_internal {

// The process's epoch. Relaxed loads by readers: a stale value only delays
// reclamation.
inline std::atomic<uint64_t> g_epoch{1};
// True once membarrier is registered: readers then need no fence. Relaxed:
// it only goes from false to true, before any reader can see true, and
// reclaimers read the registration state itself (epoch.cc).
inline std::atomic<bool> g_light_readers{false};

struct ThreadState {
  EpochSlot* slot = nullptr;
};
// Initial-exec: one fs-relative access, no __tls_get_addr call.
inline thread_local ThreadState tls __attribute__((tls_model("initial-exec")));

// Registers the calling thread's slot (first critical section only).
EpochSlot* RegisterThread();

}  // namespace epoch_internal

// Objects retired at epoch e may be freed once EpochNow() >= e + kGrace.
inline constexpr uint64_t kEpochGrace = 2;

inline uint64_t EpochNow() {
  return epoch_internal::g_epoch.load(std::memory_order_relaxed);
}

// Tries to move the epoch forward: a heavy barrier, then every slot inside
// a critical section must have announced the current epoch. Returns the
// epoch after the call. Any thread; never waits for readers.
uint64_t EpochTryAdvance();

// True if readers pay a full fence (membarrier unavailable or disabled).
bool EpochReadersFence();

// A read-side critical section: objects reached through shared pointers
// inside it are not freed until it ends. A thread-local access, a load and
// two plain stores (see the file comment). Nests: a section inside another
// (its thread's slot already holds an epoch) does nothing.
class EpochGuard {
 public:
  EpochGuard() {
    EpochSlot* s = epoch_internal::tls.slot;
    if (s == nullptr) [[unlikely]]
      s = epoch_internal::RegisterThread();
    // Nested: the outer section's announcement covers this one. Relaxed:
    // only this thread writes its slot's epoch. (A depth counter would be
    // one more store before a decision's compare-and-swap, see
    // docs/design.md, "The hot path".)
    if (s->epoch.load(std::memory_order_relaxed) != 0) {
      slot_ = nullptr;
      return;
    }
    slot_ = s;
    const uint64_t e = EpochNow();
#if defined(__SANITIZE_THREAD__)
    s->epoch.exchange(e, std::memory_order_seq_cst);
#else
    // Relaxed store: ordered before the section's loads by the reclaimer's
    // membarrier, or by the fence below when there is none.
    s->epoch.store(e, std::memory_order_relaxed);
    if (epoch_internal::g_light_readers.load(std::memory_order_relaxed))
        [[likely]] {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
#endif
  }
  ~EpochGuard() {
    if (slot_ == nullptr) return;  // nested
    // Release: the section's accesses happen before a reclaimer that sees
    // the slot empty (acquire) frees anything.
    slot_->epoch.store(0, std::memory_order_release);
  }
  EpochGuard(const EpochGuard&) = delete;
  EpochGuard& operator=(const EpochGuard&) = delete;

 private:
  EpochSlot* slot_;  // null in a nested section
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_EPOCH_H_
