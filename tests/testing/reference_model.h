// Reference models of every tokenlease algorithm for property tests: plain,
// single-threaded, written from the documented semantics rather than from the
// engine. Exact integer arithmetic only (int64 and __int128, ordinary `/`),
// no FastDivisor, no reduced fractions, no clamping tricks: if a value needs
// 128 bits it is computed in 128 bits.
//
// Conventions shared by all models:
//  - Times are int64 nanoseconds since the Unix epoch; P = period, L = limit,
//    B = burst (0 means L; window algorithms have capacity L).
//  - A call first "touches" every band (key creation, log expiry), then asks
//    each band whether the cost fits. Only an admitted call with cost > 0
//    changes a band's state ("cost 0 charges nothing and reports the state";
//    a denied request charges nothing). A window roll or a refill seen by a
//    denied or cost-0 call is therefore not remembered, which only matters
//    if the clock later steps back.
//  - Decision fields: remaining and reset_after describe the state after the
//    decision (charged if admitted, untouched if denied); retry_after is 0
//    when admitted, kNever (-1) if the cost can never fit, else the time
//    until the same request fits if nothing else arrives.
#ifndef TOKENLEASE_TESTS_TESTING_REFERENCE_MODEL_H_
#define TOKENLEASE_TESTS_TESTING_REFERENCE_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::reference {

using i128 = __int128;

// floor(a / b) and ceil(a / b) for b > 0 and any sign of a.
i128 FloorDiv(i128 a, i128 b);
i128 CeilDiv(i128 a, i128 b);
// Start of the window [off' + k*len, off' + (k+1)*len) containing t, where
// off' = off mod len in [0, len).
int64_t WindowStart(int64_t t, int64_t len, int64_t off);
// Narrows a 128-bit value that must fit (aborts otherwise).
int64_t Narrow(i128 x);

// One band's model. Queries are pure: they describe what a call at `now`
// would see given the calls recorded so far (Touch + Charge), without
// changing anything.
class ReferenceBand {
 public:
  virtual ~ReferenceBand() = default;
  virtual std::unique_ptr<ReferenceBand> Clone() const = 0;
  // Every call, admitted or not, touches every band first (the key exists
  // from its first call; a sliding log forgets grants that expired).
  virtual void Touch(int64_t now) { (void)now; }
  // True if `cost` fits now.
  virtual bool Fits(int64_t now, int64_t cost) const = 0;
  // Charges `cost` > 0 (requires Fits, except for sliding logs, which can
  // record any grant).
  virtual void Charge(int64_t now, int64_t cost) = 0;
  // Whole tokens available now (>= 0).
  virtual int64_t Remaining(int64_t now) const = 0;
  // Time from now until the band is back at its initial state if nothing
  // else arrives (0 if it already is).
  virtual int64_t ResetAfter(int64_t now) const = 0;
  // For a cost that does not fit now: kNever, or the time until it fits.
  virtual int64_t RetryAfter(int64_t now, int64_t cost) const = 0;
};

// Builds the model of one band (reference_model.cc has one class per
// algorithm, each with its semantics: GcraModel for smooth token buckets
// unless `bucket_form` asks for SmoothBucketModel, StepwiseModel,
// FixedWindowModel, SlidingCounterModel, SlidingLogModel).
std::unique_ptr<ReferenceBand> MakeReferenceBand(const Band& band,
                                                 bool bucket_form = false);

// A whole limit: every band must admit; charged to all or none.
// Decision.remaining is the minimum over bands, reset_after the maximum,
// retry_after the maximum over the bands that deny (kNever if one of them
// says kNever).
class ReferenceLimiter {
 public:
  explicit ReferenceLimiter(const LimitSpec& spec, bool bucket_form = false);
  ReferenceLimiter(const ReferenceLimiter& other);
  ReferenceLimiter& operator=(const ReferenceLimiter& other);
  ReferenceLimiter(ReferenceLimiter&&) = default;
  ReferenceLimiter& operator=(ReferenceLimiter&&) = default;

  // One TryAcquire(key, cost, now) on the single key.
  Decision Call(int64_t now, int64_t cost);
  // Records a call that was not admitted (touches every band, charges
  // nothing): what a denied Call does to the state.
  void Touch(int64_t now);
  // Records a call admitted elsewhere (touches, then charges every band
  // whether or not it fits). Only sliding logs can record a grant that does
  // not fit; other models abort.
  void Record(int64_t now, int64_t cost);
  // Pure: would `cost` fit at `now` (with the state as it is)?
  bool FitsAt(int64_t now, int64_t cost) const;
  // Direct access to band i's model.
  const ReferenceBand& band(int i) const { return *bands_[i]; }

 private:
  std::vector<std::unique_ptr<ReferenceBand>> bands_;
};

// "allowed=1 remaining=3 retry_after_ns=0 reset_after_ns=12 source=local".
std::string DecisionToString(const Decision& d);

}  // namespace tokenlease::reference

#endif  // TOKENLEASE_TESTS_TESTING_REFERENCE_MODEL_H_
