// The summary on hand-made runs: the table by outage phase and its bounds,
// the outage's timeline, the per-key figures, the details, the banner and
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
#include "demo/format.h"
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
  for (const InstanceReport& i : r.run.reports) {
    r.t.events.insert(r.t.events.end(), i.events.begin(), i.events.end());
  }
  r.t.duration_s = 20;
  return r;
}

std::vector<PhaseRow> Rows(const DemoOptions& o, const Outage& r) {
  return PhaseRows(o, r.run, r.t);
}

TEST(PhasesTest, FailLocalRowsAndBounds) {
  const Outage r = Admitting(10000, 10000, 10000);
  const std::vector<PhaseRow> rows = Rows(Options(), r);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "before the outage");
  EXPECT_EQ(rows[1].name, "during: STOPPED");
  EXPECT_EQ(rows[2].name, "after");
  EXPECT_EQ(rows[3].name, "whole run");
  EXPECT_EQ(rows[1].from_s, 8);
  EXPECT_EQ(rows[1].to_s, 12);
  EXPECT_DOUBLE_EQ(rows[1].Rate(), 10000);
  EXPECT_EQ(rows[0].latency, (std::vector<int64_t>{100, 200, 300}));
  EXPECT_EQ(rows[3].latency, (std::vector<int64_t>{100, 100, 200, 300, 400}));
  // Before: B + L t (nothing held at the start).
  EXPECT_EQ(rows[0].bound, 1000 + 10000 * 8);
  // During: L t + B + N (A + M).
  EXPECT_EQ(rows[1].bound, 10000 * 4 + 1000 + 2 * (250 + 199));
  // After: B + L t + N (A + M).
  EXPECT_EQ(rows[2].bound, 1000 + 10000 * 8 + 2 * (250 + 199));
  // Whole run: B + L D + 2 B.
  EXPECT_EQ(rows[3].bound, 1000 + 10000 * 20 + 2 * 1000);
  EXPECT_EQ(rows[3].formula,
            "burst + limit x time + 2 x burst = 1000 + 10000 x 20.000 + 2 x "
            "1000");
  EXPECT_EQ(rows[3].note,
            "2 x burst: the local shares start full, and the shared bucket "
            "refills while Redis is away");
  // Transitions by phase: the first connects count before the outage.
  EXPECT_EQ(rows[0].transitions, "2 degraded->healthy");
  EXPECT_EQ(rows[1].transitions, "2 healthy->down");
  EXPECT_EQ(rows[2].transitions, "1 degraded->healthy, 2 down->degraded");
  EXPECT_EQ(rows[3].transitions,
            "2 healthy->down, 3 degraded->healthy, 2 down->degraded");

  const std::string table = PhaseTable(Options(), rows);
  EXPECT_THAT(table, HasSubstr("\nduring: STOPPED    8-12          40,000     "
                               "10,000   100.0%   400ns   400ns   400ns  2 "
                               "healthy->down\n"));
  EXPECT_THAT(table, HasSubstr("phase              time (s)    admitted     "
                               "rate/s  % limit"));
  EXPECT_THAT(table, HasSubstr("\n  during: STOPPED: 40,000 <= 41,898 (within, "
                               "95.5% of it): limit x time + burst + "
                               "instances x (A + M) = 10000 x 4.000 + 1000 + "
                               "2 x (250 + 199); burst: the local shares start "
                               "full\n"));
  EXPECT_THAT(table, Not(HasSubstr("BOUND EXCEEDED")));
}

TEST(PhasesTest, APhaseOverItsBoundSaysSo) {
  const std::string table =
      PhaseTable(Options(), Rows(Options(), Admitting(10000, 20000, 10000)));
  EXPECT_THAT(table, HasSubstr("BOUND EXCEEDED: during: STOPPED: hot key "
                               "admitted 80000 > 41898"));
  EXPECT_THAT(table, HasSubstr("BOUND EXCEEDED: whole run: hot key admitted "
                               "240000 > 203000"));
}

struct ModeCase {
  FailureMode mode;
  OutageKind kind;
  bool start_empty;
  int extra;  // OutageExtraBursts
  bool during_checked;
  double during_bound;
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
  EXPECT_EQ(rows[1].checked, c.during_checked);
  if (c.during_checked) {
    EXPECT_EQ(rows[1].bound, c.during_bound);
  }
  EXPECT_EQ(rows[3].checked, c.extra >= 0);
  if (c.extra >= 0) {
    EXPECT_EQ(rows[3].bound, 1000 + 10000 * 20 + c.extra * 1000);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, OutageBoundsTest,
    ::testing::Values(
        ModeCase{FailureMode::kFailLocal, OutageKind::kStop, false, 2, true,
                 41898},
        ModeCase{FailureMode::kFailLocal, OutageKind::kKill, true, 2, true,
                 41898},
        // fail_closed admits what was held: N (A + M).
        ModeCase{FailureMode::kFailClosed, OutageKind::kStop, false, 0, true,
                 898},
        // A Redis restarted empty hands out a fresh burst...
        ModeCase{FailureMode::kFailClosed, OutageKind::kKill, false, 1, true,
                 898},
        // ... unless keys start empty.
        ModeCase{FailureMode::kFailClosed, OutageKind::kKill, true, 0, true,
                 898},
        // fail_open: no bound while Redis is away, nor for the whole run.
        ModeCase{FailureMode::kFailOpen, OutageKind::kStop, false, -1, false,
                 0}),
    [](const ::testing::TestParamInfo<ModeCase>& info) {
      return CaseName(info.param);
    });

TEST(PhasesTest, WithoutAnOutageOnlyTheWholeRun) {
  DemoOptions o = Options();
  o.outage = false;
  const std::vector<PhaseRow> rows = Rows(o, Admitting(10000, 0, 10000));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "whole run");
  EXPECT_EQ(rows[0].bound, 1000 + 10000 * 20);
  // Local mode has no outage even if the flag is on, and no health column.
  o.outage = true;
  o.mode = Mode::kLocal;
  EXPECT_EQ(Rows(o, Admitting(1, 1, 1)).size(), 1u);
  EXPECT_THAT(PhaseTable(o, Rows(o, Admitting(1, 1, 1))),
              Not(HasSubstr("health")));
}

TEST(PhasesTest, AnInterruptedRunHasOnlyThePhasesThatRan) {
  Outage r = Admitting(10000, 10000, 0);
  r.t.duration_s = 10;
  const std::vector<PhaseRow> rows = Rows(Options(), r);
  ASSERT_EQ(rows.size(), 3u);  // before, during (8-10 s), whole run
  EXPECT_EQ(rows[1].to_s, 10);
}

TEST(PhasesTest, TheOutageTimelineSaysWhenTheInstancesNoticed) {
  Outage r = Admitting(1, 1, 1);
  const std::string t = OutageTimeline(Options(), r.run);
  EXPECT_THAT(t, HasSubstr("\n  8.00 s         redis-server stopped "
                           "(SIGSTOP)\n"));
  EXPECT_THAT(t, HasSubstr("\n  8.27-8.31 s    every instance judged Redis "
                           "down, 0.27 s after the stop (no reply for "
                           "RedisOptions::down_after, 250ms): until then a "
                           "decision the leases could not pay was denied; "
                           "from then on each instance decided alone with its "
                           "share of the limit (fail_local)\n"));
  EXPECT_THAT(t, HasSubstr("\n  12.00 s        redis-server resumed "
                           "(SIGCONT)\n"));
  EXPECT_THAT(t, HasSubstr("\n  12.01-12.02 s  the instances heard from Redis "
                           "again: leasing resumed; healthy again at 13.01 s "
                           "(RedisOptions::degraded_hold"));
  EXPECT_THAT(t, HasSubstr("\n  then           what fail_local admitted "
                           "during the outage was charged to Redis"));
  // One instance that never noticed; fail_closed charges nothing.
  DemoOptions closed = Options();
  closed.failure_mode = FailureMode::kFailClosed;
  r.run.reports[1].events.clear();
  const std::string c = OutageTimeline(closed, r.run);
  EXPECT_THAT(c, HasSubstr("  8.27 s         instances judged Redis down"));
  EXPECT_THAT(c, HasSubstr("every decision Redis could not make was "
                           "denied (fail_closed)"));
  EXPECT_THAT(c, HasSubstr("\n                 1 instance never judged Redis "
                           "down\n"));
  EXPECT_THAT(c, Not(HasSubstr("charged")));
  closed.outage = false;
  EXPECT_EQ(OutageTimeline(closed, r.run), "");
  // Direct mode has no leases and charges nothing afterwards.
  DemoOptions direct = Options();
  direct.mode = Mode::kDirect;
  const std::string d = OutageTimeline(direct, Admitting(1, 1, 1).run);
  EXPECT_THAT(d, HasSubstr("until then each call waited for its reply up to "
                           "its deadline"));
  EXPECT_THAT(d, HasSubstr("the instances heard from Redis again: Redis "
                           "decides again"));
  EXPECT_THAT(d, Not(HasSubstr("charged")));
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
  // 20,000 <= 10,000 + 10,000 x 2
  EXPECT_THAT(s, HasSubstr("whole run: 20,000 <= 30,000 (within, 66.7% of "
                           "it): burst + limit x time = 10000 + 10000 x "
                           "2.000\n"));
  EXPECT_THAT(s, HasSubstr("max hot key admitted in any 1 s span (window "
                           "steps): 10000 (span at 0 s); bound limit + burst "
                           "+ held = 10000 + 10000 + 0 = 20000 (within)\n"));
  EXPECT_THAT(s, Not(HasSubstr("BOUND EXCEEDED")));
  EXPECT_THAT(s, HasSubstr("all instances): 3 samples, p50 200 ns"));
  EXPECT_THAT(s, Not(HasSubstr("cold keys")));  // --scenario=hot
  EXPECT_THAT(s, Not(HasSubstr("per-key")));    // --scenario=zipf only
  EXPECT_THAT(s, Not(HasSubstr("redis")));      // local mode
}

TEST(ReportTest, BoundExceeded) {
  // 48,000 > 30,000; 24,000/s > 20,000
  const std::string s = SummaryOf(Local(), MakeRun(12000));
  EXPECT_THAT(s, HasSubstr("BOUND EXCEEDED: whole run: hot key admitted "
                           "48000 > 30000 (+18000, 60.00%)"));
  EXPECT_THAT(s,
              HasSubstr("BOUND EXCEEDED: a 1 s span admitted 24000 > 20000"));
}

TEST(ReportTest, HeldTokensOfLeasedMode) {
  // Leased, 4 instances (5 CPUs), burst 1,000: max lease 100.
  const Bounds b = ComputeBounds(ResolveOptions(DemoOptions(), /*cpus=*/5));
  EXPECT_EQ(b.burst, 1000);
  EXPECT_EQ(b.max_lease, 100);
  EXPECT_EQ(b.held, 4 * 199);
  EXPECT_EQ(b.local_allowance, 250);
}

// The limiters' counters come from their Prometheus series.
TEST(ReportTest, RedisLinesFromTheLimitersMetrics) {
  DemoOptions o = Local();
  o.mode = Mode::kLeased;
  RunRecord run = MakeRun(5000);
  run.reports[0].metrics = {
      {"tokenlease_redis_commands_total", 400},
      {"tokenlease_redis_flushes_total", 390},
      {"tokenlease_lease_requests_total", 380},
      {"tokenlease_lease_refusals_total", 7},
      {"tokenlease_redis_timeouts_total", 3},
      {"tokenlease_decisions_total{source=\"lease\",result=\"admitted\"}",
       19000},
      {"tokenlease_decisions_total{source=\"fallback\",result=\"denied\"}", 5},
      {"tokenlease_decisions_total{source=\"fail_open\",result=\"denied\"}",
       0}};
  run.reports[0].commands_with_shutdown = 410;
  const std::string s = SummaryOf(o, run);
  EXPECT_THAT(s, HasSubstr("redis commands sent by the instances: 400 during "
                           "the run (410 including the shutdown's returns); "
                           "decisions per command: 500.0; pipelined writes: "
                           "390\n"));
  EXPECT_THAT(s, HasSubstr("decisions by source (the limiters' "
                           "DecisionCounts, all keys): fallback denied 5; "
                           "lease admitted 19000\n"));
  EXPECT_THAT(s, HasSubstr("lease requests 380, tokens granted 0, returned 0, "
                           "denied by redis 7,"));
  EXPECT_THAT(s, HasSubstr("redis client timeouts (DeadlineExceeded, all "
                           "instances): 3;"));
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
  EXPECT_THAT(s, HasSubstr("): 2000 us = 0.500 us per decision offered "
                           "(2.00 us per script call)"));
  EXPECT_THAT(s, HasSubstr("everything the server did): 4000 us = 1.000 us "
                           "per decision offered"));
  redis.cpu_usec = -1;  // not read: no line
  EXPECT_THAT(SummaryOf(o, MakeRun(100), redis),
              Not(HasSubstr("redis server CPU")));
  redis.restarted = true;
  EXPECT_THAT(SummaryOf(o, MakeRun(100), redis),
              HasSubstr("redis server: killed and restarted during the run"));
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
  EXPECT_THAT(s, HasSubstr("per-key ideal admission (sum over the 2 keys "
                           "offered anything of min(offered, burst + limit x "
                           "duration = 200)): 202; admitted 231 = 114.36% of "
                           "it (offered 1002)"));
  EXPECT_THAT(s, HasSubstr("Zipf ranks 0-99: 1 keys offered anything, "
                           "offered 1000, ideal 200, admitted 230 = 115.00% "
                           "of ideal"));
  for (const char* group :
       {"100-999: 0 keys", "1000-9999: 1 keys", "10000+: 0 keys"}) {
    EXPECT_THAT(s, HasSubstr(absl::StrCat("Zipf ranks ", group)));
  }
  EXPECT_THAT(s, HasSubstr("per-key bound = burst + limit x duration + "
                           "instances x (A + M) = 100 + 100 x 1.000 + 2 x "
                           "(1 + 19) = 240 (A = max(1, floor(local_share x "
                           "burst)) = max(1, floor(0.01 x 100)) = 1; M = 2 x "
                           "max lease - 1 = 2 x 10 - 1)"));
  EXPECT_THAT(s, HasSubstr("keys over their bound: 0 of 2 (within); largest "
                           "admitted / bound 0.9583 (user:00000000, rank 0"));
  EXPECT_THAT(s, Not(HasSubstr("KEYS OVER BOUND")));
  EXPECT_THAT(s, HasSubstr("hot keys (offered rate >= 10% of the limit"));
  EXPECT_THAT(s, HasSubstr("): 4 samples, p50 100 ns"));   // hot
  EXPECT_THAT(s, HasSubstr("): 2 samples, p50 5000 ns"));  // cold
  DemoOptions small = ZipfLeased();
  small.zipf_keys = 500;  // the groups stop at the key set
  EXPECT_THAT(Summary(small, run, t, RedisFigures{}),
              Not(HasSubstr("Zipf ranks 1000")));
}

TEST(ReportTest, KeysOverBoundWorstFirst) {
  DemoOptions o = ZipfLeased();
  o.mode = Mode::kDirect;  // bound 200
  const RunRecord run =
      ZipfRun({{{0, 500, 150}, {3, 500, 120}, {7, 500, 201}, {9, 500, 200}},
               {{0, 500, 100}, {3, 500, 90}}});
  const Totals t = Aggregate(run);
  const std::string s = PerKeySummary(o, t, /*worst=*/2);
  EXPECT_THAT(s, HasSubstr("(A = M = 0 in direct mode)"));
  EXPECT_THAT(s, HasSubstr("keys over their bound: 3 of 4;"));
  EXPECT_THAT(s, HasSubstr("largest admitted / bound 1.2500 (user:00000000"));
  EXPECT_THAT(s, HasSubstr("KEYS OVER BOUND: 3 (the worst 2:)\n"
                           "KEYS OVER BOUND: user:00000000 rank 0 admitted "
                           "250 > bound 200 (+50)\n"
                           "KEYS OVER BOUND: user:00000003 rank 3 admitted "
                           "210 > bound 200 (+10)\n"));
  o.mode = Mode::kLeased;
  o.cold_key_policy = ColdKeyPolicy::kDeny;
  EXPECT_THAT(PerKeySummary(o, t),
              HasSubstr("(A = 0 with --cold_key_policy=deny; M = 2 x max "
                        "lease - 1 = 2 x 10 - 1)"));
}

TEST(ReportTest, PerKeyBoundTerms) {
  DemoOptions o = ZipfLeased();
  o.local_share = 0.05;  // 5 tokens of 100
  const PerKeyBound b = ComputePerKeyBound(o, 10.0);
  EXPECT_DOUBLE_EQ(b.Ideal(), 100 + 100 * 10.0);
  EXPECT_DOUBLE_EQ(b.Value(), 1100 + 2 * (5 + 19));
  EXPECT_EQ(b.Formula(),
            "burst + limit x duration + instances x (A + M) = 100 + 100 x "
            "10.000 + 2 x (5 + 19) = 1148");
  o.local_share = 0.001;  // 0.1: floored to 0, then at least 1
  EXPECT_EQ(ComputePerKeyBound(o, 1).local_allowance, 1);
  o.cold_key_policy = ColdKeyPolicy::kDeny;
  EXPECT_EQ(ComputePerKeyBound(o, 1).local_allowance, 0);
  EXPECT_EQ(ComputePerKeyBound(o, 1).held, 19);
  o.cold_key_policy = ColdKeyPolicy::kLocalShare;
  for (Mode m : {Mode::kLocal, Mode::kDirect}) {
    o.mode = m;
    EXPECT_DOUBLE_EQ(ComputePerKeyBound(o, 2).Value(), 300);
  }
}

TEST(ReportTest, TheBannerNamesTheScenarioTheLimitAndTheOutage) {
  const std::string b = Banner(Options(), "load: (the choices)\n");
  EXPECT_THAT(b, HasSubstr("tokenlease demo, scenario hot: one key shared by "
                           "every instance; leased mode"));
  EXPECT_THAT(b, HasSubstr("\nlimit: 10,000/s, a token bucket with burst "
                           "1,000; 20 s, a row per 0.5 s window\nload: (the "
                           "choices)\n"));
  EXPECT_THAT(b, HasSubstr("cold_key_policy=local_share local_share=0.25 (A = "
                           "250 per key and instance)"));
  EXPECT_THAT(b, HasSubstr("\noutage: from 8 s to 12 s redis-server is "
                           "stopped (SIGSTOP), then resumed; "
                           "failure_mode=fail_local: each instance enforces "
                           "limit / instances alone"));
  EXPECT_THAT(b, HasSubstr("; outage_usage=charge\n"));
  DemoOptions direct = Options();
  direct.mode = Mode::kDirect;
  EXPECT_THAT(Banner(direct),
              HasSubstr("; what the mode admits is not charged to Redis "
                        "afterwards\n"));
  EXPECT_THAT(Banner(ZipfLeased()),
              HasSubstr("scenario zipf: 100,000 keys drawn with Zipf s=1.1, "
                        "each with its own limit"));
  EXPECT_THAT(Banner(ZipfLeased()), Not(HasSubstr("outage:")));
  EXPECT_THAT(Banner(Local()), HasSubstr("local: each instance has its own "
                                         "Limiter with 10000/s, burst 10000"));
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
  ASSERT_TRUE(WriteCsv(o, run, Aggregate(run), redis).ok());
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
  o.outage = false;
  o.csv = "/nonexistent-dir/x.csv";
  EXPECT_THAT(WriteCsv(o, run, Aggregate(run), redis).message(),
              HasSubstr("cannot write /nonexistent-dir/x.csv"));
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
  EXPECT_EQ(ShortNs(23'900), "23.9us");
  EXPECT_EQ(ShortNs(1'240'000), "1.2ms");
  EXPECT_EQ(Fmt(1234.6), "1235");
  const std::string l = LoadAverage();
  EXPECT_EQ(std::count(l.begin(), l.end(), ' '), 2) << l;
}

}  // namespace
}  // namespace tokenlease::tools
