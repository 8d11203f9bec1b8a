#include "testing/specs.h"

namespace tokenlease::testing {

std::vector<NamedFactory> SingleBandFactories() {
  return {
      {"token_bucket_smooth",
       [](int64_t l, absl::Duration p) {
         return LimitSpec::TokenBucket(l, p);
       }},
      {"token_bucket_stepwise",
       [](int64_t l, absl::Duration p) {
         return LimitSpec::TokenBucket(l, p, 0, Refill::kStepwise);
       }},
      {"gcra",
       [](int64_t l, absl::Duration p) { return LimitSpec::Gcra(l, p); }},
      {"fixed_window",
       [](int64_t l, absl::Duration p) {
         return LimitSpec::FixedWindow(l, p);
       }},
      {"sliding_counter",
       [](int64_t l, absl::Duration p) {
         return LimitSpec::SlidingWindowCounter(l, p);
       }},
      {"sliding_log",
       [](int64_t l, absl::Duration p) {
         return LimitSpec::SlidingWindowLog(l, p);
       }},
  };
}

std::vector<NamedSpec> EverySingleBand(int64_t limit, absl::Duration period) {
  std::vector<NamedSpec> out;
  for (const NamedFactory& f : SingleBandFactories()) {
    out.push_back({f.name, f.make(limit, period)});
  }
  return out;
}

std::vector<NamedSpec> EveryAlgorithm(int64_t limit, absl::Duration period) {
  std::vector<NamedSpec> out = EverySingleBand(limit, period);
  out.push_back({"composite", Composite({LimitSpec::FixedWindow(limit, period),
                                         LimitSpec::SlidingWindowLog(
                                             limit + limit / 2, 2 * period)})});
  return out;
}

LimitSpec Composite(const std::vector<LimitSpec>& parts) {
  LimitSpec spec;
  if (!parts.empty()) spec.max_borrow = parts[0].max_borrow;
  for (const LimitSpec& part : parts) {
    spec.bands.insert(spec.bands.end(), part.bands.begin(), part.bands.end());
  }
  return spec;
}

LimitSpec DailyAndWeeklyQuota() {
  Band daily;
  daily.algorithm = Algorithm::kFixedWindow;
  daily.limit = 1;
  daily.period = absl::Hours(24);
  daily.window_offset = absl::Hours(-8);  // days start at 16:00 UTC
  Band weekly;
  weekly.algorithm = Algorithm::kSlidingWindowLog;
  weekly.limit = 3;
  weekly.period = absl::Hours(24 * 7);
  weekly.log_granularity = absl::Hours(24);  // score = start of the day
  weekly.window_offset = absl::Hours(-8);
  LimitSpec spec;
  spec.bands = {daily, weekly};
  return spec;
}

void PrintTo(const NamedSpec& s, std::ostream* os) { *os << s.name; }

void PrintTo(const NamedFactory& f, std::ostream* os) { *os << f.name; }

LimitSpec AnchoredAt(LimitSpec spec, absl::Time start) {
  const absl::Duration offset =
      absl::Microseconds(absl::ToInt64Microseconds(start - absl::UnixEpoch()));
  for (Band& b : spec.bands) b.window_offset = offset;
  return spec;
}

}  // namespace tokenlease::testing
