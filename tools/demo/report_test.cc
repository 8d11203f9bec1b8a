// The summary's bound checks and a live row, on hand-made runs.
#include "demo/report.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "demo/live.h"
#include "demo/sizing.h"
#include "demo/test_options.h"
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
  r.latency = r.latency_hot = {100, 200, 300};
  r.key_counts = {{0, 40 * per_window, 4 * per_window}};
  return run;
}

// Local mode, 1 instance, 10,000/s with a burst of 10,000, a 2 s run.
DemoOptions Local() {
  DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/2);
  o.mode = Mode::kLocal;
  o.instances = 1;
  o.burst = 10000;
  o.seconds = 2;
  o.outage = false;
  o.csv = "";
  return o;
}

TEST(ReportTest, WithinTheBounds) {
  const DemoOptions o = Local();
  const RunRecord run = MakeRun(o, 5000);  // 20,000 <= 10,000 + 10,000 x 2
  const std::string s = Summary(o, run, Aggregate(run), RedisFigures{});
  EXPECT_THAT(s, HasSubstr("== summary (local, hot) =="));
  EXPECT_THAT(s, HasSubstr("whole run: 20,000 <= 30,000 (within, 66.7% of "
                           "it): burst + limit x time = 10000 + 10000 x "
                           "2.000\n"));
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
  EXPECT_THAT(s, HasSubstr("BOUND EXCEEDED: whole run: hot key admitted "
                           "48000 > 30000 (+18000, 60.00%)"));
  EXPECT_THAT(s,
              HasSubstr("BOUND EXCEEDED: a 1 s span admitted 24000 > 20000"));
}

TEST(ReportTest, HeldTokensOfLeasedMode) {
  // Leased, 4 instances (5 CPUs), burst 1,000: max lease 100.
  const DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/5);
  const Bounds b = ComputeBounds(o);
  EXPECT_EQ(b.burst, 1000);
  EXPECT_EQ(b.max_lease, 100);
  EXPECT_EQ(b.held, 4 * 199);
}

TEST(ReportTest, HotModeLatencyIsAllHot) {
  const DemoOptions o = Local();
  const RunRecord run = MakeRun(o, 5000);
  const std::string s = Summary(o, run, Aggregate(run), RedisFigures{});
  EXPECT_THAT(s, HasSubstr("hot keys (the one key of --keys=hot): 3 samples, "
                           "p50 200 ns"));
  EXPECT_THAT(s, HasSubstr("cold keys: none"));
  EXPECT_THAT(s, Not(HasSubstr("per-key")));  // --keys=zipf only
}

// A leased Zipf run over 1 s, 2 instances, limit 100 (max lease 10, M 19),
// local share A = 1: per-key bound 100 + 100 + 2 x 20 = 240.
DemoOptions ZipfLeased() {
  DemoOptions o = ZipfTestOptions();
  o.zipf_s = 1.1;
  o.offered = 4700;
  o.seconds = 1;
  o.cold_key_policy = ColdKeyPolicy::kLocalShare;
  o.local_share = 0.01;
  o.csv = "";
  return o;
}

RunRecord ZipfRun(const std::vector<std::vector<KeyCount>>& per_instance) {
  RunRecord run;
  run.start_ns = 1'000'000'000;
  run.windows = 2;
  for (const std::vector<KeyCount>& keys : per_instance) {
    run.reports.emplace_back(run.windows, false);
    InstanceReport& r = run.reports.back();
    r.key_counts = keys;
    for (const KeyCount& k : keys) {
      r.windows[0].offered += k.offered;
      r.windows[0].admitted += k.admitted;
    }
    r.timing.last_ns = run.start_ns + 1'000'000'000;
    r.latency_hot = {100, 110};
    r.latency_cold = {5000};
    r.latency = {100, 110, 5000};
  }
  return run;
}

TEST(ReportTest, PerKeyIdealAndBoundOfAZipfRun) {
  const DemoOptions o = ZipfLeased();
  // Rank 0: 1000 offered, 230 admitted over both instances (ideal 200);
  // rank 5000: 2 offered, 1 admitted.
  const RunRecord run =
      ZipfRun({{{0, 500, 120}, {5000, 1, 1}}, {{0, 500, 110}, {5000, 1, 0}}});
  const Totals t = Aggregate(run);
  ASSERT_EQ(t.per_key.size(), 2u);
  EXPECT_EQ(t.per_key[0], (KeyCount{0, 1000, 230}));
  const std::string s = Summary(o, run, t, RedisFigures{});
  EXPECT_THAT(s, HasSubstr("per-key ideal admission (sum over the 2 keys "
                           "offered anything of min(offered, burst + limit x "
                           "duration = 200)): 202; admitted 231 = 114.36% of "
                           "it (offered 1002)"));
  EXPECT_THAT(s, HasSubstr("Zipf ranks 0-99: 1 keys offered anything, "
                           "offered 1000, ideal 200, admitted 230 = 115.00% "
                           "of ideal"));
  EXPECT_THAT(s, HasSubstr("Zipf ranks 1000-9999: 1 keys"));
  EXPECT_THAT(s, HasSubstr("Zipf ranks 10000+: 0 keys"));
  EXPECT_THAT(s, HasSubstr("per-key bound = burst + limit x duration + "
                           "instances x (A + M) = 100 + 100 x 1.000 + 2 x "
                           "(1 + 19) = 240 (A = max(1, floor(local_share x "
                           "burst)) = max(1, floor(0.01 x 100)) = 1; M = 2 x "
                           "max lease - 1 = 2 x 10 - 1)"));
  EXPECT_THAT(s, HasSubstr("keys over their bound: 0 of 2 (within); largest "
                           "admitted / bound 0.9583 (user:00000000, rank 0"));
  EXPECT_THAT(s, Not(HasSubstr("KEYS OVER BOUND")));
  EXPECT_THAT(s, HasSubstr("hot keys (offered rate >= 10% of the limit"));
  EXPECT_THAT(s, HasSubstr("cold keys (ranks "));
  EXPECT_THAT(s, HasSubstr("): 4 samples, p50 100 ns"));   // hot
  EXPECT_THAT(s, HasSubstr("): 2 samples, p50 5000 ns"));  // cold
}

TEST(ReportTest, KeysOverBound) {
  DemoOptions o = ZipfLeased();
  o.mode = Mode::kDirect;  // bound 200
  const RunRecord run = ZipfRun({{{0, 500, 150}, {3, 500, 120}, {7, 500, 200}},
                                 {{0, 500, 100}, {3, 500, 90}}});
  const std::string s = Summary(o, run, Aggregate(run), RedisFigures{});
  EXPECT_THAT(s, HasSubstr("(A = M = 0 in direct mode)"));
  EXPECT_THAT(s, HasSubstr("keys over their bound: 2 of 3;"));
  EXPECT_THAT(s, HasSubstr("KEYS OVER BOUND: 2"));
  EXPECT_THAT(s, HasSubstr("KEYS OVER BOUND: user:00000000 rank 0 admitted "
                           "250 > bound 200 (+50)"));
  EXPECT_THAT(s, HasSubstr("KEYS OVER BOUND: user:00000003 rank 3 admitted "
                           "210 > bound 200 (+10)"));
}

TEST(ReportTest, RedisCpuPerDecision) {
  DemoOptions o = ZipfLeased();
  o.mode = Mode::kDirect;
  const RunRecord run = ZipfRun({{{0, 500, 100}}, {{0, 500, 100}}});
  RedisFigures redis;
  redis.ok = true;
  redis.script_calls = 1000;
  redis.script_usec = 3000;
  redis.cpu_usec = 5000;
  const std::string s = Summary(o, run, Aggregate(run), redis);
  EXPECT_THAT(s, HasSubstr("): 3000 us = 3.000 us per decision offered "
                           "(3.00 us per script call)"));
  EXPECT_THAT(s, HasSubstr("everything the server did): 5000 us = 5.000 us "
                           "per decision offered"));
  redis.cpu_usec = -1;  // not read: no line
  EXPECT_THAT(Summary(o, run, Aggregate(run), redis),
              Not(HasSubstr("redis server CPU")));
}

TEST(ReportTest, TheBannerNamesTheScenarioTheLimitAndTheOutage) {
  const DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/2);
  const std::string b = Banner(o, "load: (the choices)\n");
  EXPECT_THAT(b, HasSubstr("tokenlease demo, scenario hot: one key shared by "
                           "every instance; leased mode"));
  EXPECT_THAT(b, HasSubstr("\nlimit: 10,000/s, a token bucket with burst "
                           "1,000; 20 s, a row per 0.5 s window\nload: (the "
                           "choices)\n"));
  EXPECT_THAT(b, HasSubstr("\noutage: from 8 s to 12 s redis-server is "
                           "stopped (SIGSTOP), then resumed; "
                           "failure_mode=fail_local: each instance enforces "
                           "limit / instances alone"));
  EXPECT_THAT(b, HasSubstr("; outage_usage=charge\n"));
  DemoOptions direct = o;
  direct.mode = Mode::kDirect;
  EXPECT_THAT(Banner(direct),
              HasSubstr("; what the mode admits is not charged to Redis "
                        "afterwards\n"));
  DemoOptions zipf = ZipfTestOptions();
  EXPECT_THAT(Banner(zipf), HasSubstr("scenario zipf: 100,000 keys drawn with "
                                      "Zipf s=1.1, each with its own limit"));
  EXPECT_THAT(Banner(zipf), Not(HasSubstr("outage:")));
}

TEST(ReportTest, TheCsvSaysTheOutagePhaseOfEachWindow) {
  DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/2);
  o.seconds = 2;
  o.outage_at = 0.5;
  o.outage_seconds = 1;
  const char* tmp = std::getenv("TMPDIR");
  o.csv = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
          "/tokenlease_report_test_" + std::to_string(getpid()) + ".csv";
  const RunRecord run = MakeRun(o, 100);
  ASSERT_TRUE(WriteCsv(o, run, Aggregate(run), RedisFigures{}).ok());
  std::ifstream f(o.csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  std::remove(o.csv.c_str());
  ASSERT_EQ(lines.size(), 9u);  // the header, then 4 x (instance 0, all)
  EXPECT_EQ(lines[0],
            "window_start_s,instance,offered,admitted,limit_bound,hot_offered,"
            "hot_admitted,keys,rss_kb,redis_commands_total,redis_used_memory,"
            "phase");
  EXPECT_EQ(lines[1], "0,0,1000,100,5000,1000,100,-1,-1,-1,,before");
  EXPECT_THAT(lines[4], HasSubstr(",during"));  // window 1, "all"
  EXPECT_THAT(lines[6], HasSubstr(",during"));  // window 2, "all"
  EXPECT_THAT(lines[8], HasSubstr(",after"));
  o.outage = false;
  o.csv = "/nonexistent-dir/x.csv";
  EXPECT_THAT(WriteCsv(o, run, Aggregate(run), RedisFigures{}).message(),
              HasSubstr("cannot write /nonexistent-dir/x.csv"));
}

TEST(ReportTest, LiveRowWaitsForEveryInstance) {
  DemoOptions o = Local();
  o.instances = 2;
  RunRecord run = MakeRun(o, 0);
  run.reports.emplace_back(run.windows, true);
  run.reports[0].live[0] = {true, 5000, 500, 5000,          2500, 0,
                            0,    1,    0,   Health::kNone, {100}};
  EXPECT_FALSE(LiveRow(o, 0, run.reports).has_value());
  run.reports[1].live[0] = {true, 5000, 500, 5000,          2500, 0,
                            0,    1,    0,   Health::kNone, {300}};
  const std::optional<std::string> row = LiveRow(o, 0, run.reports);
  ASSERT_TRUE(row.has_value());
  EXPECT_THAT(*row, HasSubstr("10,000"));  // 5,000 in 0.5 s
  EXPECT_THAT(*row, HasSubstr("100.0%"));
  EXPECT_THAT(*row, HasSubstr("5000 5000"));  // per instance
}

}  // namespace
}  // namespace tokenlease::tools
