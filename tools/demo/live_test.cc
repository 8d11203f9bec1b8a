// The live rows and the health transitions above them.
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
  EXPECT_THAT(*row, Not(HasSubstr("\x1b")));            // plain text
  EXPECT_TRUE(reports[0].windows[17].latency.empty());  // freed
  // Before the outage the server is up; the marks give the health.
  reports[0].windows[3] = Closed(2500, Health::kHealthy);
  reports[1].windows[3] = Closed(2500, Health::kDegraded);
  const std::string up = *LiveRow(o, 3, reports);
  EXPECT_THAT(up, HasSubstr("  2.0s  up "));
  EXPECT_THAT(up, HasSubstr("  5000+ 5000~"));
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
  // 5,000 in 0.5 s over both; "none": local mode has no Redis.
  EXPECT_EQ(*row,
            "  0.5s  none           10,000   100.0%   200ns   30.0us     200"
            "      250  5000 5000");
}

// The redis column follows the outage's schedule (8-12 s, 0.5 s windows).
TEST(LiveTest, RedisColumnFollowsTheSchedule) {
  DemoOptions o = Options();
  std::vector<InstanceReport> reports(1, InstanceReport(40));
  for (Window& w : reports[0].windows) w = Closed(2500, Health::kHealthy);
  auto redis = [&](int64_t w) { return LiveRow(o, w, reports)->substr(8, 8); };
  EXPECT_EQ(redis(15), "up      ");  // 7.5-8 s
  EXPECT_EQ(redis(16), "STOPPED ");  // 8-8.5 s
  EXPECT_EQ(redis(23), "STOPPED ");  // 11.5-12 s
  EXPECT_EQ(redis(24), "up      ");  // 12-12.5 s
  o.outage_kind = OutageKind::kKill;
  EXPECT_EQ(redis(16), "KILLED  ");
  o.outage = false;
  EXPECT_EQ(redis(16), "up      ");
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

// The view prints each row once, after the transitions before its end.
TEST(LiveTest, TheViewPrintsEachCompleteRowOnce) {
  DemoOptions o = Options();
  LiveView view(o);
  std::vector<InstanceReport> reports(1, InstanceReport(40));
  EXPECT_EQ(view.NewRows(reports, kStart), "");
  reports[0].windows[0] = Closed(2500, Health::kHealthy);
  reports[0].windows[1] = Closed(2500, Health::kHealthy);
  reports[0].events = {
      {kStart + 600'000'000, Health::kHealthy, Health::kDegraded, "slow"}};
  const std::string rows = view.NewRows(reports, kStart);
  EXPECT_THAT(rows, HasSubstr("5000+\n  # 0.60s instance 0: healthy -> "
                              "degraded (slow)\n  1.0s "));
  EXPECT_EQ(view.NewRows(reports, kStart), "");  // nothing new
}

}  // namespace
}  // namespace tokenlease::tools
