#include "cli/spec_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;

struct SpecCase {
  std::string name;
  std::function<void(SpecFlags*)> set;
  // DescribeSpec of the result, or "error: <part of the message>".
  std::string want;
};

// The case's name in test listings (not its bytes).
void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.name; }

class SpecFlagsTest : public ::testing::TestWithParam<SpecCase> {};

TEST_P(SpecFlagsTest, MakesTheLimitOrSaysWhatIsWrong) {
  SpecFlags f;
  GetParam().set(&f);
  absl::StatusOr<LimitSpec> spec = SpecFromFlags(f);
  const std::string& want = GetParam().want;
  if (want.rfind("error: ", 0) == 0) {
    ASSERT_FALSE(spec.ok()) << DescribeSpec(*spec);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()),
                HasSubstr(want.substr(7)));
  } else {
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(DescribeSpec(*spec), want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SpecFlagsTest,
    ::testing::Values(
        SpecCase{"Defaults", [](SpecFlags* f) { f->limit = "10"; },
                 "token_bucket(limit=10/1s, burst=10, smooth)"},
        SpecCase{"GcraWithBurst",
                 [](SpecFlags* f) {
                   f->algorithm = "gcra";
                   f->limit = "30";
                   f->period = "1m";
                   f->burst = "16";
                 },
                 "gcra(limit=30/1m, burst=16)"},
        SpecCase{"Stepwise",
                 [](SpecFlags* f) {
                   f->limit = "5";
                   f->refill = "stepwise";
                 },
                 "token_bucket(limit=5/1s, burst=5, stepwise)"},
        SpecCase{"DailyWindowInUtcPlus8",
                 [](SpecFlags* f) {
                   f->algorithm = "fixed_window";
                   f->limit = "1";
                   f->period = "24h";
                   f->window_offset = "-8h";
                 },
                 "fixed_window(limit=1/24h, offset=-8h)"},
        SpecCase{"TwoBandsWithSharedOffset",
                 [](SpecFlags* f) {
                   f->algorithm = "fixed_window,sliding_log";
                   f->limit = "1,3";
                   f->period = "24h,168h";
                   f->window_offset = "-8h";
                   f->log_granularity = "0,24h";
                 },
                 "fixed_window(limit=1/24h, offset=-8h) + "
                 "sliding_log(limit=3/168h, offset=-8h, granule=24h)"},
        SpecCase{"SpacesInAList",
                 [](SpecFlags* f) {
                   f->limit = "10, 1000";
                   f->period = "1s, 1h";
                 },
                 "token_bucket(limit=10/1s, burst=10, smooth) + "
                 "token_bucket(limit=1000/1h, burst=1000, smooth)"},
        SpecCase{"NoLimit", [](SpecFlags*) {}, "error: --limit is missing"},
        SpecCase{"ZeroLimit", [](SpecFlags* f) { f->limit = "0"; },
                 "error: bands[0].limit is 0"},
        SpecCase{"NotANumber", [](SpecFlags* f) { f->limit = "ten"; },
                 "error: --limit has the value 'ten'; it must be an integer"},
        SpecCase{"UnknownAlgorithm",
                 [](SpecFlags* f) {
                   f->limit = "1";
                   f->algorithm = "leaky_bucket";
                 },
                 "error: --algorithm has the value 'leaky_bucket'"},
        SpecCase{"BadDuration",
                 [](SpecFlags* f) {
                   f->limit = "1";
                   f->period = "1 day";
                 },
                 "error: --period has the value '1 day'"},
        SpecCase{"NotWholeMicroseconds",
                 [](SpecFlags* f) {
                   f->limit = "1";
                   f->period = "1500ns";
                 },
                 "error: whole number of microseconds"},
        SpecCase{"ListsOfDifferentLengths",
                 [](SpecFlags* f) {
                   f->limit = "1,2";
                   f->period = "1s,2s,3s";
                 },
                 "error: --limit has 2 values but --period has 3"},
        SpecCase{"FiveBands", [](SpecFlags* f) { f->limit = "1,2,3,4,5"; },
                 "error: --limit has 5 values; a limit has at most 4 bands"},
        SpecCase{"BurstOnAWindow",
                 [](SpecFlags* f) {
                   f->algorithm = "fixed_window";
                   f->limit = "5";
                   f->burst = "10";
                 },
                 "error: --burst applies to token_bucket and gcra bands only"},
        SpecCase{"StepwiseGcra",
                 [](SpecFlags* f) {
                   f->algorithm = "gcra";
                   f->limit = "5";
                   f->refill = "stepwise";
                 },
                 "error: --refill applies to token_bucket bands only"},
        SpecCase{"AnchorOnACounter",
                 [](SpecFlags* f) {
                   f->algorithm = "sliding_counter";
                   f->limit = "5";
                   f->anchor = "first_request";
                 },
                 "error: --anchor applies to fixed_window bands only"},
        SpecCase{"GranuleForTheWrongBand",
                 [](SpecFlags* f) {
                   f->algorithm = "fixed_window,sliding_log";
                   f->limit = "1,3";
                   f->log_granularity = "1s,0";
                 },
                 "error: band 0 is fixed_window"},
        SpecCase{"BeyondTheScriptsExactRange",
                 [](SpecFlags* f) {
                   f->limit = "7";
                   f->period = "1h";
                   f->burst = "1000000";
                 },
                 "error: below 2^51"}),
    [](const ::testing::TestParamInfo<SpecCase>& i) { return i.param.name; });

TEST(SmallestCapacityTest, IsTheLeastBurstOrWindowLimit) {
  SpecFlags f;
  f.algorithm = "token_bucket,fixed_window";
  f.limit = "10,3";
  f.period = "1s,1h";
  f.burst = "20,0";
  absl::StatusOr<LimitSpec> spec = SpecFromFlags(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(SmallestCapacity(*spec), 3);
}

TEST(AnySpecFlagGivenTest, SeesEachSpecFlag) {
  SpecFlags f;
  FlagTable t("");
  AddSpecFlags(&f, &t);
  EXPECT_FALSE(AnySpecFlagGiven(t));
  ASSERT_TRUE(t.Parse({"--refill=stepwise"}).ok());
  EXPECT_TRUE(AnySpecFlagGiven(t));
}

}  // namespace
}  // namespace tokenlease::cli
