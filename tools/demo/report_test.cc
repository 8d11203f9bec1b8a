// The summary's bound checks and a live row, on hand-made runs.
#include "demo/report.h"

#include <string>
#include <vector>

#include "demo/live.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// One instance, `per_window` hot-key admissions in each 500 ms window of a
// 2 s run that ended exactly at 2 s.
RunRecord MakeRun(const DemoOptions& o, int64_t per_window) {
  RunRecord run;
  run.start_ns = 1'000'000'000;
  run.windows = 4;
  run.reports.emplace_back(run.windows, o.live);
  InstanceReport& r = run.reports[0];
  for (WindowCounts& w : r.windows) {
    w.offered = w.hot_offered = 10 * per_window;
    w.admitted = w.hot_admitted = per_window;
  }
  r.timing.last_ns = run.start_ns + 2'000'000'000;
  r.latency = {100, 200, 300};
  return run;
}

DemoOptions Local() {
  DemoOptions o;
  o.mode = Mode::kLocal;
  o.instances = 1;
  o.seconds = 2;
  o.csv = "";
  return o;
}

TEST(ReportTest, WithinTheBounds) {
  const DemoOptions o = Local();
  const RunRecord run = MakeRun(o, 5000);  // 20,000 <= 10,000 + 10,000 x 2
  const std::string s = Summary(o, run, Aggregate(run), RedisFigures{});
  EXPECT_THAT(s, HasSubstr("== summary (local, hot) =="));
  EXPECT_THAT(s, HasSubstr("utilisation 66.67%"));
  EXPECT_THAT(s, HasSubstr("(within)"));
  EXPECT_THAT(s, Not(HasSubstr("BOUND EXCEEDED")));
  EXPECT_THAT(s, HasSubstr("p50 200 ns"));
  EXPECT_THAT(s, Not(HasSubstr("redis")));  // local mode
}

TEST(ReportTest, BoundExceeded) {
  const DemoOptions o = Local();
  const RunRecord run =
      MakeRun(o, 12000);  // 48,000 > 30,000; 24,000/s > 20,000
  const std::string s = Summary(o, run, Aggregate(run), RedisFigures{});
  EXPECT_THAT(s, HasSubstr("BOUND EXCEEDED: hot key admitted 48000 > 30000"));
  EXPECT_THAT(s,
              HasSubstr("BOUND EXCEEDED: a 1 s span admitted 24000 > 20000"));
}

TEST(ReportTest, HeldTokensOfLeasedMode) {
  DemoOptions o;  // leased, 4 instances, max lease 1,000
  const Bounds b = ComputeBounds(o);
  EXPECT_EQ(b.burst, 10000);
  EXPECT_EQ(b.max_lease, 1000);
  EXPECT_EQ(b.held, 4 * 1999);
}

TEST(ReportTest, LiveRowWaitsForEveryInstance) {
  DemoOptions o = Local();
  o.instances = 2;
  RunRecord run = MakeRun(o, 0);
  run.reports.emplace_back(run.windows, true);
  run.reports[0].live[0] = {true, 5000, 500, 5000, 2500, 0, 0, 1, 0, {100}};
  EXPECT_FALSE(LiveRow(o, 0, run.reports).has_value());
  run.reports[1].live[0] = {true, 5000, 500, 5000, 2500, 0, 0, 1, 0, {300}};
  const std::optional<std::string> row = LiveRow(o, 0, run.reports);
  ASSERT_TRUE(row.has_value());
  EXPECT_THAT(*row, HasSubstr("10,000"));  // 5,000 in 0.5 s
  EXPECT_THAT(*row, HasSubstr("100.0%"));
  EXPECT_THAT(*row, HasSubstr("5000 5000"));  // per instance
}

}  // namespace
}  // namespace tokenlease::tools
