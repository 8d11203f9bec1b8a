// Facts derived from a LimitSpec that every mode needs, each defined once:
// the local engine, spec validation, the Redis script encoder and the
// leased mode all ask these functions instead of re-deriving them.
#ifndef TOKENLEASE_SRC_LOCAL_SPEC_FACTS_H_
#define TOKENLEASE_SRC_LOCAL_SPEC_FACTS_H_

#include <cstdint>

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

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_SPEC_FACTS_H_
