// The sizing rule (a table of CPU counts) and the scenario defaults.
#include "demo/sizing.h"

#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "demo/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::HasSubstr;

struct SizingCase {
  int cpus;
  int instances;  // --instances, 0: chosen
  LoadPlan want;
};

void PrintTo(const SizingCase& c, std::ostream* os) {
  *os << c.cpus << " CPUs";
  if (c.instances > 0) *os << ", --instances=" << c.instances;
}

std::string CaseName(const ::testing::TestParamInfo<SizingCase>& info) {
  return absl::StrCat("Cpus", info.param.cpus,
                      info.param.instances > 0
                          ? absl::StrCat("Instances", info.param.instances)
                          : "");
}

class SizingTest : public ::testing::TestWithParam<SizingCase> {};

// One CPU's share stays with redis-server and the parent: the load gets the
// others, over 2 to 4 instances, one load thread per spare CPU once there
// are enough of them, and never spins.
TEST_P(SizingTest, PlanForTheCpus) {
  const SizingCase& c = GetParam();
  const LoadPlan got = PlanLoad(c.cpus, c.instances);
  EXPECT_EQ(got.instances, c.want.instances) << c.cpus << " CPUs";
  EXPECT_EQ(got.threads, c.want.threads) << c.cpus << " CPUs";
  EXPECT_EQ(got.pacing, Pacing::kTick);
  // Never more load threads than spare CPUs, but for the 2-instance floor.
  if (c.cpus > 2 && c.instances == 0) {
    EXPECT_LE(got.instances * got.threads, c.cpus - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cpus, SizingTest,
    ::testing::Values(SizingCase{0, 0, {2, 1}},  // unknown: as 1
                      SizingCase{1, 0, {2, 1}}, SizingCase{2, 0, {2, 1}},
                      SizingCase{3, 0, {2, 1}}, SizingCase{4, 0, {3, 1}},
                      SizingCase{5, 0, {4, 1}}, SizingCase{8, 0, {4, 1}},
                      SizingCase{9, 0, {4, 2}}, SizingCase{16, 0, {4, 3}},
                      SizingCase{64, 0, {4, 15}},
                      SizingCase{1024, 0, {4, kMaxThreads}},
                      // --instances given: the threads spread over them.
                      SizingCase{2, 8, {8, 1}}, SizingCase{16, 2, {2, 7}},
                      SizingCase{16, 64, {64, 1}}),
    CaseName);

TEST(SizingTest, UsableCpusIsAtLeastOne) { EXPECT_GE(UsableCpus(), 1); }

// A direct decision blocks its thread for a round trip: more threads, all
// asleep while they wait.
TEST(SizingTest, DirectModeKeepsSeveralCallsInFlight) {
  EXPECT_EQ(PlanLoad(2, 0, Mode::kDirect), (LoadPlan{2, kDirectThreads}));
  EXPECT_EQ(PlanLoad(64, 0, Mode::kDirect), (LoadPlan{4, 15}));
  EXPECT_EQ(PlanLoad(2, 0, Mode::kLocal), (LoadPlan{2, 1}));
}

TEST(SizingTest, ScenarioDefaults) {
  DemoOptions hot = ResolveOptions(DemoOptions(), /*cpus=*/2);
  EXPECT_EQ(hot.limit, kHotLimit);
  EXPECT_EQ(hot.burst, kHotLimit / kHotBurstDivisor);
  EXPECT_EQ(hot.offered, kOverload * kHotLimit);  // 5 x on the one key
  EXPECT_EQ(hot.outage_at, 8);
  EXPECT_EQ(hot.outage_seconds, 4);

  DemoOptions zipf_in;
  zipf_in.keys = KeyDist::kZipf;
  const DemoOptions zipf = ResolveOptions(zipf_in, /*cpus=*/2);
  EXPECT_EQ(zipf.limit, kZipfLimit);
  EXPECT_EQ(zipf.burst, kZipfLimit);
  // The hottest key is offered 5 x its limit.
  EXPECT_NEAR(ZipfP0(zipf) * zipf.offered, kOverload * kZipfLimit, 1e-6);
}

TEST(SizingTest, GivenValuesAreKeptAndResolvingTwiceChangesNothing) {
  DemoOptions o;
  o.instances = 3;
  o.limit = 700;
  o.burst = 7;
  o.offered = 900;
  o.seconds = 10;
  o.outage_at = 2;
  const DemoOptions r = ResolveOptions(o, /*cpus=*/16);
  EXPECT_EQ(r.instances, 3);
  EXPECT_EQ(r.threads, 5);  // 15 spare CPUs over 3 instances
  EXPECT_EQ(r.limit, 700);
  EXPECT_EQ(r.burst, 7);
  EXPECT_EQ(r.offered, 900);
  EXPECT_EQ(r.outage_at, 2);
  EXPECT_EQ(r.outage_seconds, 2);  // 20% of 10 s
  const DemoOptions again = ResolveOptions(r, /*cpus=*/1);
  EXPECT_EQ(again.threads, 5);
  EXPECT_EQ(again.outage_seconds, 2);
  // A small limit's burst still gives every instance a token of it.
  DemoOptions tiny;
  tiny.limit = 8;
  tiny.instances = 4;
  EXPECT_EQ(ResolveOptions(tiny, 2).burst, 4);
}

TEST(SizingTest, TheBannerSaysWhatWasChosenAndWhy) {
  const DemoOptions r = ResolveOptions(DemoOptions(), /*cpus=*/2);
  const std::string s = DescribeChoices(DemoOptions(), r, 2);
  EXPECT_THAT(s, HasSubstr("load: 2 instance processes x 1 load thread; "
                           "chosen for the 2 CPUs this process may use"));
  EXPECT_THAT(s, HasSubstr("pacing: tick; each load thread wakes every "
                           "1.0ms"));
  EXPECT_THAT(s, HasSubstr("offered: 50,000/s (chosen) = 5.0 x the limit on "
                           "the hot key"));
  DemoOptions given;
  given.instances = 4;
  given.threads = 2;
  const std::string g =
      DescribeChoices(given, ResolveOptions(given, /*cpus=*/2), 2);
  EXPECT_THAT(g, HasSubstr("load: 4 instance processes (--instances) x 2 "
                           "load threads (--threads)\n"));
}

}  // namespace
}  // namespace tokenlease::tools
