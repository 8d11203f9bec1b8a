#include "tokenlease/spec.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "local/spec_facts.h"

namespace tokenlease {
namespace {

constexpr int64_t kMaxLimit = int64_t{1} << 40;
constexpr int64_t kMaxSlidingCounterLimit = (int64_t{1} << 32) - 1;
constexpr int64_t kScaledRange = int64_t{1} << 62;
const absl::Duration kMinPeriod = absl::Microseconds(1);
const absl::Duration kMaxPeriod = absl::Hours(24 * 366 * 5);
const absl::Duration kMaxBorrow = absl::Hours(24 * 366);

bool WholeNanoseconds(absl::Duration d) {
  return d == absl::Nanoseconds(absl::ToInt64Nanoseconds(d));
}

absl::Status Invalid(size_t i, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("bands[", i, "].", what));
}

absl::Status ValidateBand(const Band& b, size_t i) {
  if (b.limit < 1 || b.limit > kMaxLimit) {
    return Invalid(i, absl::StrCat("limit is ", b.limit,
                                   "; it must be between 1 and ", kMaxLimit));
  }
  if (b.period < kMinPeriod || b.period > kMaxPeriod ||
      !WholeNanoseconds(b.period)) {
    return Invalid(i, absl::StrCat("period is ", absl::FormatDuration(b.period),
                                   "; it must be a whole number of "
                                   "nanoseconds between 1us and 5 years"));
  }
  if (b.burst < 0 || b.burst > kMaxLimit) {
    return Invalid(
        i, absl::StrCat("burst is ", b.burst,
                        "; it must be between 0 (= limit) and ", kMaxLimit));
  }
  if (internal::IsBucket(b)) {
    const int64_t period_ns = absl::ToInt64Nanoseconds(b.period);
    const int64_t p = period_ns / std::gcd(period_ns, b.limit);
    const int64_t burst = internal::EffectiveBurst(b);
    if (static_cast<__int128>(burst) * p >= kScaledRange) {
      return Invalid(
          i, absl::StrCat("burst (", burst, ") times the emission interval (",
                          absl::FormatDuration(b.period), " / ", b.limit,
                          ") is beyond the exact-arithmetic range (2^62 units "
                          "of 1/limit ns); lower the burst or use a round "
                          "limit per period (e.g. a multiple of the period's "
                          "seconds)"));
    }
  }
  if (b.algorithm == Algorithm::kSlidingWindowCounter &&
      b.limit > kMaxSlidingCounterLimit) {
    return Invalid(i, absl::StrCat("limit is ", b.limit,
                                   "; a sliding_counter band counts up to ",
                                   kMaxSlidingCounterLimit, " per window"));
  }
  if (!WholeNanoseconds(b.window_offset)) {
    return Invalid(i, "window_offset must be a whole number of nanoseconds");
  }
  if (b.log_granularity < absl::ZeroDuration() ||
      b.log_granularity > b.period || !WholeNanoseconds(b.log_granularity)) {
    return Invalid(i,
                   absl::StrCat("log_granularity is ",
                                absl::FormatDuration(b.log_granularity),
                                "; it must be 0 (exact) or a whole number of "
                                "nanoseconds no longer than the period"));
  }
  if (b.max_log_entries != 0 &&
      (b.max_log_entries < 2 || b.max_log_entries > (1 << 20))) {
    return Invalid(
        i, absl::StrCat("max_log_entries is ", b.max_log_entries,
                        "; it must be 0 (= 256) or between 2 and ", 1 << 20));
  }
  return absl::OkStatus();
}

LimitSpec OneBand(Band b) {
  LimitSpec s;
  s.bands.push_back(b);
  return s;
}

// A band of `algorithm` with `limit` per `period`, every other field at its
// default (the convenience constructors set what their algorithm takes).
Band MakeBand(Algorithm algorithm, int64_t limit, absl::Duration period) {
  Band b;
  b.algorithm = algorithm;
  b.limit = limit;
  b.period = period;
  return b;
}

}  // namespace

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kTokenBucket:
      return "token_bucket";
    case Algorithm::kGcra:
      return "gcra";
    case Algorithm::kFixedWindow:
      return "fixed_window";
    case Algorithm::kSlidingWindowCounter:
      return "sliding_counter";
    case Algorithm::kSlidingWindowLog:
      return "sliding_log";
  }
  return "unknown";
}

absl::Status ValidateSpec(const LimitSpec& spec) {
  if (spec.bands.empty() || spec.bands.size() > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("LimitSpec.bands has ", spec.bands.size(),
                     " bands; a limit has between 1 and 4"));
  }
  if (spec.max_borrow < absl::ZeroDuration() || spec.max_borrow > kMaxBorrow ||
      !WholeNanoseconds(spec.max_borrow)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LimitSpec.max_borrow is ", absl::FormatDuration(spec.max_borrow),
        "; it must be a whole number of nanoseconds between 0 and 366 days"));
  }
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    if (absl::Status s = ValidateBand(spec.bands[i], i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string DescribeSpec(const LimitSpec& spec) {
  std::string out;
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    const Band& b = spec.bands[i];
    if (i > 0) absl::StrAppend(&out, " + ");
    absl::StrAppend(&out, AlgorithmName(b.algorithm), "(limit=", b.limit, "/",
                    absl::FormatDuration(b.period));
    if (internal::IsBucket(b)) {
      absl::StrAppend(&out, ", burst=", internal::EffectiveBurst(b));
    }
    if (b.algorithm == Algorithm::kTokenBucket) {
      absl::StrAppend(&out,
                      b.refill == Refill::kSmooth ? ", smooth" : ", stepwise");
    }
    if (b.window_offset != absl::ZeroDuration()) {
      absl::StrAppend(&out, ", offset=", absl::FormatDuration(b.window_offset));
    }
    if (b.log_granularity != absl::ZeroDuration()) {
      absl::StrAppend(&out,
                      ", granule=", absl::FormatDuration(b.log_granularity));
    }
    absl::StrAppend(&out, ")");
  }
  if (spec.max_borrow > absl::ZeroDuration()) {
    absl::StrAppend(&out, " borrow<=", absl::FormatDuration(spec.max_borrow));
  }
  return out;
}

LimitSpec LimitSpec::TokenBucket(int64_t limit, absl::Duration period,
                                 int64_t burst, Refill refill) {
  Band b = MakeBand(Algorithm::kTokenBucket, limit, period);
  b.burst = burst;
  b.refill = refill;
  return OneBand(b);
}

LimitSpec LimitSpec::Gcra(int64_t limit, absl::Duration period, int64_t burst) {
  Band b = MakeBand(Algorithm::kGcra, limit, period);
  b.burst = burst;
  return OneBand(b);
}

LimitSpec LimitSpec::FixedWindow(int64_t limit, absl::Duration period,
                                 absl::Duration window_offset) {
  Band b = MakeBand(Algorithm::kFixedWindow, limit, period);
  b.window_offset = window_offset;
  return OneBand(b);
}

LimitSpec LimitSpec::SlidingWindowCounter(int64_t limit,
                                          absl::Duration period) {
  return OneBand(MakeBand(Algorithm::kSlidingWindowCounter, limit, period));
}

LimitSpec LimitSpec::SlidingWindowLog(int64_t limit, absl::Duration period) {
  return OneBand(MakeBand(Algorithm::kSlidingWindowLog, limit, period));
}

}  // namespace tokenlease
