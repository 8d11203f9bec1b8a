// NOT PART OF THE API: for benchmarks only (bench/lease_bench.cc). Names
// here may change without notice.
#ifndef TOKENLEASE_INTERNAL_LEASE_BENCHMARK_ACCESS_H_
#define TOKENLEASE_INTERNAL_LEASE_BENCHMARK_ACCESS_H_

#include <cstdint>

#include "tokenlease/leased.h"

namespace tokenlease::internal {

// The handle decision without counting it (LimiterStats::decisions), to
// show what counting costs: the two paths differ in nothing else.
struct LeaseBenchmarkAccess {
  [[gnu::always_inline]] static Decision TryAcquireUncounted(
      LeasedLimiter& limiter, const LeasedLimiter::Handle& handle,
      int64_t cost = 1) {
    return limiter.Decide<false>(handle, cost);
  }
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_INTERNAL_LEASE_BENCHMARK_ACCESS_H_
