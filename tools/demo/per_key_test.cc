// Per-key counting, ideal admission and bound.
#include "demo/per_key.h"

#include <vector>

#include "demo/test_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tokenlease/leased.h"

namespace tokenlease::tools {
namespace {

using ::testing::ElementsAre;

DemoOptions Zipf() { return ZipfTestOptions(); }

TEST(PerKeyTest, CounterKeepsOnlyKeysOfferedAnything) {
  KeyCounter c(/*keys=*/10);
  c.Count(3, true);
  c.Count(3, false);
  c.Count(7, true);
  std::vector<KeyCount> out;
  c.AppendTo(out);
  EXPECT_THAT(out, ElementsAre(KeyCount{3, 2, 1}, KeyCount{7, 1, 1}));
}

TEST(PerKeyTest, CounterBeyondTheDenseRanks) {
  const int64_t far = KeyCounter::kDenseKeys + 5;
  KeyCounter c(far + 1);
  c.Count(static_cast<size_t>(far), true);
  c.Count(0, false);
  std::vector<KeyCount> out;
  c.AppendTo(out);
  EXPECT_THAT(SumByRank(out),
              ElementsAre(KeyCount{0, 1, 0}, KeyCount{far, 1, 1}));
}

TEST(PerKeyTest, SumByRankSortsAndAdds) {
  EXPECT_THAT(SumByRank({{5, 2, 1}, {1, 1, 1}, {5, 3, 0}, {1, 4, 2}}),
              ElementsAre(KeyCount{1, 5, 3}, KeyCount{5, 5, 1}));
  EXPECT_TRUE(SumByRank({}).empty());
}

TEST(PerKeyTest, BoundOfLeasedModeWithLocalShare) {
  DemoOptions o = Zipf();
  o.cold_key_policy = ColdKeyPolicy::kLocalShare;
  o.local_share = 0.05;  // 5 tokens of 100
  // max lease = floor(0.1 x 100) = 10: M = 19.
  const PerKeyBound b = ComputePerKeyBound(o, 10.0);
  EXPECT_EQ(b.local_allowance, 5);
  EXPECT_EQ(b.held, 19);
  EXPECT_DOUBLE_EQ(b.Ideal(), 100 + 100 * 10.0);
  EXPECT_DOUBLE_EQ(b.Value(), 1100 + 2 * (5 + 19));
  EXPECT_EQ(b.Formula(),
            "burst + limit x duration + instances x (A + M) = 100 + 100 x "
            "10.000 + 2 x (5 + 19) = 1148");
}

TEST(PerKeyTest, LocalAllowanceIsAtLeastOneToken) {
  DemoOptions o = Zipf();
  o.cold_key_policy = ColdKeyPolicy::kLocalShare;
  o.local_share = LeaseOptions{}.local_share;  // 0.25 x 100 = 25
  EXPECT_EQ(ComputePerKeyBound(o, 1).local_allowance, 25);
  o.local_share = 0.001;  // 0.1: floored to 0, then at least 1
  EXPECT_EQ(ComputePerKeyBound(o, 1).local_allowance, 1);
}

TEST(PerKeyTest, NoAllowanceWithoutLocalShareOrSharing) {
  DemoOptions o = Zipf();
  o.cold_key_policy = ColdKeyPolicy::kDeny;
  EXPECT_EQ(ComputePerKeyBound(o, 1).local_allowance, 0);
  EXPECT_EQ(ComputePerKeyBound(o, 1).held, 19);
  o.cold_key_policy = ColdKeyPolicy::kLocalShare;
  for (Mode m : {Mode::kLocal, Mode::kDirect}) {
    o.mode = m;
    const PerKeyBound b = ComputePerKeyBound(o, 2);
    EXPECT_EQ(b.local_allowance, 0);
    EXPECT_EQ(b.held, 0);
    EXPECT_DOUBLE_EQ(b.Value(), 300);
  }
}

TEST(PerKeyTest, IdealAndRankGroups) {
  DemoOptions o = Zipf();
  o.mode = Mode::kDirect;  // bound = ideal cap = 100 + 100 x 1 = 200
  const std::vector<KeyCount> counts = {
      {0, 1000, 190},  // ideal 200 (capped)
      {99, 50, 50},    // ideal 50
      {100, 10, 5},    // ideal 10
      {20000, 3, 1},   // ideal 3
  };
  const PerKeySummary s = SummarisePerKey(o, counts, 1.0);
  EXPECT_EQ(s.keys, 4);
  EXPECT_EQ(s.offered, 1063);
  EXPECT_EQ(s.admitted, 246);
  EXPECT_DOUBLE_EQ(s.ideal, 263);
  ASSERT_EQ(s.groups.size(), 4u);
  EXPECT_EQ(s.groups[0].Label(), "0-99");
  EXPECT_EQ(s.groups[0].keys, 2);
  EXPECT_DOUBLE_EQ(s.groups[0].ideal, 250);
  EXPECT_EQ(s.groups[0].admitted, 240);
  EXPECT_EQ(s.groups[1].Label(), "100-999");
  EXPECT_EQ(s.groups[1].keys, 1);
  EXPECT_EQ(s.groups[2].Label(), "1000-9999");
  EXPECT_EQ(s.groups[2].keys, 0);
  EXPECT_EQ(s.groups[3].Label(), "10000+");
  EXPECT_DOUBLE_EQ(s.groups[3].ideal, 3);
  EXPECT_EQ(s.over, 0);
  EXPECT_EQ(s.max_key.rank, 0);
  EXPECT_DOUBLE_EQ(s.max_ratio, 190.0 / 200);
}

TEST(PerKeyTest, GroupsStopAtTheKeySet) {
  DemoOptions o = Zipf();
  o.zipf_keys = 500;
  const PerKeySummary s = SummarisePerKey(o, {}, 1.0);
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[1].Label(), "100-999");
}

TEST(PerKeyTest, KeysOverTheBoundWorstFirst) {
  DemoOptions o = Zipf();
  o.mode = Mode::kDirect;  // bound 200 over 1 s
  const std::vector<KeyCount> counts = {
      {0, 900, 201}, {1, 900, 250}, {2, 900, 200}, {3, 900, 230}};
  const PerKeySummary s = SummarisePerKey(o, counts, 1.0, /*worst=*/2);
  EXPECT_EQ(s.over, 3);
  EXPECT_THAT(s.worst,
              ElementsAre(KeyCount{1, 900, 250}, KeyCount{3, 900, 230}));
  EXPECT_EQ(s.max_key.rank, 1);
  EXPECT_DOUBLE_EQ(s.max_ratio, 1.25);
}

}  // namespace
}  // namespace tokenlease::tools
