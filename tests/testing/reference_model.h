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

// A ReferenceBand whose Clone() is a plain copy of `Self`.
template <typename Self>
class CopyableBand : public ReferenceBand {
 public:
  std::unique_ptr<ReferenceBand> Clone() const final {
    return std::make_unique<Self>(static_cast<const Self&>(*this));
  }
};

// GCRA, which is also the smooth token bucket. Emission interval T = P/L ns
// (exact rational); state is the theoretical arrival time TAT, kept as
// TAT * L (units of 1/L ns). Admits iff max(TAT, now) + c*T - now <= B*T.
class GcraModel final : public CopyableBand<GcraModel> {
 public:
  GcraModel(int64_t limit, int64_t period_ns, int64_t burst);
  bool Fits(int64_t now, int64_t cost) const override;
  void Charge(int64_t now, int64_t cost) override;
  int64_t Remaining(int64_t now) const override;
  int64_t ResetAfter(int64_t now) const override;
  int64_t RetryAfter(int64_t now, int64_t cost) const override;

 private:
  // max(TAT - now, 0) in units of 1/L ns.
  i128 Debt(int64_t now) const;
  int64_t L_, P_, B_;
  bool has_tat_ = false;  // false: TAT = -infinity (bucket full)
  i128 tat_scaled_ = 0;   // TAT * L
};

// The smooth token bucket in its textbook form: a level of tokens that
// grows by L per P up to B. The level is kept as tokens * P (an integer,
// since it grows by L per ns in those units). Defined for non-decreasing
// times only (a clock step back makes it abort); used to cross-check
// GcraModel.
class SmoothBucketModel final : public CopyableBand<SmoothBucketModel> {
 public:
  SmoothBucketModel(int64_t limit, int64_t period_ns, int64_t burst);
  bool Fits(int64_t now, int64_t cost) const override;
  void Charge(int64_t now, int64_t cost) override;
  int64_t Remaining(int64_t now) const override;
  int64_t ResetAfter(int64_t now) const override;
  int64_t RetryAfter(int64_t now, int64_t cost) const override;

 private:
  i128 Level(int64_t now) const;  // tokens * P at `now`
  int64_t L_, P_, B_;
  bool started_ = false;
  int64_t last_ = 0;
  i128 level_ = 0;
};

// Stepwise token bucket: B tokens at the first call t0 (the anchor); L more
// at every whole P since the anchor (capped at B); the partial period
// carries over.
class StepwiseModel final : public CopyableBand<StepwiseModel> {
 public:
  StepwiseModel(int64_t limit, int64_t period_ns, int64_t burst);
  void Touch(int64_t now) override;
  bool Fits(int64_t now, int64_t cost) const override;
  void Charge(int64_t now, int64_t cost) override;
  int64_t Remaining(int64_t now) const override;
  int64_t ResetAfter(int64_t now) const override;
  int64_t RetryAfter(int64_t now, int64_t cost) const override;

 private:
  struct View {
    int64_t anchor;
    int64_t tokens;
  };
  View At(int64_t now) const;
  int64_t L_, P_, B_;
  bool created_ = false;
  int64_t anchor_ = 0;
  int64_t tokens_ = 0;
};

// Fixed window: aligned windows [O' + kP, O' + (k+1)P), or (first-request
// anchor) a window that opens at the first charged request after the
// previous one ended. A time before the current window counts in it.
class FixedWindowModel final : public CopyableBand<FixedWindowModel> {
 public:
  FixedWindowModel(int64_t limit, int64_t period_ns, int64_t offset_ns,
                   bool first_request_anchor);
  bool Fits(int64_t now, int64_t cost) const override;
  void Charge(int64_t now, int64_t cost) override;
  int64_t Remaining(int64_t now) const override;
  int64_t ResetAfter(int64_t now) const override;
  int64_t RetryAfter(int64_t now, int64_t cost) const override;

 private:
  struct View {
    int64_t start;
    int64_t count;
  };
  View At(int64_t now) const;
  int64_t L_, P_, O_;
  bool first_request_;
  bool has_window_ = false;
  int64_t start_ = 0;
  int64_t count_ = 0;
};

// Sliding window counter over aligned windows: prev = count of the window
// just before the current one (0 if it had none or is older), e = now -
// window start (>= 0). Admits iff prev*(P - e) + (cur + c)*P <= L*P.
// RetryAfter is found by binary search over the (monotone) admission
// predicate, not by a closed formula.
class SlidingCounterModel final : public CopyableBand<SlidingCounterModel> {
 public:
  SlidingCounterModel(int64_t limit, int64_t period_ns, int64_t offset_ns);
  bool Fits(int64_t now, int64_t cost) const override;
  void Charge(int64_t now, int64_t cost) override;
  int64_t Remaining(int64_t now) const override;
  int64_t ResetAfter(int64_t now) const override;
  int64_t RetryAfter(int64_t now, int64_t cost) const override;

 private:
  struct View {
    int64_t start;
    int64_t cur;
    int64_t prev;
    int64_t e;
  };
  View At(int64_t now) const;
  int64_t L_, P_, O_;
  bool has_window_ = false;
  int64_t start_ = 0;
  int64_t cur_ = 0;
  int64_t prev_ = 0;
};

// Exact sliding window log: every grant (time, cost) is kept; a grant at t
// counts while t + P > now. Expiry is irreversible: the log evaluates a
// call at E = max(now, H), H the latest time any call has shown it, so a
// call with an older time cannot see room that only exists because a later
// call expired grants; such a call's grant is booked at E too. A grant is
// recorded at the start of the granule containing E (granularity > 0) or
// at E, but never before the newest grant still counting (then it is
// booked with that one). Durations are reported from the caller's own
// time. Unbounded memory: this is the ideal the bounded engine log must
// never be looser than.
class SlidingLogModel final : public CopyableBand<SlidingLogModel> {
 public:
  SlidingLogModel(int64_t limit, int64_t period_ns, int64_t granule_ns,
                  int64_t offset_ns);
  void Touch(int64_t now) override;
  bool Fits(int64_t now, int64_t cost) const override;
  void Charge(int64_t now, int64_t cost) override;
  int64_t Remaining(int64_t now) const override;
  int64_t ResetAfter(int64_t now) const override;
  int64_t RetryAfter(int64_t now, int64_t cost) const override;

  // Tokens counting at `now`.
  int64_t Sum(int64_t now) const;

 private:
  struct Grant {
    int64_t time;
    int64_t cost;
  };
  // The time the log evaluates at for a call at `now`.
  int64_t EvalTime(int64_t now) const {
    return has_latest_ ? std::max(latest_, now) : now;
  }
  bool Counts(const Grant& g, int64_t now) const {
    return g.time + P_ > EvalTime(now);
  }
  int64_t L_, P_, G_, O_;
  bool has_latest_ = false;
  int64_t latest_ = 0;         // H: the latest time of any call
  std::vector<Grant> grants_;  // in recording order
};

// Builds the model of one band (GcraModel for smooth token buckets unless
// `bucket_form` asks for SmoothBucketModel).
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
