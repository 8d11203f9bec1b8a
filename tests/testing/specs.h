// Spec builders shared by the tests, and the tables that TEST_P suites
// instantiate over (one test per algorithm, named after it).
#ifndef TOKENLEASE_TESTS_TESTING_SPECS_H_
#define TOKENLEASE_TESTS_TESTING_SPECS_H_

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tokenlease/spec.h"

namespace tokenlease::testing {

// A spec with a test-friendly name (for SCOPED_TRACE and TEST_P names).
struct NamedSpec {
  std::string name;
  LimitSpec spec;
};

// Builds one algorithm's spec for `limit` per `period`.
struct NamedFactory {
  std::string name;
  LimitSpec (*make)(int64_t limit, absl::Duration period);
};

// One single-band spec of every algorithm (token bucket smooth and
// stepwise, GCRA, fixed window, sliding counter, sliding log) with `limit`
// per `period`, plus a composite of a fixed window of `limit` per `period`
// and a sliding log of 1.5 x limit per 2 x period.
std::vector<NamedSpec> EveryAlgorithm(int64_t limit, absl::Duration period);

// The single-band specs of EveryAlgorithm (no composite).
std::vector<NamedSpec> EverySingleBand(int64_t limit, absl::Duration period);

// EverySingleBand as factories, for suites that need several rates.
std::vector<NamedFactory> SingleBandFactories();

// A spec with the bands of every part, in order (max_borrow of parts[0]).
LimitSpec Composite(const std::vector<LimitSpec>& parts);

// 1 per calendar day in UTC+8 (a fixed window of 24 h, offset -8 h) and 3
// per rolling 7 calendar days (a sliding log with one-day granules, same
// offset), in one limit: both checked, both charged or neither.
LimitSpec DailyAndWeeklyQuota();

// `spec` with every band's aligned windows (and log granules) starting at
// `start`, rounded down to a whole microsecond: a "relative window" that
// makes a test independent of the time of day on a real clock (an aligned
// window of an hour otherwise ends at the next full hour, whenever the
// test runs). Bands without windows are unchanged.
LimitSpec AnchoredAt(LimitSpec spec, absl::Time start);

// Prints a parameter as its name (gtest's messages and test lists).
void PrintTo(const NamedSpec& s, std::ostream* os);
void PrintTo(const NamedFactory& f, std::ostream* os);

// Names TEST_P instances after a parameter's `name` member:
// INSTANTIATE_TEST_SUITE_P(All, FooTest, ValuesIn(table), ParamName()).
struct ParamName {
  template <typename T>
  std::string operator()(const ::testing::TestParamInfo<T>& info) const {
    return info.param.name;
  }
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_SPECS_H_
