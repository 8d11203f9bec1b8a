// The table by outage phase and its bounds, on hand-made counts.
#include "demo/phases.h"

#include <array>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "demo/sizing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kStart = 1'000'000'000;

// The default run on 2 CPUs: 2 instances, 10,000/s, burst 1,000 (max
// lease 100, M = 199), local share 0.25 (A = 250), outage 8-12 s of 20.
DemoOptions Options() { return ResolveOptions(DemoOptions(), /*cpus=*/2); }

struct Counts {
  std::array<PhaseCounts, kOutagePhases> phases;
  std::array<std::vector<int64_t>, kOutagePhases> latency;
  std::vector<HealthEvent> events;
};

// A run that admitted `per_second` in each phase.
Counts Admitting(int64_t before, int64_t during, int64_t after) {
  Counts r;
  r.phases[kBeforeOutage] = {400000, 0, 400000, before * 8};
  r.phases[kDuringOutage] = {200000, 0, 200000, during * 4};
  r.phases[kAfterOutage] = {400000, 0, 400000, after * 8};
  r.latency[kBeforeOutage] = {100, 200, 300};
  r.latency[kDuringOutage] = {400};
  r.latency[kAfterOutage] = {100};
  auto at = [](double s) { return kStart + static_cast<int64_t>(s * 1e9); };
  r.events = {{at(-0.1), Health::kDegraded, Health::kHealthy, "connected"},
              {at(-0.1), Health::kDegraded, Health::kHealthy, "connected"},
              {at(8.3), Health::kHealthy, Health::kDown, "no reply"},
              {at(8.3), Health::kHealthy, Health::kDown, "no reply"},
              {at(12.1), Health::kDown, Health::kHealthy, "answered"}};
  return r;
}

std::vector<PhaseRow> Rows(const DemoOptions& o, const Counts& r) {
  int64_t admitted = 0;
  for (const PhaseCounts& p : r.phases) admitted += p.hot_admitted;
  return PhaseRows(o, 20, 1'000'000, admitted, r.phases, r.latency,
                   {100, 100, 200, 300, 400}, r.events, kStart);
}

TEST(PhasesTest, FailLocalRowsAndBounds) {
  const std::vector<PhaseRow> rows =
      Rows(Options(), Admitting(10000, 10000, 10000));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "before the outage");
  EXPECT_EQ(rows[1].name, "during: STOPPED");
  EXPECT_EQ(rows[2].name, "after");
  EXPECT_EQ(rows[3].name, "whole run");
  EXPECT_EQ(rows[1].from_s, 8);
  EXPECT_EQ(rows[1].to_s, 12);
  EXPECT_DOUBLE_EQ(rows[1].Rate(), 10000);
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
  EXPECT_EQ(rows[2].transitions, "1 down->healthy");
  EXPECT_EQ(rows[3].transitions,
            "2 healthy->down, 2 degraded->healthy, 1 down->healthy");

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
  const std::vector<PhaseRow> rows =
      Rows(Options(), Admitting(10000, 20000, 10000));
  const std::string table = PhaseTable(Options(), rows);
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
  return absl::StrCat(FailureModeName(c.mode), "_", OutageKindName(c.kind),
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
  Counts r = Admitting(10000, 10000, 0);
  const std::vector<PhaseRow> rows = PhaseRows(
      Options(), /*duration_s=*/10, 1, 1, r.phases, r.latency, {}, {}, kStart);
  ASSERT_EQ(rows.size(), 3u);  // before, during (8-10 s), whole run
  EXPECT_EQ(rows[1].to_s, 10);
}

TEST(PhasesTest, TheOutageTimelineSaysWhenTheInstancesNoticed) {
  auto at = [](double s) { return kStart + static_cast<int64_t>(s * 1e9); };
  const std::vector<std::vector<HealthEvent>> events = {
      {{at(-0.2), Health::kDegraded, Health::kHealthy, ""},
       {at(8.27), Health::kHealthy, Health::kDown, ""},
       {at(12.01), Health::kDown, Health::kDegraded, ""},
       {at(13.01), Health::kDegraded, Health::kHealthy, ""}},
      {{at(8.31), Health::kHealthy, Health::kDown, ""},
       {at(12.02), Health::kDown, Health::kDegraded, ""}}};
  const std::string t = OutageTimeline(Options(), events, kStart);
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
                           "again: leasing resumed; healthy again at 13.01 s"));
  EXPECT_THAT(t, HasSubstr("\n  then           what fail_local admitted "
                           "during the outage was charged to Redis"));
  // One instance that never noticed; fail_closed charges nothing.
  DemoOptions closed = Options();
  closed.failure_mode = FailureMode::kFailClosed;
  const std::string c = OutageTimeline(closed, {events[0], {}}, kStart);
  EXPECT_THAT(c, HasSubstr("  8.27 s         instances judged Redis down"));
  EXPECT_THAT(c, HasSubstr("every decision Redis could not make was "
                           "denied (fail_closed)"));
  EXPECT_THAT(c, HasSubstr("1 instance never judged Redis down"));
  EXPECT_THAT(c, Not(HasSubstr("charged")));
  closed.outage = false;
  EXPECT_EQ(OutageTimeline(closed, events, kStart), "");
  // Direct mode has no leases and charges nothing afterwards.
  DemoOptions direct = Options();
  direct.mode = Mode::kDirect;
  const std::string d = OutageTimeline(direct, events, kStart);
  EXPECT_THAT(d, HasSubstr("until then each call waited for its reply up to "
                           "its deadline"));
  EXPECT_THAT(d, HasSubstr("the instances heard from Redis again: Redis "
                           "decides again"));
  EXPECT_THAT(d, Not(HasSubstr("charged")));
}

}  // namespace
}  // namespace tokenlease::tools
