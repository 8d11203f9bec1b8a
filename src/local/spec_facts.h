// Facts derived from a LimitSpec that every mode needs, each defined once:
// the local engine, spec validation, the Redis script encoder and the
// leased mode all ask these functions instead of re-deriving them.
#ifndef TOKENLEASE_SRC_LOCAL_SPEC_FACTS_H_
#define TOKENLEASE_SRC_LOCAL_SPEC_FACTS_H_

#include <cstdint>

#include "absl/time/time.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// Token bucket or GCRA: the algorithms that have a burst and can borrow.
inline bool IsBucket(const Band& b) {
  return b.algorithm == Algorithm::kTokenBucket ||
         b.algorithm == Algorithm::kGcra;
}

// Token bucket with smooth refill, or GCRA: one theoretical arrival time.
inline bool IsSmoothBucket(const Band& b) {
  return b.algorithm == Algorithm::kGcra ||
         (b.algorithm == Algorithm::kTokenBucket &&
          b.refill == Refill::kSmooth);
}

// The most tokens the band can ever admit at once: a bucket's burst (0
// means the limit), a window's limit (window algorithms ignore `burst`).
inline int64_t EffectiveBurst(const Band& b) {
  return IsBucket(b) && b.burst > 0 ? b.burst : b.limit;
}

// The first band's EffectiveBurst: what leased mode sizes leases from, and
// the largest cost a lease can pay.
inline int64_t FirstBandBurst(const LimitSpec& spec) {
  return EffectiveBurst(spec.bands.front());
}

// An upper bound on how long every band takes to come back from empty to
// full: per band its period times ceil(burst / limit) (a window's burst is
// its limit), the largest over the bands; saturates at INT64_MAX.
inline int64_t FullRefillNanos(const LimitSpec& spec) {
  int64_t longest = 0;
  for (const Band& b : spec.bands) {
    const int64_t periods = (EffectiveBurst(b) + b.limit - 1) / b.limit;
    const int64_t period = absl::ToInt64Nanoseconds(b.period);
    const int64_t t =
        period > INT64_MAX / periods ? INT64_MAX : period * periods;
    if (t > longest) longest = t;
  }
  return longest;
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_SPEC_FACTS_H_
