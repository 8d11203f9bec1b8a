// NOT PART OF THE API: what LeasedLimiter's inline decision path
// (tokenlease/leased.h) needs of a leased key. Names here may change
// without notice.
#ifndef TOKENLEASE_INTERNAL_LEASE_HOT_H_
#define TOKENLEASE_INTERNAL_LEASE_HOT_H_

#include <atomic>
#include <cstdint>

#include "tokenlease/decision.h"

namespace tokenlease::internal {

// The part of a leased key the inline decision path touches (the rest is
// in src/leased/lease_entry.h, which derives from it).
struct LeaseHot {
  // Tokens this instance may still spend; see docs/design.md.
  std::atomic<int64_t> balance{0};
  // A refill is asked for below this.
  std::atomic<int64_t> low_water{1};
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
