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

// --------------------------------------------------------------------- GCRA

GcraModel::GcraModel(int64_t limit, int64_t period_ns, int64_t burst)
    : L_(limit), P_(period_ns), B_(burst > 0 ? burst : limit) {}

i128 GcraModel::Debt(int64_t now) const {
  if (!has_tat_) return 0;
  const i128 d = tat_scaled_ - static_cast<i128>(now) * L_;
  return d > 0 ? d : 0;
}

bool GcraModel::Fits(int64_t now, int64_t cost) const {
  // max(TAT, now) + c*T - now <= B*T, multiplied by L.
  return Debt(now) + static_cast<i128>(cost) * P_ <= static_cast<i128>(B_) * P_;
}

void GcraModel::Charge(int64_t now, int64_t cost) {
  Check(Fits(now, cost), "GCRA charge that does not fit");
  const i128 now_scaled = static_cast<i128>(now) * L_;
  const i128 base = has_tat_ ? std::max(tat_scaled_, now_scaled) : now_scaled;
  tat_scaled_ = base + static_cast<i128>(cost) * P_;
  has_tat_ = true;
}

int64_t GcraModel::Remaining(int64_t now) const {
  // floor((B*T - max(TAT - now, 0)) / T), 0 if negative.
  const i128 room = static_cast<i128>(B_) * P_ - Debt(now);
  return room <= 0 ? 0 : Narrow(FloorDiv(room, P_));
}

int64_t GcraModel::ResetAfter(int64_t now) const {
  return Narrow(CeilDiv(Debt(now), L_));  // ceil(max(TAT - now, 0)) ns
}

int64_t GcraModel::RetryAfter(int64_t now, int64_t cost) const {
  if (cost > B_) return kNever;
  // ceil(max(TAT, now) + c*T - now - B*T) ns.
  return Narrow(CeilDiv(
      Debt(now) + static_cast<i128>(cost) * P_ - static_cast<i128>(B_) * P_,
      L_));
}

// ------------------------------------------------------ Smooth token bucket

SmoothBucketModel::SmoothBucketModel(int64_t limit, int64_t period_ns,
                                     int64_t burst)
    : L_(limit), P_(period_ns), B_(burst > 0 ? burst : limit) {}

i128 SmoothBucketModel::Level(int64_t now) const {
  const i128 full = static_cast<i128>(B_) * P_;
  if (!started_) return full;
  Check(now >= last_, "SmoothBucketModel needs non-decreasing times");
  // Each ns adds L/P tokens, i.e. L units of 1/P token.
  return std::min(full, level_ + static_cast<i128>(now - last_) * L_);
}

bool SmoothBucketModel::Fits(int64_t now, int64_t cost) const {
  return Level(now) >= static_cast<i128>(cost) * P_;
}

void SmoothBucketModel::Charge(int64_t now, int64_t cost) {
  Check(Fits(now, cost), "bucket charge that does not fit");
  level_ = Level(now) - static_cast<i128>(cost) * P_;
  last_ = now;
  started_ = true;
}

int64_t SmoothBucketModel::Remaining(int64_t now) const {
  return Narrow(FloorDiv(Level(now), P_));
}

int64_t SmoothBucketModel::ResetAfter(int64_t now) const {
  return Narrow(CeilDiv(static_cast<i128>(B_) * P_ - Level(now), L_));
}

int64_t SmoothBucketModel::RetryAfter(int64_t now, int64_t cost) const {
  if (cost > B_) return kNever;
  return Narrow(CeilDiv(static_cast<i128>(cost) * P_ - Level(now), L_));
}

// ---------------------------------------------------- Stepwise token bucket

StepwiseModel::StepwiseModel(int64_t limit, int64_t period_ns, int64_t burst)
    : L_(limit), P_(period_ns), B_(burst > 0 ? burst : limit) {}

void StepwiseModel::Touch(int64_t now) {
  if (created_) return;
  created_ = true;
  anchor_ = now;
  tokens_ = B_;
}

StepwiseModel::View StepwiseModel::At(int64_t now) const {
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

bool StepwiseModel::Fits(int64_t now, int64_t cost) const {
  return At(now).tokens >= cost;
}

void StepwiseModel::Charge(int64_t now, int64_t cost) {
  Check(Fits(now, cost), "stepwise charge that does not fit");
  const View v = At(now);
  anchor_ = v.anchor;
  tokens_ = v.tokens - cost;
}

int64_t StepwiseModel::Remaining(int64_t now) const {
  return std::max<int64_t>(At(now).tokens, 0);
}

int64_t StepwiseModel::ResetAfter(int64_t now) const {
  const View v = At(now);
  if (v.tokens >= B_) return 0;
  return Narrow(static_cast<i128>(v.anchor) + CeilDiv(B_ - v.tokens, L_) * P_ -
                now);
}

int64_t StepwiseModel::RetryAfter(int64_t now, int64_t cost) const {
  if (cost > B_) return kNever;
  const View v = At(now);
  return Narrow(static_cast<i128>(v.anchor) +
                CeilDiv(static_cast<i128>(cost) - v.tokens, L_) * P_ - now);
}

// ------------------------------------------------------------- Fixed window

FixedWindowModel::FixedWindowModel(int64_t limit, int64_t period_ns,
                                   int64_t offset_ns, bool first_request_anchor)
    : L_(limit),
      P_(period_ns),
      O_(offset_ns),
      first_request_(first_request_anchor) {}

FixedWindowModel::View FixedWindowModel::At(int64_t now) const {
  // A time before the window's start (clock step back) counts in it.
  if (has_window_ && now < start_ + P_) return View{start_, count_};
  return View{first_request_ ? now : WindowStart(now, P_, O_), 0};
}

bool FixedWindowModel::Fits(int64_t now, int64_t cost) const {
  return static_cast<i128>(At(now).count) + cost <= L_;
}

void FixedWindowModel::Charge(int64_t now, int64_t cost) {
  Check(Fits(now, cost), "fixed window charge that does not fit");
  const View v = At(now);
  has_window_ = true;
  start_ = v.start;
  count_ = v.count + cost;
}

int64_t FixedWindowModel::Remaining(int64_t now) const {
  return L_ - At(now).count;
}

int64_t FixedWindowModel::ResetAfter(int64_t now) const {
  const View v = At(now);
  return v.count > 0 ? v.start + P_ - now : 0;
}

int64_t FixedWindowModel::RetryAfter(int64_t now, int64_t cost) const {
  if (cost > L_) return kNever;
  return At(now).start + P_ - now;  // the next window starts empty
}

// -------------------------------------------------- Sliding window counter

SlidingCounterModel::SlidingCounterModel(int64_t limit, int64_t period_ns,
                                         int64_t offset_ns)
    : L_(limit), P_(period_ns), O_(offset_ns) {}

SlidingCounterModel::View SlidingCounterModel::At(int64_t now) const {
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

bool SlidingCounterModel::Fits(int64_t now, int64_t cost) const {
  const View v = At(now);
  return static_cast<i128>(v.prev) * (P_ - v.e) +
             (static_cast<i128>(v.cur) + cost) * P_ <=
         static_cast<i128>(L_) * P_;
}

void SlidingCounterModel::Charge(int64_t now, int64_t cost) {
  Check(Fits(now, cost), "sliding counter charge that does not fit");
  const View v = At(now);
  has_window_ = true;
  start_ = v.start;
  prev_ = v.prev;
  cur_ = v.cur + cost;
}

int64_t SlidingCounterModel::Remaining(int64_t now) const {
  const View v = At(now);
  const i128 room = static_cast<i128>(L_) * P_ -
                    static_cast<i128>(v.prev) * (P_ - v.e) -
                    static_cast<i128>(v.cur) * P_;
  return room <= 0 ? 0 : Narrow(FloorDiv(room, P_));
}

int64_t SlidingCounterModel::ResetAfter(int64_t now) const {
  const View v = At(now);
  // cur weighs on the estimate until the end of the next window; prev
  // until the end of this one.
  if (v.cur > 0) return v.start + 2 * P_ - now;
  if (v.prev > 0) return v.start + P_ - now;
  return 0;
}

int64_t SlidingCounterModel::RetryAfter(int64_t now, int64_t cost) const {
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

// ------------------------------------------------------ Sliding window log

SlidingLogModel::SlidingLogModel(int64_t limit, int64_t period_ns,
                                 int64_t granule_ns, int64_t offset_ns)
    : L_(limit), P_(period_ns), G_(granule_ns), O_(offset_ns) {}

void SlidingLogModel::Touch(int64_t now) {
  latest_ = EvalTime(now);
  has_latest_ = true;
}

int64_t SlidingLogModel::Sum(int64_t now) const {
  int64_t sum = 0;
  for (const Grant& g : grants_) {
    if (Counts(g, now)) sum += g.cost;
  }
  return sum;
}

bool SlidingLogModel::Fits(int64_t now, int64_t cost) const {
  return static_cast<i128>(Sum(now)) + cost <= L_;
}

void SlidingLogModel::Charge(int64_t now, int64_t cost) {
  // The grant happens when the log evaluated the call (at H if the caller's
  // clock is behind).
  const int64_t at = EvalTime(now);
  int64_t t = G_ > 0 ? WindowStart(at, G_, O_) : at;
  for (const Grant& g : grants_) {
    if (Counts(g, now)) t = std::max(t, g.time);
  }
  grants_.push_back(Grant{t, cost});
}

int64_t SlidingLogModel::Remaining(int64_t now) const { return L_ - Sum(now); }

int64_t SlidingLogModel::ResetAfter(int64_t now) const {
  bool any = false;
  int64_t newest = 0;
  for (const Grant& g : grants_) {
    if (!Counts(g, now)) continue;
    newest = any ? std::max(newest, g.time) : g.time;
    any = true;
  }
  return any ? newest + P_ - now : 0;
}

int64_t SlidingLogModel::RetryAfter(int64_t now, int64_t cost) const {
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
