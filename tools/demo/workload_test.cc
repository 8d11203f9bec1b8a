// The key set, Zipf figures, windows and pacing schedule.
#include "demo/workload.h"

#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::ElementsAre;

DemoOptions Zipf(int keys, double s) {
  DemoOptions o;
  o.keys = KeyDist::kZipf;
  o.zipf_keys = keys;
  o.zipf_s = s;
  return o;
}

TEST(WorkloadTest, HotKeyIsAlwaysKeyZero) {
  const KeySet k = MakeKeys(DemoOptions());
  ASSERT_EQ(k.names.size(), 1u);
  EXPECT_EQ(k.names[0], "hot");
  std::mt19937_64 rng(1);
  EXPECT_EQ(k.Draw(rng), 0u);
  EXPECT_EQ(ZipfP0(DemoOptions()), 1.0);
}

TEST(WorkloadTest, ZipfCdfAndP0) {
  const DemoOptions o = Zipf(3, 1.0);
  const KeySet k = MakeKeys(o);
  ASSERT_EQ(k.names.size(), 3u);
  EXPECT_EQ(k.names[2], "user:00000002");
  ASSERT_EQ(k.cdf.size(), 3u);
  EXPECT_DOUBLE_EQ(k.cdf[0], 1.0);
  EXPECT_DOUBLE_EQ(k.cdf[1], 1.5);
  EXPECT_DOUBLE_EQ(k.cdf[2], 1.5 + 1.0 / 3);
  EXPECT_DOUBLE_EQ(ZipfP0(o), 1.0 / (1.5 + 1.0 / 3));
}

TEST(WorkloadTest, ZipfDrawsFollowTheDistribution) {
  const DemoOptions o = Zipf(1000, 1.1);
  const KeySet k = MakeKeys(o);
  std::mt19937_64 rng(42);
  constexpr int kDraws = 200000;
  int zero = 0;
  for (int i = 0; i < kDraws; ++i) {
    const size_t d = k.Draw(rng);
    ASSERT_LT(d, k.names.size());
    zero += d == 0;
  }
  EXPECT_NEAR(static_cast<double>(zero) / kDraws, ZipfP0(o), 0.01);
}

TEST(WorkloadTest, WindowsAndPhases) {
  DemoOptions o;
  o.seconds = 20;
  o.window_ms = 500;
  EXPECT_EQ(NumWindows(o), 40);
  EXPECT_EQ(WindowAt(o, 1'499'999'999), 2);
  EXPECT_EQ(WindowAt(o, -5), 0);               // clamped to the run
  EXPECT_EQ(WindowAt(o, 30'000'000'000), 39);  // (a late decision)
  o.seconds = 2.2;
  EXPECT_EQ(NumWindows(o), 5);  // the last one is 200 ms
  EXPECT_EQ(WindowNs(o), 500'000'000);
  o.outage_at = 8;
  o.outage_seconds = 4;
  EXPECT_EQ(PhaseAt(o, 7'999'999'999), kBeforeOutage);
  EXPECT_EQ(PhaseAt(o, 8'000'000'000), kDuringOutage);
  EXPECT_EQ(PhaseAt(o, 12'000'000'000), kAfterOutage);
}

TEST(WorkloadTest, KeyCounterKeepsOnlyKeysOfferedAnything) {
  KeyCounter c(/*keys=*/10);
  c.Count(3, true);
  c.Count(3, false);
  c.Count(7, true);
  std::vector<KeyCount> out;
  c.AppendTo(out);
  EXPECT_THAT(out, ElementsAre(KeyCount{3, 2, 1}, KeyCount{7, 1, 1}));
}

TEST(WorkloadTest, KeyCounterBeyondTheDenseRanks) {
  const int64_t far = KeyCounter::kDenseKeys + 5;
  KeyCounter c(far + 1);
  c.Count(static_cast<size_t>(far), true);
  c.Count(0, false);
  std::vector<KeyCount> out;
  c.AppendTo(out);
  EXPECT_THAT(SumByRank(out),
              ElementsAre(KeyCount{0, 1, 0}, KeyCount{far, 1, 1}));
}

TEST(WorkloadTest, SumByRankSortsAndAdds) {
  EXPECT_THAT(SumByRank({{5, 2, 1}, {1, 1, 1}, {5, 3, 0}, {1, 4, 2}}),
              ElementsAre(KeyCount{1, 5, 3}, KeyCount{5, 5, 1}));
  EXPECT_TRUE(SumByRank({}).empty());
}

TEST(WorkloadTest, PacerKeepsAnAbsoluteScheduleAndDropsLongLags) {
  Pacer p(1000, 100, Pacing::kSpin);
  EXPECT_TRUE(p.DueOrWait(1000));
  p.Book(1050);  // 50 ns late: the schedule holds
  EXPECT_EQ(p.next_ns(), 1100);
  p.Book(1100 + kMaxLagNs + 1);  // too late: restarts from now
  EXPECT_EQ(p.next_ns(), 1100 + kMaxLagNs + 1 + 100);
}

TEST(WorkloadTest, BusyPacingNeverSleeps) {
  // A call 10 s away: sleep pacing would sleep for most of it, busy pacing
  // pauses once and returns.
  const Pacer p(static_cast<double>(SteadyNs()) + 10e9, 100, Pacing::kBusy);
  const int64_t before = SteadyNs();
  EXPECT_FALSE(p.DueOrWait(before));
  EXPECT_LT(SteadyNs() - before, 1'000'000'000);
}

TEST(WorkloadTest, LoadThreadNamesFitTheKernelLimit) {
  EXPECT_EQ(LoadThreadName(0), "tl-load-0");
  // pthread_setname_np takes at most 15 characters.
  EXPECT_LE(LoadThreadName(kMaxThreads - 1).size(), 15u);
}

TEST(WorkloadTest, KeyNames) {
  EXPECT_EQ(KeyName(DemoOptions(), 0), "hot");
  EXPECT_EQ(KeyName(Zipf(100, 1.1), 42), "user:00000042");
}

TEST(WorkloadTest, HotKeysOfferAtLeastTenPercentOfTheLimit) {
  EXPECT_EQ(HotKeys(DemoOptions()), 1);  // --keys=hot: the one key
  DemoOptions o = Zipf(100000, 1.1);
  o.limit = 100;
  o.offered = 4700;
  const int64_t hot = HotKeys(o);
  ASSERT_GT(hot, 0);
  ASSERT_LT(hot, o.zipf_keys);
  const double p0 = ZipfP0(o);
  auto rate = [&](int64_t rank) {
    return p0 * std::pow(rank + 1.0, -o.zipf_s) * o.offered;
  };
  EXPECT_GE(rate(hot - 1), 0.1 * o.limit);
  EXPECT_LT(rate(hot), 0.1 * o.limit);
  o.offered = 1;  // nothing is hot
  EXPECT_EQ(HotKeys(o), 0);
  o.offered = 1e12;  // everything is
  EXPECT_EQ(HotKeys(o), o.zipf_keys);
}

TEST(WorkloadTest, ThreadsAreSpreadOverOneInterval) {
  DemoOptions o;  // 4 x 2 threads, 100,000/s: 12,500/s each
  o.instances = 4;
  o.threads = 2;
  o.offered = 100'000;
  EXPECT_DOUBLE_EQ(CallIntervalNs(o), 80'000);
  EXPECT_DOUBLE_EQ(FirstCallNs(o, 0, 0, 0), 0);
  EXPECT_DOUBLE_EQ(FirstCallNs(o, 0, 1, 0), 10'000);
  EXPECT_DOUBLE_EQ(FirstCallNs(o, 3, 1, 0), 70'000);
  // Their tick grids too (1 ms ticks, 8 threads: 125 us apart).
  EXPECT_DOUBLE_EQ(TickOriginNs(o, 0, 0, 0), 0);
  EXPECT_DOUBLE_EQ(TickOriginNs(o, 0, 1, 0), 125'000);
  EXPECT_DOUBLE_EQ(TickOriginNs(o, 3, 1, 0), 875'000);
}

// Tick pacing: the thread sleeps to the grid point at or after its next
// call, makes every call due by then, and may lag a tick before calls are
// dropped.
TEST(WorkloadTest, TickPacingWakesOnTheGridAndBatchesTheCallsDue) {
  // A call every 100 ns from 1,050; ticks of 1,000 ns from 300.
  Pacer p(1050, 100, Pacing::kTick, 1000, 300);
  EXPECT_DOUBLE_EQ(p.WakeNs(1050), 1300);
  EXPECT_DOUBLE_EQ(p.WakeNs(1300), 1300);  // on the grid: no wait
  EXPECT_DOUBLE_EQ(p.WakeNs(1301), 2300);
  // Woken at 1,300: the calls due at 1,050 .. 1,250 are made back to back.
  int calls = 0;
  while (p.DueOrWait(1300)) {
    p.Book(1300);
    ++calls;
  }
  EXPECT_EQ(calls, 3);
  EXPECT_DOUBLE_EQ(p.next_ns(), 1350);
  EXPECT_DOUBLE_EQ(p.MaxLagNs(), kMaxLagNs + 1000);
  // A tick late is not too late; more than the allowance restarts from now.
  p.Book(1350 + 1000);
  EXPECT_DOUBLE_EQ(p.next_ns(), 1450);
  const int64_t late = 1450 + kMaxLagNs + 1000 + 1;
  p.Book(late);
  EXPECT_DOUBLE_EQ(p.next_ns(), late + 100);
  // Other pacings have no grid and the plain allowance.
  const Pacer s(1050, 100, Pacing::kSleep, 1000, 300);
  EXPECT_DOUBLE_EQ(s.WakeNs(1050), 1050);
  EXPECT_DOUBLE_EQ(s.MaxLagNs(), kMaxLagNs);
}

TEST(WorkloadTest, TickPacingSleepsUntilTheGridPoint) {
  // The next call 20 ms away on a 10 ms grid: one DueOrWait sleeps to the
  // grid point at or after it (20 ms), not to the next tick and not in a
  // busy loop.
  const int64_t now = SteadyNs();
  const Pacer p(static_cast<double>(now) + 20e6, 1e6, Pacing::kTick, 10e6,
                static_cast<double>(now));
  EXPECT_FALSE(p.DueOrWait(now));
  const int64_t slept = SteadyNs() - now;
  EXPECT_GE(slept, 20'000'000);
  EXPECT_LT(slept, 2'000'000'000);  // a bound for a loaded machine
}

}  // namespace
}  // namespace tokenlease::tools
