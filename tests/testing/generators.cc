#include "testing/generators.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "testing/reference_model.h"

namespace tokenlease::testing {

using reference::i128;
using reference::WindowStart;

namespace {

constexpr int kRateCount = sizeof(kRates) / sizeof(kRates[0]);
// The sliding counter counts at most 2^32 - 1 per window.
constexpr int64_t kMaxCounterLimit = (int64_t{1} << 32) - 1;

int64_t RandomOffset(Rng& rng, int64_t period_ns) {
  switch (rng.Uniform(0, 4)) {
    case 0:
    case 1:
      return 0;
    case 2:
      return -8 * 3600 * kSecond;  // calendar days in UTC+8
    case 3:
      return rng.Uniform(-period_ns, period_ns);
    default:
      return rng.Uniform(-3 * period_ns, 3 * period_ns);  // beyond one period
  }
}

}  // namespace

int64_t Rng::Uniform(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(gen_() % span);
}

Band RandomBand(BandKind kind, const Rate& rate, Rng& rng) {
  Band b;
  b.limit = rate.limit;
  b.period = absl::Nanoseconds(rate.period_ns);
  switch (kind) {
    case BandKind::kSmoothBucket:
    case BandKind::kStepwise:
      b.algorithm = Algorithm::kTokenBucket;
      b.refill =
          kind == BandKind::kStepwise ? Refill::kStepwise : Refill::kSmooth;
      b.burst = rate.burst;
      break;
    case BandKind::kGcra:
      b.algorithm = Algorithm::kGcra;
      b.burst = rate.burst;
      break;
    case BandKind::kFixedAligned:
    case BandKind::kFixedFirstRequest:
      b.algorithm = Algorithm::kFixedWindow;
      b.anchor = kind == BandKind::kFixedFirstRequest
                     ? WindowAnchor::kFirstRequest
                     : WindowAnchor::kAligned;
      b.window_offset = absl::Nanoseconds(RandomOffset(rng, rate.period_ns));
      break;
    case BandKind::kCounter:
      b.algorithm = Algorithm::kSlidingWindowCounter;
      b.limit = std::min(rate.limit, kMaxCounterLimit);
      b.window_offset = absl::Nanoseconds(RandomOffset(rng, rate.period_ns));
      break;
    case BandKind::kLogExact:
    case BandKind::kLogGranular:
    case BandKind::kLogBounded:
      b.algorithm = Algorithm::kSlidingWindowLog;
      // The log is exact while limit <= max_log_entries (documented), and
      // a granular log uses one entry per granule: room for every grant of
      // a sequence (entries <= calls).
      b.max_log_entries = 1 << 20;
      if (kind == BandKind::kLogExact) {
        b.limit = std::min<int64_t>(b.limit, b.max_log_entries);
      }
      if (kind == BandKind::kLogGranular) {
        const int64_t divisors[] = {1, 2, 7, 1000, rate.period_ns};
        const int64_t g =
            std::max<int64_t>(1, rate.period_ns / divisors[rng.Uniform(0, 4)]);
        b.log_granularity = absl::Nanoseconds(g);
        b.window_offset = absl::Nanoseconds(RandomOffset(rng, rate.period_ns));
      }
      if (kind == BandKind::kLogBounded) {
        const int32_t sizes[] = {2, 3, 4, 8, 0 /* 256 */};
        b.max_log_entries = sizes[rng.Uniform(0, 4)];
      }
      break;
  }
  return b;
}

LimitSpec RandomSpec(BandKind kind, uint64_t seed) {
  Rng rng(seed);
  LimitSpec spec;
  spec.bands.push_back(
      RandomBand(kind, kRates[rng.Uniform(0, kRateCount - 1)], rng));
  return spec;
}

LimitSpec RandomComposite(uint64_t seed) {
  Rng rng(seed);
  const auto rate = [&] { return kRates[rng.Uniform(0, kRateCount - 1)]; };
  LimitSpec spec;
  switch (seed % 4) {
    case 0:
      spec.bands.push_back(RandomBand(BandKind::kFixedAligned, rate(), rng));
      spec.bands.push_back(RandomBand(BandKind::kLogExact, rate(), rng));
      break;
    case 1:
      spec.bands.push_back(RandomBand(BandKind::kSmoothBucket, rate(), rng));
      spec.bands.push_back(RandomBand(BandKind::kFixedAligned, rate(), rng));
      break;
    default: {
      const std::vector<BandKind> kinds = {
          BandKind::kSmoothBucket,      BandKind::kGcra,
          BandKind::kStepwise,          BandKind::kFixedAligned,
          BandKind::kFixedFirstRequest, BandKind::kCounter,
          BandKind::kLogExact,          BandKind::kLogGranular};
      const int n = rng.Percent(75) ? 2 : static_cast<int>(rng.Uniform(3, 4));
      for (int i = 0; i < n; ++i) {
        spec.bands.push_back(RandomBand(rng.Pick(kinds), rate(), rng));
      }
    }
  }
  return spec;
}

std::string SpecString(const LimitSpec& spec) {
  std::string out = DescribeSpec(spec);
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    const Band& b = spec.bands[i];
    if (b.algorithm == Algorithm::kFixedWindow &&
        b.anchor == WindowAnchor::kFirstRequest) {
      absl::StrAppend(&out, " [bands[", i, "].anchor=first_request]");
    }
    if (b.algorithm == Algorithm::kSlidingWindowLog) {
      absl::StrAppend(&out, " [bands[", i,
                      "].max_log_entries=", b.max_log_entries, "]");
    }
    if (b.window_offset != absl::ZeroDuration()) {
      absl::StrAppend(&out, " [bands[", i, "].window_offset_ns=",
                      absl::ToInt64Nanoseconds(b.window_offset), "]");
    }
  }
  return out;
}

CallGenerator::CallGenerator(const LimitSpec& spec, uint64_t seed,
                             bool allow_back)
    : rng_(seed), allow_back_(allow_back) {
  for (const Band& b : spec.bands) {
    Shape s;
    s.P = absl::ToInt64Nanoseconds(b.period);
    s.T = std::max<int64_t>(1, s.P / b.limit);
    s.O = absl::ToInt64Nanoseconds(b.window_offset);
    const bool bucket = b.algorithm == Algorithm::kTokenBucket ||
                        b.algorithm == Algorithm::kGcra;
    s.cap = bucket && b.burst > 0 ? b.burst : b.limit;
    shapes_.push_back(s);
  }
}

Call CallGenerator::Next(const Decision* last) {
  const Shape& s = rng_.Pick(shapes_);
  Call c;
  if (!started_) {
    c.now = FirstTime(s);
    first_ = c.now;
    // A key is created by its first call even if that call charges
    // nothing (cost 0, or too big); then the clock may step back.
    c.cost = rng_.Percent(25) ? 0 : NextCost(rng_.Pick(shapes_));
  } else {
    c.now = calls_ == 1 && allow_back_ && rng_.Percent(25)
                ? prev_.now - rng_.Uniform(1, rng_.Percent(50) ? 1000 : s.P)
                : NextTime(s, last);
    c.cost = NextCost(rng_.Pick(shapes_));
  }
  started_ = true;
  ++calls_;
  prev_ = c;
  return c;
}

int64_t CallGenerator::FirstTime(const Shape& s) {
  switch (rng_.Uniform(0, 2)) {
    case 0:
      return kEpoch2026;
    case 1:
      return kEpoch2026 + rng_.Uniform(0, 7 * kDay);
    default:  // just before a window boundary
      return WindowStart(kEpoch2026 + rng_.Uniform(0, 7 * kDay), s.P, s.O) +
             s.P - rng_.Uniform(0, 3);
  }
}

int64_t CallGenerator::NextTime(const Shape& s, const Decision* last) {
  const int64_t now = prev_.now;
  const int roll = static_cast<int>(rng_.Uniform(0, 99));
  if (roll < 8) return now;
  if (roll < 18) return now + rng_.Uniform(1, 10);
  if (roll < 40) return now + rng_.Uniform(0, 2 * s.T);
  if (roll < 47) {  // a random fraction of the whole bucket's refill time
    const i128 span = std::min<i128>(static_cast<i128>(s.T) * s.cap, 4 * s.P);
    return now + rng_.Uniform(0, static_cast<int64_t>(span));
  }
  if (roll < 57) return now + rng_.Uniform(s.P - s.P / 10, s.P + s.P / 10);
  if (roll < 61) return now + s.P + rng_.Uniform(-1, 1);
  if (roll < 65) return now + rng_.Uniform(2 * s.P, 5 * s.P);
  if (roll < 72) {
    if (!allow_back_) return now + rng_.Uniform(0, s.T);
    const int kind = static_cast<int>(rng_.Uniform(0, 19));
    if (kind < 10) return now - rng_.Uniform(1, 1000);
    if (kind < 19) {
      return now -
             rng_.Uniform(1, std::max<int64_t>(1, std::min(s.T, s.P / 4)));
    }
    // Rarely a big step (an NTP step): up to two periods or 10 s.
    return now - rng_.Uniform(1, std::max(2 * s.P, 10 * kSecond));
  }
  if (roll < 87 && last != nullptr && !last->allowed &&
      last->retry_after_ns > 0) {
    const int64_t r = last->retry_after_ns;
    return now + (rng_.Percent(50) ? r : r - 1);
  }
  if (roll < 94) {  // aligned window boundary
    return WindowStart(now, s.P, s.O) + s.P + rng_.Uniform(-1, 1);
  }
  // boundary of a period counted from the first call (stepwise refills,
  // first-request windows)
  const int64_t k = (now - first_) / s.P + 1;
  return std::max(now, first_ + k * s.P + rng_.Uniform(-1, 1));
}

int64_t CallGenerator::NextCost(const Shape& s) {
  const int roll = static_cast<int>(rng_.Uniform(0, 99));
  if (roll < 45) return 1;
  if (roll < 55) return 0;
  if (roll < 70) return rng_.Uniform(1, std::min<int64_t>(s.cap, 5));
  if (roll < 80) return rng_.Uniform(1, s.cap);
  if (roll < 85) return s.cap;
  if (roll < 90) return s.cap + 1;
  if (roll < 95) return rng_.Uniform(s.cap / 2, s.cap);
  if (roll < 99) return rng_.Uniform(2, 3);
  return -1;  // invalid: denied before the key is even looked up
}

std::vector<ScriptCall> RandomScriptCalls(const LimitSpec& spec, uint64_t seed,
                                          int count) {
  Rng rng(seed);
  const Band& b0 = spec.bands[0];
  const int64_t period_us = absl::ToInt64Microseconds(b0.period);
  const int64_t cap = std::max<int64_t>(b0.burst, b0.limit);
  const bool buckets =
      std::all_of(spec.bands.begin(), spec.bands.end(), [](const Band& b) {
        return b.algorithm == Algorithm::kTokenBucket ||
               b.algorithm == Algorithm::kGcra;
      });
  const bool borrowing = buckets && spec.max_borrow > absl::ZeroDuration();
  std::vector<ScriptCall> calls;
  int64_t t = rng.Uniform(0, period_us - 1);
  for (int i = 0; i < count; ++i) {
    switch (rng.Uniform(0, 3)) {
      case 0:
        break;  // same instant
      case 1:
        t += rng.Uniform(1, 999);
        break;
      case 2:
        t += rng.Uniform(1, period_us / cap + 1);
        break;
      default:
        t += rng.Uniform(0, 2 * period_us - 1);
        break;
    }
    int64_t cost = rng.Uniform(0, 2);
    if (rng.Percent(10)) cost = rng.Uniform(0, cap + 1);
    // The first call charges: a key the local engine creates without a
    // charge anchors a stepwise bucket where the script (which stores
    // nothing for a full bucket) does not; both are equivalent states.
    if (i == 0) cost = 1;
    ScriptCall c{t, cost};
    if (borrowing && rng.Percent(30)) {
      c.max_wait_us = rng.Uniform(1, 2 * period_us - 1);
    }
    calls.push_back(c);
  }
  return calls;
}

}  // namespace tokenlease::testing
