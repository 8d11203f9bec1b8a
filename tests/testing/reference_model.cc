#include "testing/reference_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace tokenlease::reference {

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "reference model: %s\n", what);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok) Die(what);
}

int64_t Ns(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

}  // namespace

i128 FloorDiv(i128 a, i128 b) {
  Check(b > 0, "FloorDiv by a non-positive number");
  i128 q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

i128 CeilDiv(i128 a, i128 b) { return -FloorDiv(-a, b); }

int64_t Narrow(i128 x) {
  Check(x >= INT64_MIN && x <= INT64_MAX, "value out of int64 range");
  return static_cast<int64_t>(x);
}

int64_t WindowStart(int64_t t, int64_t len, int64_t off) {
  const i128 o = ((static_cast<i128>(off) % len) + len) % len;
  return Narrow(o + FloorDiv(static_cast<i128>(t) - o, len) * len);
}

namespace {

// A ReferenceBand whose Clone() is a plain copy of `Self`, with what every
// model has: the limit L and the period P in ns.
template <typename Self>
class Model : public ReferenceBand {
 public:
  std::unique_ptr<ReferenceBand> Clone() const final {
    return std::make_unique<Self>(static_cast<const Self&>(*this));
  }

 protected:
  Model(int64_t limit, int64_t period_ns) : L_(limit), P_(period_ns) {}
  int64_t L_, P_;
};

// GCRA, which is also the smooth token bucket. Emission interval T = P/L ns
// (exact rational); state is the theoretical arrival time TAT, kept as
// TAT * L (units of 1/L ns). Admits iff max(TAT, now) + c*T - now <= B*T.
class GcraModel final : public Model<GcraModel> {
 public:
  GcraModel(int64_t limit, int64_t period_ns, int64_t burst)
      : Model(limit, period_ns), B_(burst > 0 ? burst : limit) {}
  bool Fits(int64_t now, int64_t cost) const override {
    // max(TAT, now) + c*T - now <= B*T, multiplied by L.
    return Debt(now) + static_cast<i128>(cost) * P_ <=
           static_cast<i128>(B_) * P_;
  }
  void Charge(int64_t now, int64_t cost) override {
    Check(Fits(now, cost), "GCRA charge that does not fit");
    const i128 now_scaled = static_cast<i128>(now) * L_;
    const i128 base = has_tat_ ? std::max(tat_scaled_, now_scaled) : now_scaled;
    tat_scaled_ = base + static_cast<i128>(cost) * P_;
    has_tat_ = true;
  }
  int64_t Remaining(int64_t now) const override {
    // floor((B*T - max(TAT - now, 0)) / T), 0 if negative.
    const i128 room = static_cast<i128>(B_) * P_ - Debt(now);
    return room <= 0 ? 0 : Narrow(FloorDiv(room, P_));
  }
  int64_t ResetAfter(int64_t now) const override {
    return Narrow(CeilDiv(Debt(now), L_));  // ceil(max(TAT - now, 0)) ns
  }
  int64_t RetryAfter(int64_t now, int64_t cost) const override {
    if (cost > B_) return kNever;
    // ceil(max(TAT, now) + c*T - now - B*T) ns.
    return Narrow(CeilDiv(
        Debt(now) + static_cast<i128>(cost) * P_ - static_cast<i128>(B_) * P_,
        L_));
  }

 private:
  // max(TAT - now, 0) in units of 1/L ns.
  i128 Debt(int64_t now) const {
    if (!has_tat_) return 0;
    const i128 d = tat_scaled_ - static_cast<i128>(now) * L_;
    return d > 0 ? d : 0;
  }
  int64_t B_;
  bool has_tat_ = false;  // false: TAT = -infinity (bucket full)
  i128 tat_scaled_ = 0;   // TAT * L
};

// The smooth token bucket in its textbook form: a level of tokens that
// grows by L per P up to B. The level is kept as tokens * P (an integer,
// since it grows by L per ns in those units). Defined for non-decreasing
// times only (a clock step back makes it abort); used to cross-check
// GcraModel.
class SmoothBucketModel final : public Model<SmoothBucketModel> {
 public:
  SmoothBucketModel(int64_t limit, int64_t period_ns, int64_t burst)
      : Model(limit, period_ns), B_(burst > 0 ? burst : limit) {}
  bool Fits(int64_t now, int64_t cost) const override {
    return Level(now) >= static_cast<i128>(cost) * P_;
  }
  void Charge(int64_t now, int64_t cost) override {
    Check(Fits(now, cost), "bucket charge that does not fit");
    level_ = Level(now) - static_cast<i128>(cost) * P_;
    last_ = now;
    started_ = true;
  }
  int64_t Remaining(int64_t now) const override {
    return Narrow(FloorDiv(Level(now), P_));
  }
  int64_t ResetAfter(int64_t now) const override {
    return Narrow(CeilDiv(static_cast<i128>(B_) * P_ - Level(now), L_));
  }
  int64_t RetryAfter(int64_t now, int64_t cost) const override {
    if (cost > B_) return kNever;
    return Narrow(CeilDiv(static_cast<i128>(cost) * P_ - Level(now), L_));
  }

 private:
  // tokens * P at `now`.
  i128 Level(int64_t now) const {
    const i128 full = static_cast<i128>(B_) * P_;
    if (!started_) return full;
    Check(now >= last_, "SmoothBucketModel needs non-decreasing times");
    // Each ns adds L/P tokens, i.e. L units of 1/P token.
    return std::min(full, level_ + static_cast<i128>(now - last_) * L_);
  }
  int64_t B_;
  bool started_ = false;
  int64_t last_ = 0;
  i128 level_ = 0;
};

// Stepwise token bucket: B tokens at the first call t0 (the anchor); L more
// at every whole P since the anchor (capped at B); the partial period
// carries over.
class StepwiseModel final : public Model<StepwiseModel> {
 public:
  StepwiseModel(int64_t limit, int64_t period_ns, int64_t burst)
      : Model(limit, period_ns), B_(burst > 0 ? burst : limit) {}
  void Touch(int64_t now) override {
    if (created_) return;
    created_ = true;
    anchor_ = now;
    tokens_ = B_;
  }
  bool Fits(int64_t now, int64_t cost) const override {
    return At(now).tokens >= cost;
  }
  void Charge(int64_t now, int64_t cost) override {
    Check(Fits(now, cost), "stepwise charge that does not fit");
    const View v = At(now);
    anchor_ = v.anchor;
    tokens_ = v.tokens - cost;
  }
  int64_t Remaining(int64_t now) const override {
    return std::max<int64_t>(At(now).tokens, 0);
  }
  int64_t ResetAfter(int64_t now) const override {
    const View v = At(now);
    if (v.tokens >= B_) return 0;
    return Narrow(static_cast<i128>(v.anchor) +
                  CeilDiv(B_ - v.tokens, L_) * P_ - now);
  }
  int64_t RetryAfter(int64_t now, int64_t cost) const override {
    if (cost > B_) return kNever;
    const View v = At(now);
    return Narrow(static_cast<i128>(v.anchor) +
                  CeilDiv(static_cast<i128>(cost) - v.tokens, L_) * P_ - now);
  }

 private:
  struct View {
    int64_t anchor;
    int64_t tokens;
  };
  View At(int64_t now) const {
    if (!created_) return View{now, B_};
    View v{anchor_, tokens_};
    if (now - v.anchor >= P_) {
      const int64_t k = (now - v.anchor) / P_;
      v.anchor += k * P_;
      v.tokens = Narrow(std::min<i128>(
          B_, static_cast<i128>(v.tokens) + static_cast<i128>(k) * L_));
    }
    return v;
  }
  int64_t B_;
  bool created_ = false;  // Touch has anchored the key
  int64_t anchor_ = 0;    // the start of the current period
  int64_t tokens_ = 0;    // the tokens at the anchor
};

// Fixed window: aligned windows [O' + kP, O' + (k+1)P), or (first-request
// anchor) a window that opens at the first charged request after the
// previous one ended. A time before the current window counts in it.
class FixedWindowModel final : public Model<FixedWindowModel> {
 public:
  FixedWindowModel(int64_t limit, int64_t period_ns, int64_t offset_ns,
                   bool first_request_anchor)
      : Model(limit, period_ns),
        O_(offset_ns),
        first_request_(first_request_anchor) {}
  bool Fits(int64_t now, int64_t cost) const override {
    return static_cast<i128>(At(now).count) + cost <= L_;
  }
  void Charge(int64_t now, int64_t cost) override {
    Check(Fits(now, cost), "fixed window charge that does not fit");
    const View v = At(now);
    has_window_ = true;
    start_ = v.start;
    count_ = v.count + cost;
  }
  int64_t Remaining(int64_t now) const override { return L_ - At(now).count; }
  int64_t ResetAfter(int64_t now) const override {
    const View v = At(now);
    return v.count > 0 ? v.start + P_ - now : 0;
  }
  int64_t RetryAfter(int64_t now, int64_t cost) const override {
    if (cost > L_) return kNever;
    return At(now).start + P_ - now;  // the next window starts empty
  }

 private:
  struct View {
    int64_t start;
    int64_t count;
  };
  View At(int64_t now) const {
    // A time before the window's start (clock step back) counts in it.
    if (has_window_ && now < start_ + P_) return View{start_, count_};
    return View{first_request_ ? now : WindowStart(now, P_, O_), 0};
  }
  int64_t O_;
  bool first_request_;       // windows open at a request, not aligned
  bool has_window_ = false;  // a charge opened a window
  int64_t start_ = 0;        // its start
  int64_t count_ = 0;        // the tokens charged in it
};

// Sliding window counter over aligned windows: prev = count of the window
// just before the current one (0 if it had none or is older), e = now -
// window start (>= 0). Admits iff prev*(P - e) + (cur + c)*P <= L*P.
// RetryAfter is found by binary search over the (monotone) admission
// predicate, not by a closed formula.
class SlidingCounterModel final : public Model<SlidingCounterModel> {
 public:
  SlidingCounterModel(int64_t limit, int64_t period_ns, int64_t offset_ns)
      : Model(limit, period_ns), O_(offset_ns) {}
  bool Fits(int64_t now, int64_t cost) const override {
    const View v = At(now);
    return static_cast<i128>(v.prev) * (P_ - v.e) +
               (static_cast<i128>(v.cur) + cost) * P_ <=
           static_cast<i128>(L_) * P_;
  }
  void Charge(int64_t now, int64_t cost) override {
    Check(Fits(now, cost), "sliding counter charge that does not fit");
    const View v = At(now);
    has_window_ = true;
    start_ = v.start;
    prev_ = v.prev;
    cur_ = v.cur + cost;
  }
  int64_t Remaining(int64_t now) const override {
    const View v = At(now);
    const i128 room = static_cast<i128>(L_) * P_ -
                      static_cast<i128>(v.prev) * (P_ - v.e) -
                      static_cast<i128>(v.cur) * P_;
    return room <= 0 ? 0 : Narrow(FloorDiv(room, P_));
  }
  int64_t ResetAfter(int64_t now) const override {
    const View v = At(now);
    // cur weighs on the estimate until the end of the next window; prev
    // until the end of this one.
    if (v.cur > 0) return v.start + 2 * P_ - now;
    if (v.prev > 0) return v.start + P_ - now;
    return 0;
  }
  int64_t RetryAfter(int64_t now, int64_t cost) const override {
    if (cost > L_) return kNever;
    Check(!Fits(now, cost), "RetryAfter for a cost that fits");
    // Two windows after this one both counts are gone, so a cost <= L fits.
    int64_t lo = now;  // does not fit
    int64_t hi = At(now).start + 2 * P_;
    Check(Fits(hi, cost), "sliding counter: no fit two windows later");
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (Fits(mid, cost)) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi - now;
  }

 private:
  struct View {
    int64_t start;
    int64_t cur;
    int64_t prev;
    int64_t e;
  };
  View At(int64_t now) const {
    View v{};
    if (!has_window_) {
      v = View{WindowStart(now, P_, O_), 0, 0, 0};
    } else if (now >= start_ + P_) {
      const int64_t start = WindowStart(now, P_, O_);
      // The current window's count becomes "previous" only if it is the
      // window immediately before.
      v = View{start, 0, start == start_ + P_ ? cur_ : 0, 0};
    } else {
      v = View{start_, cur_, prev_, 0};
    }
    v.e = std::max<int64_t>(now - v.start, 0);
    return v;
  }
  int64_t O_;
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
class SlidingLogModel final : public Model<SlidingLogModel> {
 public:
  SlidingLogModel(int64_t limit, int64_t period_ns, int64_t granule_ns,
                  int64_t offset_ns)
      : Model(limit, period_ns), G_(granule_ns), O_(offset_ns) {}
  void Touch(int64_t now) override {
    latest_ = EvalTime(now);
    has_latest_ = true;
  }
  bool Fits(int64_t now, int64_t cost) const override {
    return static_cast<i128>(Sum(now)) + cost <= L_;
  }
  void Charge(int64_t now, int64_t cost) override {
    // The grant happens when the log evaluated the call (at H if the caller's
    // clock is behind).
    const int64_t at = EvalTime(now);
    int64_t t = G_ > 0 ? WindowStart(at, G_, O_) : at;
    for (const Grant& g : grants_) {
      if (Counts(g, now)) t = std::max(t, g.time);
    }
    grants_.push_back(Grant{t, cost});
  }
  int64_t Remaining(int64_t now) const override { return L_ - Sum(now); }
  int64_t ResetAfter(int64_t now) const override {
    bool any = false;
    int64_t newest = 0;
    for (const Grant& g : grants_) {
      if (!Counts(g, now)) continue;
      newest = any ? std::max(newest, g.time) : g.time;
      any = true;
    }
    return any ? newest + P_ - now : 0;
  }
  int64_t RetryAfter(int64_t now, int64_t cost) const override {
    if (cost > L_) return kNever;
    std::vector<Grant> live;
    for (const Grant& g : grants_) {
      if (Counts(g, now)) live.push_back(g);
    }
    std::stable_sort(
        live.begin(), live.end(),
        [](const Grant& a, const Grant& b) { return a.time < b.time; });
    const int64_t must_expire = Sum(now) + cost - L_;
    Check(must_expire > 0, "RetryAfter for a cost that fits");
    int64_t expired = 0;
    for (const Grant& g : live) {
      expired += g.cost;
      if (expired >= must_expire) return g.time + P_ - now;
    }
    Die("sliding log: cost <= limit never fits");
  }

  // Tokens counting at `now`.
  int64_t Sum(int64_t now) const {
    int64_t sum = 0;
    for (const Grant& g : grants_) {
      if (Counts(g, now)) sum += g.cost;
    }
    return sum;
  }

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
  int64_t G_, O_;
  bool has_latest_ = false;
  int64_t latest_ = 0;         // H: the latest time of any call
  std::vector<Grant> grants_;  // in recording order
};

}  // namespace

// ------------------------------------------------------------------ Limiter

std::unique_ptr<ReferenceBand> MakeReferenceBand(const Band& band,
                                                 bool bucket_form) {
  const int64_t P = Ns(band.period);
  const int64_t O = Ns(band.window_offset);
  switch (band.algorithm) {
    case Algorithm::kTokenBucket:
      if (band.refill == Refill::kStepwise) {
        return std::make_unique<StepwiseModel>(band.limit, P, band.burst);
      }
      if (bucket_form) {
        return std::make_unique<SmoothBucketModel>(band.limit, P, band.burst);
      }
      return std::make_unique<GcraModel>(band.limit, P, band.burst);
    case Algorithm::kGcra:
      if (bucket_form) {
        return std::make_unique<SmoothBucketModel>(band.limit, P, band.burst);
      }
      return std::make_unique<GcraModel>(band.limit, P, band.burst);
    case Algorithm::kFixedWindow:
      return std::make_unique<FixedWindowModel>(
          band.limit, P, O, band.anchor == WindowAnchor::kFirstRequest);
    case Algorithm::kSlidingWindowCounter:
      return std::make_unique<SlidingCounterModel>(band.limit, P, O);
    case Algorithm::kSlidingWindowLog:
      return std::make_unique<SlidingLogModel>(band.limit, P,
                                               Ns(band.log_granularity), O);
  }
  Die("unknown algorithm");
}

ReferenceLimiter::ReferenceLimiter(const LimitSpec& spec, bool bucket_form) {
  for (const Band& b : spec.bands) {
    bands_.push_back(MakeReferenceBand(b, bucket_form));
  }
}

ReferenceLimiter::ReferenceLimiter(const ReferenceLimiter& other) {
  for (const auto& b : other.bands_) bands_.push_back(b->Clone());
}

ReferenceLimiter& ReferenceLimiter::operator=(const ReferenceLimiter& other) {
  if (this != &other) {
    std::vector<std::unique_ptr<ReferenceBand>> copy;
    for (const auto& b : other.bands_) copy.push_back(b->Clone());
    bands_ = std::move(copy);
  }
  return *this;
}

void ReferenceLimiter::Touch(int64_t now) {
  for (auto& b : bands_) b->Touch(now);
}

void ReferenceLimiter::Record(int64_t now, int64_t cost) {
  Touch(now);
  if (cost <= 0) return;
  for (auto& b : bands_) b->Charge(now, cost);
}

bool ReferenceLimiter::FitsAt(int64_t now, int64_t cost) const {
  for (const auto& b : bands_) {
    if (!b->Fits(now, cost)) return false;
  }
  return true;
}

Decision ReferenceLimiter::Call(int64_t now, int64_t cost) {
  Decision d;
  if (cost < 0) {
    d.source = DecisionSource::kInvalidArgument;
    d.retry_after_ns = kNever;
    return d;
  }
  Touch(now);
  d.allowed = FitsAt(now, cost);
  if (d.allowed && cost > 0) {
    for (auto& b : bands_) b->Charge(now, cost);
  }
  // Remaining and reset describe the state after the decision: charged if
  // admitted, as it was if denied.
  for (size_t i = 0; i < bands_.size(); ++i) {
    const int64_t rem = bands_[i]->Remaining(now);
    const int64_t reset = bands_[i]->ResetAfter(now);
    d.remaining = i == 0 ? rem : std::min(d.remaining, rem);
    d.reset_after_ns = i == 0 ? reset : std::max(d.reset_after_ns, reset);
  }
  if (!d.allowed) {
    d.retry_after_ns = 0;
    for (const auto& b : bands_) {
      if (b->Fits(now, cost)) continue;
      const int64_t r = b->RetryAfter(now, cost);
      if (r == kNever || d.retry_after_ns == kNever) {
        d.retry_after_ns = kNever;
      } else {
        d.retry_after_ns = std::max(d.retry_after_ns, r);
      }
    }
  }
  return d;
}

std::string DecisionToString(const Decision& d) {
  return absl::StrCat("allowed=", d.allowed, " remaining=", d.remaining,
                      " retry_after_ns=", d.retry_after_ns,
                      " reset_after_ns=", d.reset_after_ns,
                      " source=", DecisionSourceName(d.source));
}

}  // namespace tokenlease::reference
