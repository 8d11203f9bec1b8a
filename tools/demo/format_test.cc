// The formatting helpers of the live rows and the summary.
#include "demo/format.h"

#include <vector>

#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

TEST(FormatTest, PercentileTakesTheCeilRank) {
  const std::vector<int64_t> v = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(Percentile(v, 0.0), 10);
  EXPECT_EQ(Percentile(v, 0.5), 50);
  EXPECT_EQ(Percentile(v, 0.51), 60);
  EXPECT_EQ(Percentile(v, 0.99), 100);
  EXPECT_EQ(Percentile(v, 1.0), 100);
  EXPECT_EQ(Percentile({}, 0.5), 0);
  EXPECT_EQ(Percentile({7}, 0.999), 7);
}

TEST(FormatTest, Commas) {
  EXPECT_EQ(Commas(0), "0");
  EXPECT_EQ(Commas(999), "999");
  EXPECT_EQ(Commas(1000), "1,000");
  EXPECT_EQ(Commas(1234567), "1,234,567");
  EXPECT_EQ(Commas(-10000), "-10,000");
}

TEST(FormatTest, ShortNs) {
  EXPECT_EQ(ShortNs(240), "240ns");
  EXPECT_EQ(ShortNs(23'900), "23.9us");
  EXPECT_EQ(ShortNs(1'240'000), "1.2ms");
}

TEST(FormatTest, FmtRounds) {
  EXPECT_EQ(Fmt(1234.6), "1235");
  EXPECT_EQ(Fmt(310000), "310000");
}

TEST(FormatTest, LoadAverageHasThreeFields) {
  const std::string l = LoadAverage();
  EXPECT_EQ(std::count(l.begin(), l.end(), ' '), 2) << l;
}

}  // namespace
}  // namespace tokenlease::tools
