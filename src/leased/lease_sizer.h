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

// Whether a key's renewal must not wait `horizon_ns` (a batch window and a
// round trip) to leave: at the pace it has spent since its lease landed
// (`held_at_landing` tokens at `landed_ns`, book clock) the `held` tokens it
// has now run out sooner, and even a max-size lease down to its low-water mark
// would not cover the wait at that pace or the limit's rate, whichever is
// lower. Such a key, waiting, would renew at most one max-size lease per
// window: the window, not the limit, would cap it. A key of the long tail
// spends a max-size lease over many windows, and its renewals keep batching.
// False without a pace to go by (no lease: `held_at_landing` 0, nothing spent
// yet, or the clock stepped back).
bool RenewalCannotWait(const LeaseSizing& sizing, double low_water,
                       int64_t held_at_landing, int64_t landed_ns, int64_t held,
                       int64_t now_ns, int64_t horizon_ns);

// How long until Redis, refilling at the limit's rate, holds `minimum`
// tokens, if it held `last_remaining` `since_ns` ago: 0 if it already may.
// Other instances' use is not known here, so this is the earliest a request
// for `minimum` can succeed, not a promise that it will.
int64_t TimeToMinimum(const LeaseSizing& sizing, int64_t minimum,
                      int64_t last_remaining, int64_t since_ns);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_SIZER_H_
