// NOT PART OF THE API: what LeasedLimiter's inline decision path
// (tokenlease/leased.h) needs of a leased key. Names here may change
// without notice.
#ifndef TOKENLEASE_INTERNAL_LEASE_HOT_H_
#define TOKENLEASE_INTERNAL_LEASE_HOT_H_

#include <atomic>
#include <cstdint>

#include "tokenlease/decision.h"

namespace tokenlease::internal {

// One thread's slice of a hot key's lease (docs/design.md, "Hot keys:
// per-thread slices"). Only its owner (the thread whose slice index it is)
// decides from it, with plain loads and stores inside a critical section
// (a section); the reconciler takes its tokens only after setting
// `revoked`, a process-wide memory barrier (membarrier), and seeing no
// section in flight (`started` == `ended`), so the owner needs no locked
// instruction and a token is never spent twice. Each slice has its own
// pair of cache lines (CPUs prefetch lines in aligned pairs: two threads'
// slices in one pair would still share).
struct alignas(128) LeaseSlice {
  // Tokens of the instance's lease held by this slice.
  std::atomic<int64_t> tokens{0};
  // 1 while the reconciler takes (or has taken) the tokens: the owner
  // decides from the key's balance instead.
  std::atomic<uint32_t> revoked{0};
  // How many tokens the owner's next refill takes from the key's balance
  // (grows while the owner keeps refilling; reset when the slice idles).
  std::atomic<int64_t> chunk{1};
  // Sections the owner ended. An inline decision that admits ends its
  // section by adding one here, so this also counts the decisions admitted
  // inline (LimiterStats::decisions, from the lease) without a store of
  // its own; every other section ends by setting `started` back. Never
  // reset: LeaseSlicer keeps every block of slices until the limiter ends.
  std::atomic<uint64_t> ended{0};
  // Sections the owner started: `ended` + 1 while one is in flight. In
  // the line's other half: a load of `revoked` or `tokens` right after the
  // store of `started` must not wait on it (measured: a load from the same
  // 16 bytes as a pending narrower store stalled the section on this AMD
  // machine).
  alignas(32) std::atomic<uint64_t> started{0};
};

// A hot key's slices, one per thread slice index below `count`, laid out
// right after this header (one allocation: the slice's address is computed,
// not loaded).
struct alignas(128) LeaseSlices {
  uint32_t count = 0;
  // The largest refill chunk (set by the reconciler from the lease size and
  // the number of active slices). relaxed: a size hint.
  std::atomic<int64_t> chunk_cap{1};
  LeaseSlice& operator[](uint32_t i) {
    return reinterpret_cast<LeaseSlice*>(this + 1)[i];
  }
  const LeaseSlice& operator[](uint32_t i) const {
    return reinterpret_cast<const LeaseSlice*>(this + 1)[i];
  }
};

// The calling thread's slice index plus one (0: none claimed yet).
// Initial-exec: one fs-relative load, as tls_decision_counts.
inline constinit thread_local uint32_t tls_lease_slice
    __attribute__((tls_model("initial-exec"))) = 0;

// Pays `cost` from the calling thread's slice of `s` (the owner's section;
// see LeaseSlice): true and the slice's `*remaining` if it held enough
// (counted in the slice's `ended` if kCount); false if the thread has no
// slice yet, the reconciler is taking the slice back, or it holds too few
// (the caller refills or decides from the balance).
//
// Three stores a decision (`started`, `tokens`, `ended`): a flag set and
// cleared around the section, plus a count in the thread's array, took
// four stores and three more loads (2 threads on one key: 2.3 ns a
// decision against 1.9; docs/benchmarks.md, "Measurements behind design
// choices").
template <bool kCount>
[[gnu::always_inline]] inline bool TakeFromSlice(LeaseSlices& s, int64_t cost,
                                                 int64_t* remaining) {
  const uint32_t i = tls_lease_slice - 1;  // wraps when none is claimed
  if (i >= s.count) [[unlikely]] {
    return false;
  }
  LeaseSlice& slice = s[i];
  // relaxed: only the owner writes `ended` and `started`. The section's
  // relaxed stores and loads are kept in order by the compiler fence; the
  // reconciler's membarrier orders them against its revoke.
  const uint64_t n = slice.ended.load(std::memory_order_relaxed);
  slice.started.store(n + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // acquire: after the reconciler reopens the slice, its exchange of the
  // tokens is seen.
  const bool revoked = slice.revoked.load(std::memory_order_acquire);
  const int64_t held = slice.tokens.load(std::memory_order_relaxed);
  if (!revoked && held >= cost) [[likely]] {
    slice.tokens.store(held - cost, std::memory_order_relaxed);
    *remaining = held - cost;
    // release (either end): the tokens' store is visible to a reconciler
    // that reads started == ended. Counted: the section ends with its
    // count; else `started` goes back, as for a section that paid nothing.
    if constexpr (kCount) {
      slice.ended.store(n + 1, std::memory_order_release);
    } else {
      slice.started.store(n, std::memory_order_release);
    }
    return true;
  }
  slice.started.store(n, std::memory_order_release);
  return false;
}

// The part of a leased key the inline decision path touches (the rest is
// in src/leased/lease_entry.h, which derives from it).
struct LeaseHot {
  // Tokens this instance may still spend; see docs/design.md. For a key
  // with slices, the part of the lease no slice holds.
  std::atomic<int64_t> balance{0};
  // A refill is asked for below this.
  std::atomic<int64_t> low_water{1};
  // Set once by the reconciler when the key becomes hot (never reset while
  // the key lives). acquire on load: the slices' fields are visible.
  std::atomic<LeaseSlices*> slices{nullptr};
};

// The decision for a request paid from the lease, `remaining` tokens left.
inline Decision LeaseAdmitted(int64_t remaining) {
  Decision d;
  d.allowed = true;
  d.source = DecisionSource::kLease;
  d.remaining = remaining;
  return d;
}

// A handle's hint that its key is refused (LeasedLimiter::Handle): a copy,
// and a handle assigned to, start without it. relaxed (every access): a
// hint; either value gives a correct decision.
struct RefusalHint {
  RefusalHint() = default;
  RefusalHint(const RefusalHint&) {}
  RefusalHint& operator=(const RefusalHint&) {
    flag.store(false, std::memory_order_relaxed);
    return *this;
  }
  mutable std::atomic<bool> flag{false};
};

// For benchmarks only (bench/lease_bench.cc, defined in
// tokenlease/internal/lease_benchmark_access.h): the handle decision
// without counting it, to show what counting costs.
struct LeaseBenchmarkAccess;

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_INTERNAL_LEASE_HOT_H_
