// The summary on hand-made runs: the table by outage phase and its bounds,
// the outage's line, the per-key figures, the Redis lines, the banner and
// the CSV; and the number formatting they share.
#include "demo/report.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kStart = 1'000'000'000;
int64_t At(double s) { return kStart + static_cast<int64_t>(s * 1e9); }
int64_t Ns(double s) { return static_cast<int64_t>(s * 1e9); }

// The default run on 2 CPUs: 2 instances, 10,000/s, burst 1,000 (max
// lease 100, M = 199), local share 0.25 (A = 250), outage 8-12 s of 20.
DemoOptions Options() { return ResolveOptions(DemoOptions(), /*cpus=*/2); }

// A 20 s run of Options() whose hot key admitted `before`, `during` and
// `after` per second in the outage's phases, with a few latency samples
// and health transitions (two instances).
struct Outage {
  RunRecord run;
  Totals t;
};
Outage Admitting(int64_t before, int64_t during, int64_t after) {
  Outage r;
  r.run.start_ns = kStart;
  r.t.phases[kBeforeOutage].hot_admitted = before * 8;
  r.t.phases[kDuringOutage].hot_admitted = during * 4;
  r.t.phases[kAfterOutage].hot_admitted = after * 8;
  for (const Counts& c : r.t.phases) r.t.all.hot_admitted += c.hot_admitted;
  r.t.samples = {{Ns(1), 100, true},
                 {Ns(2), 200, true},
                 {Ns(3), 300, true},
                 {Ns(9), 400, true},
                 {Ns(13), 100, true}};
  r.run.reports.assign(2, InstanceReport(0));
  r.run.reports[0].events = {
      {At(-0.1), Health::kDegraded, Health::kHealthy, "connected"},
      {At(8.27), Health::kHealthy, Health::kDown, ""},
      {At(12.01), Health::kDown, Health::kDegraded, ""},
      {At(13.01), Health::kDegraded, Health::kHealthy, ""}};
  r.run.reports[1].events = {
      {At(-0.1), Health::kDegraded, Health::kHealthy, "connected"},
      {At(8.31), Health::kHealthy, Health::kDown, ""},
      {At(12.02), Health::kDown, Health::kDegraded, ""}};
  r.t.duration_s = 20;
  return r;
}

std::vector<PhaseRow> Rows(const DemoOptions& o, const Outage& r) {
  return PhaseRows(o, r.t);
}

TEST(PhasesTest, FailLocalRowsAndBounds) {
  const Outage r = Admitting(10000, 10000, 10000);
  const std::vector<PhaseRow> rows = Rows(Options(), r);
  ASSERT_EQ(rows.size(), 4u);  // no windows: no busiest second
  EXPECT_EQ(rows[0].name, "before");
  EXPECT_EQ(rows[1].name, "during");
  EXPECT_EQ(rows[2].name, "after");
  EXPECT_EQ(rows[3].name, "whole run");
  EXPECT_EQ(rows[1].from_s, 8);
  EXPECT_EQ(rows[1].to_s, 12);
  EXPECT_DOUBLE_EQ(rows[1].Rate(), 10000);
  EXPECT_EQ(rows[0].latency, (std::vector<int64_t>{100, 200, 300}));
  EXPECT_EQ(rows[3].latency, (std::vector<int64_t>{100, 100, 200, 300, 400}));
  // Before: L t + B (nothing held at the start).
  EXPECT_EQ(rows[0].bound.value, 10000 * 8 + 1000);
  EXPECT_EQ(rows[0].bound.formula, "L t + B");
  // During: L t + B + N (A + M).
  EXPECT_EQ(rows[1].bound.value, 10000 * 4 + 1000 + 2 * (250 + 199));
  EXPECT_EQ(rows[1].bound.formula, "L t + B + N (A + M)");
  // After: L t + B + N (A + M).
  EXPECT_EQ(rows[2].bound.value, 10000 * 8 + 1000 + 2 * (250 + 199));
  // Whole run: L D + B + 2 B.
  EXPECT_EQ(rows[3].bound.value, 10000 * 20 + 1000 + 2 * 1000);
  EXPECT_EQ(rows[3].bound.formula, "L t + B + 2 B");

  const std::string s = Summary(Options(), r.run, r.t, RedisFigures{});
  EXPECT_THAT(s, HasSubstr("the hot key's admissions (% of the limit of "
                           "10,000/s, and of their bound):\nphase        time "
                           "(s)    admitted % limit      bound % bound     "
                           "p50     p99    p999  formula\n"));
  EXPECT_THAT(s, HasSubstr("\nduring       8-12          40,000  100.0%     "
                           "41,898   95.5%   400ns   400ns   400ns  L t + B + "
                           "N (A + M)\n"));
  EXPECT_THAT(s, HasSubstr("\nwhole run    0-20         200,000  100.0%    "
                           "203,000   98.5%   200ns   400ns   400ns  L t + B + "
                           "2 B\n"));
  EXPECT_THAT(s, HasSubstr("\nL = 10,000/s, B = 1,000, N = 2, A = 250 (local "
                           "share), M = 199 (2 x max lease - 1), t = the "
                           "span's seconds, 2 B = the outage's extra bursts "
                           "(docs/design.md"));
  EXPECT_THAT(s, Not(HasSubstr("BOUND EXCEEDED")));
}

TEST(PhasesTest, APhaseOverItsBoundSaysSo) {
  const Outage r = Admitting(10000, 20000, 10000);
  const std::string s = Summary(Options(), r.run, r.t, RedisFigures{});
  EXPECT_THAT(s, HasSubstr("\nBOUND EXCEEDED: during: admitted 80000 > "
                           "41898\nBOUND EXCEEDED: whole run: admitted 240000 "
                           "> 203000\n"));
  EXPECT_THAT(s, HasSubstr("\nduring       8-12          80,000  200.0%     "
                           "41,898  190.9%"));
}

struct ModeCase {
  FailureMode mode;
  OutageKind kind;
  bool start_empty;
  int extra;            // OutageExtraBursts
  double during_bound;  // -1: none
};

std::string CaseName(const ModeCase& c) {
  return absl::StrCat(FailureModeName(c.mode), "_",
                      c.kind == OutageKind::kKill ? "kill" : "stop",
                      c.start_empty ? "_start_empty" : "");
}

void PrintTo(const ModeCase& c, std::ostream* os) { *os << CaseName(c); }

class OutageBoundsTest : public ::testing::TestWithParam<ModeCase> {};

TEST_P(OutageBoundsTest, ExtraBurstsAndTheOutagePhase) {
  const ModeCase& c = GetParam();
  DemoOptions o = Options();
  o.failure_mode = c.mode;
  o.outage_kind = c.kind;
  o.start_empty = c.start_empty;
  EXPECT_EQ(OutageExtraBursts(o), c.extra);
  const std::vector<PhaseRow> rows = Rows(o, Admitting(10000, 0, 10000));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1].bound.value, c.during_bound);
  EXPECT_EQ(rows[3].bound.value,
            c.extra < 0 ? -1 : 10000 * 20 + 1000 + c.extra * 1000);
  if (c.extra < 0) {
    EXPECT_EQ(rows[3].bound.formula, "none (fail_open)");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, OutageBoundsTest,
    ::testing::Values(
        ModeCase{FailureMode::kFailLocal, OutageKind::kStop, false, 2, 41898},
        ModeCase{FailureMode::kFailLocal, OutageKind::kKill, true, 2, 41898},
        // fail_closed admits what was held: N (A + M).
        ModeCase{FailureMode::kFailClosed, OutageKind::kStop, false, 0, 898},
        // A Redis restarted empty hands out a fresh burst...
        ModeCase{FailureMode::kFailClosed, OutageKind::kKill, false, 1, 898},
        // ... unless keys start empty.
        ModeCase{FailureMode::kFailClosed, OutageKind::kKill, true, 0, 898},
        // fail_open: no bound while Redis is away, nor for the whole run.
        ModeCase{FailureMode::kFailOpen, OutageKind::kStop, false, -1, -1}),
    [](const ::testing::TestParamInfo<ModeCase>& info) {
      return CaseName(info.param);
    });

TEST(PhasesTest, WithoutAnOutageOnlyTheWholeRun) {
  DemoOptions o = Options();
  o.outage = false;
  Outage r = Admitting(10000, 0, 10000);
  std::vector<PhaseRow> rows = Rows(o, r);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "whole run");
  EXPECT_EQ(rows[0].bound.value, 10000 * 20 + 1000);
  EXPECT_THAT(Summary(o, r.run, r.t, RedisFigures{}),
              Not(HasSubstr("outage:")));
  // Local mode has no outage even if the flag is on.
  o.outage = true;
  o.mode = Mode::kLocal;
  EXPECT_EQ(Rows(o, r).size(), 1u);
}

TEST(PhasesTest, AnInterruptedRunHasOnlyThePhasesThatRan) {
  Outage r = Admitting(10000, 10000, 0);
  r.t.duration_s = 10;
  const std::vector<PhaseRow> rows = Rows(Options(), r);
  ASSERT_EQ(rows.size(), 3u);  // before, during (8-10 s), whole run
  EXPECT_EQ(rows[1].to_s, 10);
}

TEST(PhasesTest, TheOutageLineSaysWhenTheInstancesNoticed) {
  Outage r = Admitting(1, 1, 1);
  EXPECT_THAT(Summary(Options(), r.run, r.t, RedisFigures{}),
              HasSubstr("\noutage: judged Redis down: 8.27-8.31 s; heard "
                        "from it again: 12.01-12.02 s; healthy: 13.01 s (1 "
                        "never)\n"));
  r.run.reports[1].events.clear();
  r.run.reports[0].events.pop_back();
  EXPECT_THAT(Summary(Options(), r.run, r.t, RedisFigures{}),
              HasSubstr("\noutage: judged Redis down: 8.27 s (1 never); "
                        "heard from it again: 12.01 s (1 never); healthy: "
                        "never\n"));
}

// One instance, `per_window` hot-key admissions in each 500 ms window of a
// 2 s run that ended exactly at 2 s.
RunRecord MakeRun(int64_t per_window) {
  RunRecord run;
  run.start_ns = kStart;
  run.windows = 4;
  run.reports.emplace_back(run.windows);
  InstanceReport& r = run.reports[0];
  for (Window& w : r.windows) {
    w.counts = {10 * per_window, per_window, 10 * per_window, per_window};
  }
  r.last_ns = run.start_ns + 2'000'000'000;
  r.samples = {{Ns(0.1), 100, true}, {Ns(0.2), 200, true}, {Ns(1), 300, true}};
  r.keys = {{0, 40 * per_window, 4 * per_window}};
  return run;
}

// A stalled Redis judged down before the planned outage: the failure mode
// decided in "before", whose bound then has the outage's terms.
TEST(PhasesTest, RedisJudgedDownBeforeThePlannedOutageAddsTheOutageTerms) {
  RunRecord run = MakeRun(5000);
  run.reports[0].events = {
      {At(0.49), Health::kHealthy, Health::kDown, "no reply"},
      {At(0.9), Health::kDown, Health::kHealthy, ""}};
  Outage r = Admitting(10000, 10000, 10000);
  r.t.first_down_s = Aggregate(run).first_down_s;
  EXPECT_NEAR(r.t.first_down_s, 0.49, 1e-9);
  const std::vector<PhaseRow> rows = Rows(Options(), r);
  EXPECT_EQ(rows[0].name, "before*");
  EXPECT_EQ(rows[0].bound.value, 10000 * 8 + 1000 + 2 * 1000 + 2 * (250 + 199));
  EXPECT_EQ(rows[0].bound.formula, "L t + B + 2 B + N (A + M)");
  EXPECT_EQ(rows[1].bound.formula, "L t + B + N (A + M)");  // as planned
  EXPECT_THAT(Summary(Options(), r.run, r.t, RedisFigures{}),
              HasSubstr("\nbefore*: an instance judged Redis down at 0.49 s, "
                        "before the planned outage"));
  // Down only within the planned outage: "before" keeps its bound.
  r.t.first_down_s = 8.27;
  EXPECT_EQ(Rows(Options(), r)[0].bound.formula, "L t + B");
}

// The options of `args` resolved for 2 CPUs.
DemoOptions Resolved(const std::vector<std::string>& args) {
  absl::StatusOr<CommandLine> c = ParseFlags(args);
  EXPECT_TRUE(c.ok()) << c.status();
  return ResolveOptions(c.ok() ? c->options : DemoOptions(), /*cpus=*/2);
}

// Local mode, 1 instance, 10,000/s with a burst of 10,000, a 2 s run.
DemoOptions Local() {
  return Resolved({"--mode=local", "--instances=1", "--burst=10000",
                   "--seconds=2", "--nooutage", "--csv="});
}

std::string SummaryOf(const DemoOptions& o, const RunRecord& run,
                      const RedisFigures& redis = {}) {
  return Summary(o, run, Aggregate(run), redis);
}

TEST(ReportTest, WithinTheBounds) {
  const std::string s = SummaryOf(Local(), MakeRun(5000));
  EXPECT_THAT(s, HasSubstr("== summary (local, hot) =="));
  // 20,000 <= 10,000 x 2 + 10,000; the busiest second 10,000 <= 20,000.
  EXPECT_THAT(s,
              HasSubstr("\nwhole run    0-2           20,000  100.0%     "
                        "30,000   66.7%   200ns   300ns   300ns  L t + "
                        "B\nbusiest 1 s  0-1           10,000  100.0%     "
                        "20,000   50.0%                          L t + B\n"));
  EXPECT_THAT(s, HasSubstr("A = M = 0 (local mode)"));
  EXPECT_THAT(s, Not(HasSubstr("BOUND EXCEEDED")));
  EXPECT_THAT(s, HasSubstr("\nload: offered 200,000 in 2.000 s = 100,000/s "
                           "(200.0% of 50,000/s); admitted 20,000 (10.00%); "
                           "per instance admitted (peak RSS) 20,000 (0 "
                           "MiB)\n"));
  EXPECT_THAT(s, Not(HasSubstr("cold keys")));  // --scenario=hot
  EXPECT_THAT(s, Not(HasSubstr("per key")));    // --scenario=zipf only
  EXPECT_THAT(s, Not(HasSubstr("redis")));      // local mode
}

TEST(ReportTest, BoundExceeded) {
  // 48,000 > 30,000; 24,000 in a second > 20,000.
  const std::string s = SummaryOf(Local(), MakeRun(12000));
  EXPECT_THAT(s, HasSubstr("\nBOUND EXCEEDED: whole run: admitted 48000 > "
                           "30000\nBOUND EXCEEDED: busiest 1 s: admitted "
                           "24000 > 20000\n"));
}

TEST(ReportTest, WindowAlgorithmsAdmitTheLimitPerAlignedSecond) {
  DemoOptions o = Local();
  o.algorithm = Algorithm::kFixedWindow;
  const std::vector<PhaseRow> rows = PhaseRows(o, Aggregate(MakeRun(5000)));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].bound.value, 10000 * 3);  // 0-2 s touches 3 seconds
  EXPECT_EQ(rows[1].bound.value, 10000 * 2);
  EXPECT_EQ(rows[1].bound.formula, "L x aligned seconds touched");
}

TEST(ReportTest, TheBusiestSecondOfFailOpenIsClearOfTheOutage) {
  DemoOptions o = Local();
  o.mode = Mode::kLeased;
  o.outage = true;
  o.outage_at = 0.5;
  o.outage_seconds = 0.5;
  o.failure_mode = FailureMode::kFailOpen;
  RunRecord run = MakeRun(100);
  run.reports[0].windows[1].counts.hot_admitted = 9999;  // in the outage
  run.reports[0].windows[3].counts.hot_admitted = 150;
  const PhaseRow busiest = PhaseRows(o, Aggregate(run)).back();
  EXPECT_EQ(busiest.name, "busiest 1 s");
  EXPECT_EQ(busiest.admitted, 250);  // 1-2 s
  EXPECT_EQ(busiest.from_s, 1);
  // L t + B + N M: fail_open adds no burst.
  EXPECT_EQ(busiest.bound.value, 10000 + 10000 + 1999);
}

TEST(ReportTest, SymbolsOfLeasedMode) {
  // Leased, 4 instances (5 CPUs), burst 1,000: max lease 100.
  const Symbols s = SymbolsOf(ResolveOptions(DemoOptions(), /*cpus=*/5));
  EXPECT_EQ(s.max_lease, 100);
  EXPECT_EQ(s.held, 199);
  EXPECT_EQ(s.local_allowance, 250);
}

// The limiters' counters come from their Prometheus series.
TEST(ReportTest, RedisLinesFromTheLimitersMetrics) {
  DemoOptions o = Local();
  o.mode = Mode::kLeased;
  RunRecord run = MakeRun(5000);
  run.reports[0].metrics = {{"tokenlease_redis_commands_total", 400},
                            {"tokenlease_lease_requests_total", 380},
                            {"tokenlease_lease_refusals_total", 7},
                            {"tokenlease_charges_total", 6},
                            {"tokenlease_tokens_charged_total", 60},
                            {"tokenlease_redis_timeouts_total", 3},
                            {"tokenlease_redis_late_replies_total", 2},
                            {"tokenlease_redis_resets_total", 1},
                            {"tokenlease_redis_errors_total", 4},
                            {"tokenlease_sliced_keys", 1}};
  run.reports[0].commands_with_shutdown = 410;
  const std::string s = SummaryOf(o, run);
  EXPECT_THAT(s, HasSubstr("\nredis: 400 commands (410 with the shutdown's), "
                           "500.0 decisions per command; 3 timeouts, 2 late "
                           "replies, 1 resets, 4 errors\n"));
  EXPECT_THAT(s, HasSubstr("\nleases: 380 requests, 0 tokens granted, 0 "
                           "returned, 7 refused; 6 charges (60 tokens); 0 new "
                           "keys without a spare entry; 1 sliced keys at the "
                           "end (summed over instances)\n"));
}

// Direct mode's calls on caller lanes are commands too (counted apart by
// the library).
TEST(ReportTest, DirectCommandsIncludeCallerLanes) {
  DemoOptions o = Local();
  o.mode = Mode::kDirect;
  RunRecord run = MakeRun(5000);
  run.reports[0].metrics = {{"tokenlease_redis_commands_total", 100},
                            {"tokenlease_redis_lane_calls_total", 4900}};
  run.reports[0].commands_with_shutdown = 5000;
  EXPECT_THAT(SummaryOf(o, run),
              HasSubstr("\nredis: 5000 commands (5000 with the shutdown's), "
                        "40.0 decisions per command;"));
}

TEST(ReportTest, RedisCpuPerDecision) {
  DemoOptions o = Local();
  o.mode = Mode::kDirect;
  RedisFigures redis;
  redis.ok = true;
  redis.script_calls = 1000;
  redis.script_usec = 2000;
  redis.cpu_usec = 4000;
  // 4,000 decisions offered.
  const std::string s = SummaryOf(o, MakeRun(100), redis);
  EXPECT_THAT(s, HasSubstr("\nredis server: 1000 script calls, 0.500 us in "
                           "scripts per decision (2.00 us per call), 1.000 us "
                           "of CPU per decision\n"));
  redis.cpu_usec = -1;  // not read
  EXPECT_THAT(SummaryOf(o, MakeRun(100), redis),
              HasSubstr("(2.00 us per call)\n"));
  redis.restarted = true;
  EXPECT_THAT(SummaryOf(o, MakeRun(100), redis),
              HasSubstr("redis server: restarted by the outage, its counters "
                        "lost\n"));
}

// A leased Zipf run over 1 s, 2 instances, limit 100 (max lease 10, M 19),
// local share A = 1: per-key bound 100 + 100 + 2 x 20 = 240.
DemoOptions ZipfLeased() {
  return Resolved({"--scenario=zipf", "--burst=100", "--offered=4700",
                   "--seconds=1", "--nooutage", "--local_share=0.01",
                   "--csv="});
}

RunRecord ZipfRun(const std::vector<std::vector<KeyCount>>& per_instance) {
  RunRecord run;
  run.start_ns = kStart;
  run.windows = 2;
  for (const std::vector<KeyCount>& keys : per_instance) {
    run.reports.emplace_back(run.windows);
    InstanceReport& r = run.reports.back();
    r.keys = keys;
    for (const KeyCount& k : keys) {
      r.windows[0].counts += {k.offered, k.admitted, 0, 0};
    }
    r.last_ns = run.start_ns + 1'000'000'000;
    r.samples = {{1, 100, true}, {2, 110, true}, {3, 5000, false}};
  }
  return run;
}

TEST(ReportTest, PerKeyIdealAndBoundOfAZipfRun) {
  // Rank 0: 1000 offered, 230 admitted over both instances (ideal 200);
  // rank 5000: 2 offered, 1 admitted.
  const RunRecord run =
      ZipfRun({{{0, 500, 120}, {5000, 1, 1}}, {{0, 500, 110}, {5000, 1, 0}}});
  const Totals t = Aggregate(run);
  ASSERT_EQ(t.per_key.size(), 2u);
  EXPECT_EQ(t.per_key[0], (KeyCount{0, 1000, 230}));
  const std::string s = Summary(ZipfLeased(), run, t, RedisFigures{});
  // 231 of 200 + min(2, 200): 114.36%.
  EXPECT_THAT(s, HasSubstr("\nper key: 2 keys offered anything admitted "
                           "114.36% of their ideal, the sum of min(offered, L "
                           "t + B = 200) (ranks 0-99 115.00%, 100-999 -, "
                           "1000-9999 50.00%, 10000+ -)\nkeys over their "
                           "bound L t + B + N (A + M) = 240: 0 of 2; largest "
                           "admitted / bound 0.9583 (user:00000000)\n"));
  EXPECT_THAT(s, Not(HasSubstr("KEYS OVER BOUND")));
  EXPECT_THAT(s, HasSubstr("\nlatency, 1 in 64 timed: hot keys (ranks 0-"));
  EXPECT_THAT(s, HasSubstr(": offered >= 10% of the limit) 4 samples: p50 "
                           "100ns, p99 110ns, p999 110ns, max 110ns; cold keys "
                           "2 samples: p50 5.00us"));
  DemoOptions small = ZipfLeased();
  small.zipf_keys = 500;  // the groups stop at the key set
  EXPECT_THAT(Summary(small, run, t, RedisFigures{}),
              HasSubstr("(ranks 0-99 115.00%, 100+ 50.00%)"));
}

TEST(ReportTest, KeysOverBoundWorstFirst) {
  DemoOptions o = ZipfLeased();
  o.mode = Mode::kDirect;  // bound 200
  const RunRecord run =
      ZipfRun({{{0, 500, 150}, {3, 500, 120}, {7, 500, 201}, {9, 500, 200}},
               {{0, 500, 100}, {3, 500, 90}}});
  const Totals t = Aggregate(run);
  const std::string s = PerKeySummary(o, t, /*worst=*/2);
  EXPECT_THAT(s, HasSubstr("keys over their bound L t + B = 200: 3 of 4; "
                           "largest admitted / bound 1.2500 (user:00000000)\n"
                           "KEYS OVER BOUND: user:00000000 admitted 250 > 200\n"
                           "KEYS OVER BOUND: user:00000003 admitted 210 > "
                           "200\n"));
  EXPECT_THAT(s, Not(HasSubstr("user:00000007")));  // the third worst
}

TEST(ReportTest, PerKeyBoundTerms) {
  DemoOptions o = ZipfLeased();
  o.local_share = 0.05;  // 5 tokens of 100
  EXPECT_DOUBLE_EQ(BoundOf(o, Span::kKey, 10.0).value,
                   100 * 10.0 + 100 + 2 * (5 + 19));
  o.local_share = 0.001;  // 0.1: floored to 0, then at least 1
  EXPECT_EQ(SymbolsOf(o).local_allowance, 1);
  o.cold_key_policy = ColdKeyPolicy::kDeny;
  EXPECT_EQ(SymbolsOf(o).local_allowance, 0);
  EXPECT_EQ(SymbolsOf(o).held, 19);
  EXPECT_DOUBLE_EQ(BoundOf(o, Span::kKey, 1).value, 200 + 2 * 19);
  o.cold_key_policy = ColdKeyPolicy::kLocalShare;
  for (Mode m : {Mode::kLocal, Mode::kDirect}) {
    o.mode = m;
    EXPECT_DOUBLE_EQ(BoundOf(o, Span::kKey, 2).value, 300);
    EXPECT_EQ(BoundOf(o, Span::kKey, 2).formula, "L t + B");
  }
}

TEST(ReportTest, TheBannerNamesTheScenarioTheLimitAndTheOutage) {
  const std::string b = Banner(Options(), "load: (the choices)\n");
  EXPECT_THAT(b, HasSubstr("tokenlease demo, scenario hot (one key shared by "
                           "every instance), leased mode: 10,000/s, burst "
                           "1,000, for 20 s\nload: (the choices)\n"));
  EXPECT_THAT(b, HasSubstr("cold_key_policy=local_share local_share=0.25 (A = "
                           "250)"));
  EXPECT_THAT(b, HasSubstr("\noutage: redis-server stopped (SIGSTOP, then "
                           "SIGCONT) from 8 s to 12 s; failure_mode=fail_local "
                           "(each instance enforces limit / N alone, N "
                           "counted in Redis), outage_usage=charge\n"));
  DemoOptions direct = Options();
  direct.mode = Mode::kDirect;
  EXPECT_THAT(Banner(direct), Not(HasSubstr("outage_usage")));
  EXPECT_THAT(Banner(ZipfLeased()),
              HasSubstr("scenario zipf (100,000 keys drawn with Zipf s=1.1, "
                        "each with its own limit)"));
  EXPECT_THAT(Banner(ZipfLeased()), Not(HasSubstr("outage:")));
  EXPECT_THAT(Banner(Local()),
              HasSubstr("\nlocal: each instance alone with "
                        "token_bucket(limit=10000/1s, burst=10000, smooth) "
                        "(limit / N)\n"));
}

TEST(ReportTest, TheCsvSaysTheOutagePhaseOfEachWindow) {
  DemoOptions o = Options();
  o.seconds = 2;
  o.outage_at = 0.5;
  o.outage_seconds = 1;
  const char* tmp = std::getenv("TMPDIR");
  o.csv = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
          "/tokenlease_report_test_" + std::to_string(getpid()) + ".csv";
  const RunRecord run = MakeRun(100);
  RedisFigures redis;
  redis.mem_per_window = {5, 6, 7, 8};
  ASSERT_TRUE(
      WriteFile(o.csv, CsvText(o, run, Aggregate(run), redis), "csv").ok());
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
  EXPECT_EQ(lines[2], "0,all,1000,100,5000,1000,100,0,0,0,5,before");
  EXPECT_EQ(lines[4], "0.5,all,1000,100,5000,1000,100,0,0,0,6,during");
  EXPECT_THAT(lines[6], HasSubstr(",during"));  // window 2, "all"
  EXPECT_THAT(lines[8], HasSubstr(",after"));
  EXPECT_THAT(WriteFile("/nonexistent-dir/x.csv", "", "csv").message(),
              HasSubstr("cannot write /nonexistent-dir/x.csv (--csv=PATH for "
                        "another file, --csv= for none)"));
}

TEST(ReportTest, AutoPathNamesTheRun) {
  setenv("TMPDIR", "/var/tmp", 1);
  const std::string p = AutoPath(ZipfLeased(), "svg", 0);
  unsetenv("TMPDIR");
  EXPECT_THAT(p, ::testing::MatchesRegex(
                     "/var/tmp/tokenlease_demo_leased_zipf_[0-9]{8}-[0-9]{6}"
                     "\\.svg"));
}

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

TEST(FormatTest, Numbers) {
  EXPECT_EQ(Commas(0), "0");
  EXPECT_EQ(Commas(999), "999");
  EXPECT_EQ(Commas(1234567), "1,234,567");
  EXPECT_EQ(Commas(-10000), "-10,000");
  EXPECT_EQ(ShortNs(240), "240ns");
  EXPECT_EQ(ShortNs(1'494), "1.49us");
  EXPECT_EQ(ShortNs(23'940), "23.9us");
  EXPECT_EQ(ShortNs(463'100), "463us");
  EXPECT_EQ(ShortNs(1'240'000), "1.24ms");
  EXPECT_EQ(Fmt(1234.6), "1235");
}

}  // namespace
}  // namespace tokenlease::tools
