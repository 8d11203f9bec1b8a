// The live rows, the health transitions above them, and the progress bar.
#include "demo/live.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kStart = 1'000'000'000;

// The default run on 2 CPUs: 2 instances, 10,000/s, outage 8-12 s.
DemoOptions Options() { return ResolveOptions(DemoOptions(), /*cpus=*/2); }

Window Closed(int64_t hot_admitted, Health health) {
  Window w;
  w.closed = true;
  w.live = {12500, hot_admitted, 12500, hot_admitted};
  w.commands_in_window = 50;
  w.health = health;
  w.latency = {100, 200, 30000};
  return w;
}

TEST(LiveTest, ARowDuringTheOutage) {
  const DemoOptions o = Options();
  std::vector<InstanceReport> reports;
  for (int i = 0; i < 2; ++i) reports.emplace_back(40);
  // Window 17 (8.5-9 s) is in the outage.
  reports[0].windows[17] = Closed(2500, Health::kDown);
  reports[1].windows[17] = Closed(2502, Health::kDown);
  const std::optional<std::string> row = LiveRow(o, 17, reports);
  ASSERT_TRUE(row.has_value());
  EXPECT_THAT(*row, HasSubstr("  9.0s  STOPPED        10,004   100.0%"));
  EXPECT_THAT(*row,
              HasSubstr("   200ns   30.0us     200      250  5000x 5004x"));
  EXPECT_THAT(*row, Not(HasSubstr("\x1b")));            // plain without colour
  EXPECT_TRUE(reports[0].windows[17].latency.empty());  // freed
  // Before the outage the server is up; colour marks the health only.
  reports[0].windows[3] = Closed(2500, Health::kHealthy);
  reports[1].windows[3] = Closed(2500, Health::kDegraded);
  const std::string colored = *LiveRow(o, 3, reports, /*color=*/true);
  EXPECT_THAT(colored, HasSubstr("  2.0s  up "));
  EXPECT_THAT(colored, HasSubstr("5000\x1b[32m+\x1b[0m 5000\x1b[33m~\x1b[0m"));
  // The columns line up with the header's.
  const std::string header = LiveHeader(o);
  EXPECT_THAT(header, HasSubstr("(+ healthy, ~ degraded, x down)"));
  const std::string titles = header.substr(header.rfind("     t"));
  EXPECT_EQ(titles.find("admitted/s") + 10, row->find("10,004") + 6);
}

TEST(LiveTest, ARowWaitsForEveryInstance) {
  DemoOptions o = Options();
  o.mode = Mode::kLocal;
  std::vector<InstanceReport> reports(2, InstanceReport(4));
  reports[0].windows[0] = Closed(2500, Health::kNone);
  EXPECT_FALSE(LiveRow(o, 0, reports).has_value());
  reports[1].windows[0] = Closed(2500, Health::kNone);
  const std::optional<std::string> row = LiveRow(o, 0, reports);
  ASSERT_TRUE(row.has_value());
  // 5,000 in 0.5 s over both; no Redis columns in local mode.
  EXPECT_EQ(*row, "  0.5s      10,000   100.0%   200ns   30.0us  5000 5000");
}

TEST(LiveTest, RedisColumnFollowsTheSchedule) {
  DemoOptions o = Options();                    // 8-12 s, 0.5 s windows
  EXPECT_STREQ(RedisColumn(o, 15), "up");       // 7.5-8 s
  EXPECT_STREQ(RedisColumn(o, 16), "STOPPED");  // 8-8.5 s
  EXPECT_STREQ(RedisColumn(o, 23), "STOPPED");  // 11.5-12 s
  EXPECT_STREQ(RedisColumn(o, 24), "up");       // 12-12.5 s
  o.outage_kind = OutageKind::kKill;
  EXPECT_STREQ(RedisColumn(o, 16), "KILLED");
  o.outage = false;
  EXPECT_STREQ(RedisColumn(o, 16), "up");
}

TEST(LiveTest, TooManyInstancesForTheRowShowTheirRange) {
  DemoOptions o = Options();
  o.instances = 16;
  std::vector<InstanceReport> reports;
  for (int i = 0; i < 16; ++i) {
    reports.emplace_back(40);
    reports[i].windows[0] =
        Closed(600 + i, i < 12 ? Health::kHealthy : Health::kDown);
  }
  const std::string row = *LiveRow(o, 0, reports);
  EXPECT_THAT(row, HasSubstr("1200..1230 12+ 4x"));
  EXPECT_LE(row.size(), kLiveColumns);
}

TEST(LiveTest, HealthTransitionsOfTheSameKindShareALine) {
  auto at = [](double s) { return kStart + static_cast<int64_t>(s * 1e9); };
  const std::vector<std::pair<int, HealthEvent>> events = {
      {1, {at(8.27), Health::kHealthy, Health::kDown, "no reply for 250ms"}},
      {0, {at(8.26), Health::kHealthy, Health::kDown, "no reply for 251ms"}},
      {0, {at(12.05), Health::kDown, Health::kHealthy, "answered"}},
      {1, {at(12.5), Health::kDown, Health::kHealthy, ""}},
  };
  EXPECT_EQ(HealthEventLines(events, kStart),
            "  # 8.26s instances 0 1: healthy -> down (the first: no reply for "
            "251ms)\n"
            "  # 12.05s instance 0: down -> healthy (answered)\n"
            "  # 12.50s instance 1: down -> healthy\n");
  EXPECT_EQ(HealthEventLines({}, kStart), "");
}

TEST(LiveTest, ProgressBar) {
  EXPECT_EQ(ProgressBar(0, 10), "[----------]");
  EXPECT_EQ(ProgressBar(0.45, 10), "[####------]");
  EXPECT_EQ(ProgressBar(1, 10), "[##########]");
  EXPECT_EQ(ProgressBar(1.7, 4), "[####]");  // clamped
  EXPECT_EQ(ProgressBar(-1, 4), "[----]");
}

TEST(LiveTest, HealthMarks) {
  EXPECT_STREQ(HealthMark(Health::kHealthy), "+");
  EXPECT_STREQ(HealthMark(Health::kDegraded), "~");
  EXPECT_STREQ(HealthMark(Health::kDown), "x");
  EXPECT_STREQ(HealthMark(Health::kNone), "");
}

}  // namespace
}  // namespace tokenlease::tools
