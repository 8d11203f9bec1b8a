// How many tokens to ask for, and how many to accept at least: the adaptive
// lease rule. Pure functions, so the rule is unit-tested on its own.
//
// target  = lease_size, adapted per key: doubled when the key ran dry before
//           its refill arrived (demand outran the lease), halved when a
//           lease expired with more than half of it unused;
// wanted  = min(target, max_lease, max(minimum, remaining_share * last
//           remaining)) where max_lease = max_lease_fraction * burst;
// minimum = min(wanted, max(1, rate * min_batch)).
// Near exhaustion `remaining` is small, so `wanted` shrinks to `minimum`:
// the last tokens go out in small grants to whichever instances ask, and
// Redis serves them in arrival order (each instance's retry after a refusal
// is jittered, so none is systematically first).
#ifndef TOKENLEASE_SRC_LEASED_LEASE_SIZER_H_
#define TOKENLEASE_SRC_LEASED_LEASE_SIZER_H_

#include <cstdint>

#include "tokenlease/leased.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

struct LeaseSizing {
  int64_t max_lease = 1;     // tokens
  int64_t min_batch = 1;     // tokens
  int64_t initial_size = 1;  // first target (one token)
  double rate_per_ns = 0;    // the first band's rate
};

// Derives the per-limit constants from the spec's first band and options.
LeaseSizing ComputeSizing(const LimitSpec& spec, const LeaseOptions& options);

struct LeaseAsk {
  int64_t wanted = 1;
  int64_t minimum = 1;
};

// What to request for a key whose adaptive target is `target` and for which
// Redis last reported `last_remaining` (-1: unknown); `cost_hint` is the
// smallest amount worth asking for (the cost that triggered the request).
LeaseAsk ComputeAsk(const LeaseSizing& sizing, const LeaseOptions& options,
                    int64_t target, int64_t last_remaining, int64_t cost_hint);

// The next target after a lease cycle: `ran_dry` (demand outran the lease)
// doubles it; `unused_fraction` > 0.5 at expiry halves it.
int64_t AdaptTarget(const LeaseSizing& sizing, int64_t target, bool ran_dry,
                    double unused_fraction);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_SIZER_H_
