// The acquire script against the local engine: the same calls through both
// must give the same decisions (the local engine's ns rounded up to us).
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "redis/script_call.h"
#include "testing/generators.h"
#include "testing/redis_test.h"
#include "testing/scripts.h"
#include "testing/specs.h"
#include "tokenlease/clock.h"
#include "tokenlease/limiter.h"

namespace tokenlease {
namespace {

using internal::AcquireResult;
using testing::Composite;
using testing::DailyAndWeeklyQuota;
using testing::kT0;

int64_t CeilUs(int64_t ns) { return ns < 0 ? ns : (ns + 999) / 1000; }

// One call and, optionally, what it must give (us; -1 = never).
struct Call {
  int64_t t_us;  // offset from kT0
  int64_t cost;
  int64_t max_wait_us = 0;  // > 0: Reserve / borrowing
  bool check = false;
  bool allowed = false;
  int64_t remaining = 0, retry_us = 0, reset_us = 0, wait_us = 0;
};
Call C(int64_t t, int64_t cost) { return Call{t, cost}; }
Call E(int64_t t, int64_t cost, bool allowed, int64_t remaining, int64_t retry,
       int64_t reset, int64_t wait = 0, int64_t max_wait = 0) {
  return Call{t, cost, max_wait, true, allowed, remaining, retry, reset, wait};
}

class LuaVectorsTest : public testing::RedisTest {
 protected:
  // Runs `calls` through a fresh local Limiter and the script (fresh keys);
  // both must agree, and with the expected values where given.
  void RunBoth(const LimitSpec& spec, const std::string& name,
               const std::vector<Call>& calls, const std::string& context) {
    ASSERT_TRUE(internal::ValidateScriptSpec(spec).ok())
        << internal::ValidateScriptSpec(spec);
    ManualClock clock;
    LimiterOptions options;
    options.clock = &clock;
    auto limiter = Limiter::Create(spec, options);
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    for (size_t i = 0; i < calls.size(); ++i) {
      const Call& c = calls[i];
      const int64_t now_us = kT0 + c.t_us;
      Decision d;
      int64_t wait_ns = 0;
      if (c.max_wait_us > 0) {
        clock.SetNanos(now_us * 1000);
        const Reservation r = (*limiter)->Reserve(
            name, c.cost, absl::Microseconds(c.max_wait_us));
        ASSERT_NE(r.decision.source, DecisionSource::kInvalidArgument);
        d = r.decision;
        wait_ns = r.wait_ns;
      } else {
        d = (*limiter)->TryAcquire(name, c.cost, now_us * 1000);
      }
      const AcquireResult lua = testing::ScriptAcquire(
          client(), spec, "vec:", name,
          testing::At(now_us, c.cost, c.cost, c.max_wait_us));
      const Decision ld = internal::ToDecision(lua, DecisionSource::kDirect);
      const std::string where = absl::StrCat(
          context, " call #", i, " t=+", c.t_us, "us cost=", c.cost,
          " max_wait=", c.max_wait_us, " spec=", DescribeSpec(spec));
      ASSERT_EQ(lua.now_us, now_us) << where;
      ASSERT_EQ(d.allowed, ld.allowed) << where;
      ASSERT_EQ(lua.granted, d.allowed ? c.cost : 0) << where;
      ASSERT_EQ(d.remaining, lua.remaining) << where;
      ASSERT_EQ(CeilUs(d.retry_after_ns), lua.retry_after_us) << where;
      ASSERT_EQ(CeilUs(d.reset_after_ns), lua.reset_after_us) << where;
      ASSERT_EQ(CeilUs(wait_ns), lua.wait_us) << where;
      if (c.check) {
        EXPECT_EQ(c.allowed, d.allowed) << where;
        EXPECT_EQ(c.remaining, d.remaining) << where;
        EXPECT_EQ(c.retry_us, CeilUs(d.retry_after_ns)) << where;
        EXPECT_EQ(c.reset_us, CeilUs(d.reset_after_ns)) << where;
        EXPECT_EQ(c.wait_us, CeilUs(wait_ns)) << where;
      }
    }
  }
};

// ----------------------------------------------------- hand-checked vectors

TEST_F(LuaVectorsTest, GcraSevenPerSecond) {
  // Emission interval 1/7 s = 142857.142857... us; burst 2.
  RunBoth(LimitSpec::Gcra(7, absl::Seconds(1), 2), "gcra7",
          {E(0, 1, true, 1, 0, 142858), E(0, 1, true, 0, 0, 285715),
           E(0, 1, false, 0, 142858, 285715), E(142857, 1, false, 0, 1, 142858),
           E(142858, 1, true, 0, 0, 285714), E(0, 3, false, 0, -1, 428572)},
          "gcra7");
}

TEST_F(LuaVectorsTest, TokenBucketStepwise) {
  // 10 per second in whole steps, burst 10; starts full at t=0.
  RunBoth(
      LimitSpec::TokenBucket(10, absl::Seconds(1), 10, Refill::kStepwise),
      "step",
      {E(0, 10, true, 0, 0, 1000000), E(500000, 1, false, 0, 500000, 500000),
       E(1000000, 4, true, 6, 0, 1000000), C(1700000, 7), C(2000000, 11)},
      "stepwise");
}

TEST_F(LuaVectorsTest, FixedWindowAlignedAndFirstRequest) {
  RunBoth(LimitSpec::FixedWindow(3, absl::Seconds(10)), "fw",
          {E(9000000, 3, true, 0, 0, 1000000),
           E(9500000, 1, false, 0, 500000, 500000),
           E(10000000, 2, true, 1, 0, 10000000)},
          "fixed aligned");
  LimitSpec first = LimitSpec::FixedWindow(3, absl::Seconds(10));
  first.bands[0].anchor = WindowAnchor::kFirstRequest;
  RunBoth(first, "fw1",
          {E(9000000, 3, true, 0, 0, 10000000),
           E(10000000, 1, false, 0, 9000000, 9000000),
           E(19000000, 1, true, 2, 0, 10000000)},
          "fixed first request");
  RunBoth(LimitSpec::FixedWindow(5, absl::Hours(24), -absl::Hours(8)), "fw8",
          {C(0, 5), C(absl::ToInt64Microseconds(absl::Hours(16)) - 1, 1),
           C(absl::ToInt64Microseconds(absl::Hours(16)), 1)},
          "fixed utc+8 day");
}

TEST_F(LuaVectorsTest, SlidingCounter) {
  // 10 per 10 s: 10 in window 0, then at 15 s the previous window weighs
  // 10 * 5/10 = 5.
  RunBoth(LimitSpec::SlidingWindowCounter(10, absl::Seconds(10)), "sc",
          {E(0, 10, true, 0, 0, 20000000), E(15000000, 5, true, 0, 0, 15000000),
           E(15000000, 1, false, 0, 1000000, 15000000), C(19999999, 1),
           C(25000000, 3)},
          "sliding counter");
}

TEST_F(LuaVectorsTest, SlidingLogWithGranuleAndQuantum) {
  RunBoth(LimitSpec::SlidingWindowLog(3, absl::Seconds(10)), "sl",
          {E(0, 2, true, 1, 0, 10000000), E(4000000, 1, true, 0, 0, 10000000),
           E(5000000, 1, false, 0, 5000000, 9000000),
           E(10000000, 2, true, 0, 0, 10000000)},
          "sliding log exact");
  // 3 per 7 days in one-day granules (UTC+8): the quota's weekly band.
  LimitSpec day;
  day.bands = {DailyAndWeeklyQuota().bands[1]};
  RunBoth(day, "slg",
          {C(0, 1), C(3600000000, 1), C(86400000000, 1), C(86400000001, 1),
           C(7 * 86400000000 - 28800000001, 1),
           C(7 * 86400000000 - 28800000000, 1)},
          "sliding log day granule");
  LimitSpec q = LimitSpec::SlidingWindowLog(1000, absl::Seconds(1));
  q.bands[0].max_log_entries = 8;  // quantum 125 ms
  std::vector<Call> calls;
  for (int i = 0; i < 60; ++i) calls.push_back(C(i * 37000, 30));
  RunBoth(q, "slq", calls, "sliding log quantised");
}

TEST_F(LuaVectorsTest, OddRates) {
  std::vector<Call> calls;
  for (int i = 0; i < 40; ++i) calls.push_back(C(i * 71428 + (i % 3), 1));
  RunBoth(LimitSpec::TokenBucket(7, absl::Seconds(1)), "odd7", calls, "7/s");
  const int64_t day = 86400000000;
  RunBoth(LimitSpec::Gcra(3, absl::Hours(24 * 7)), "odd3w",
          {C(0, 3), E(1, 1, false, 0, 2 * day + day / 3 - 1, 7 * day - 1),
           C(2 * day + day / 3, 1), C(3 * day, 1)},
          "3 per 7 days");
  RunBoth(LimitSpec::TokenBucket(1, absl::Hours(24 * 7)), "odd1w",
          {C(0, 1), C(1, 1), C(7 * day - 1, 1), C(7 * day, 1)}, "1 per week");
  std::vector<Call> fast;
  for (int i = 0; i < 30; ++i) fast.push_back(C(i * 333, 400000 + i * 1000));
  RunBoth(LimitSpec::Gcra(1000000000, absl::Seconds(1)), "odd1e9", fast,
          "1e9/s");
}

TEST_F(LuaVectorsTest, BorrowingReserveMatchesMaxWait) {
  // 10/s burst 5, borrow up to 1 s: Reserve(cost, max_wait) vs max_wait_us.
  LimitSpec gcra = LimitSpec::Gcra(10, absl::Seconds(1), 5);
  gcra.max_borrow = absl::Seconds(1);
  RunBoth(gcra, "bg",
          {E(0, 5, true, 0, 0, 500000, 0, 2000000),
           E(0, 4, true, 0, 0, 900000, 400000, 2000000),
           E(0, 7, false, 0, -1, 900000, 0, 2000000),
           E(0, 6, true, 0, 0, 1500000, 1000000, 5000000), C(100000, 1)},
          "gcra borrow");
  LimitSpec step =
      LimitSpec::TokenBucket(10, absl::Seconds(1), 10, Refill::kStepwise);
  step.max_borrow = absl::Seconds(2);
  RunBoth(step, "bs",
          {E(0, 10, true, 0, 0, 1000000, 0, 1),
           E(0, 15, true, 0, 0, 3000000, 2000000, 10000000),
           E(0, 1, true, 0, 0, 3000000, 2000000, 10000000), C(1500000, 1),
           Call{2000000, 3, 500000}},
          "stepwise borrow");
}

TEST_F(LuaVectorsTest, Composites) {
  // 1 per calendar day (UTC+8) and 3 per rolling 7 days.
  std::vector<Call> calls;
  for (int i = 0; i < 30; ++i) {
    calls.push_back(C(i * 43200000000 / 2 + i * 977, 1));
  }
  RunBoth(DailyAndWeeklyQuota(), "quota", calls, "daily+weekly");
  RunBoth(
      Composite({LimitSpec::Gcra(100, absl::Seconds(1), 20),
                 LimitSpec::SlidingWindowCounter(150, absl::Seconds(2)),
                 LimitSpec::FixedWindow(1000, absl::Minutes(1)),
                 LimitSpec::SlidingWindowLog(120, absl::Seconds(2))}),
      "four",
      [] {
        std::vector<Call> v;
        for (int i = 0; i < 300; ++i) v.push_back(C(i * 7919, 1 + i % 5));
        return v;
      }(),
      "four bands");
}

// -------------------------------------------------------------- randomized

// 2500 random calls (testing::RandomScriptCalls) on each spec; the seed
// replays a failure.
struct RandomCase {
  std::string name;
  LimitSpec spec;
  uint64_t seed = 0;  // set by RandomCases
};

void PrintTo(const RandomCase& c, std::ostream* os) { *os << c.name; }

std::vector<RandomCase> RandomCases() {
  LimitSpec b = LimitSpec::Gcra(13, absl::Milliseconds(1700), 6);
  b.max_borrow = absl::Milliseconds(900);
  LimitSpec sb =
      LimitSpec::TokenBucket(4, absl::Milliseconds(250), 4, Refill::kStepwise);
  sb.max_borrow = absl::Milliseconds(600);
  LimitSpec fr = LimitSpec::FixedWindow(9, absl::Milliseconds(700));
  fr.bands[0].anchor = WindowAnchor::kFirstRequest;
  LimitSpec lq = LimitSpec::SlidingWindowLog(50, absl::Milliseconds(999));
  lq.bands[0].max_log_entries = 7;
  LimitSpec lg = LimitSpec::SlidingWindowLog(6, absl::Seconds(1));
  lg.bands[0].log_granularity = absl::Milliseconds(300);
  lg.bands[0].window_offset = absl::Milliseconds(71);
  std::vector<RandomCase> out = {
      {"token_bucket_burst_3", LimitSpec::TokenBucket(7, absl::Seconds(1), 3)},
      {"gcra_1e9_per_s", LimitSpec::Gcra(1000000000, absl::Seconds(1))},
      {"gcra_3_per_week", LimitSpec::Gcra(3, absl::Hours(24 * 7), 3)},
      {"gcra_borrowing", b},
      {"stepwise_burst_12", LimitSpec::TokenBucket(5, absl::Milliseconds(300),
                                                   12, Refill::kStepwise)},
      {"stepwise_borrowing", sb},
      {"fixed_window_offset", LimitSpec::FixedWindow(9, absl::Milliseconds(700),
                                                     absl::Milliseconds(123))},
      {"fixed_window_first_request", fr},
      {"sliding_counter",
       LimitSpec::SlidingWindowCounter(11, absl::Milliseconds(900))},
      {"sliding_log", LimitSpec::SlidingWindowLog(8, absl::Milliseconds(800))},
      {"sliding_log_bounded", lq},
      {"sliding_log_granular", lg},
      {"bucket_and_log",
       Composite({LimitSpec::TokenBucket(20, absl::Seconds(1)),
                  LimitSpec::SlidingWindowLog(15, absl::Milliseconds(1500))})},
  };
  for (size_t i = 0; i < out.size(); ++i) out[i].seed = 0x5eed0000 + i;
  return out;
}

class LuaRandomizedTest : public LuaVectorsTest,
                          public ::testing::WithParamInterface<RandomCase> {};

TEST_P(LuaRandomizedTest, Agreement) {
  const RandomCase& c = GetParam();
  std::vector<Call> calls;
  for (const testing::ScriptCall& s :
       testing::RandomScriptCalls(c.spec, c.seed, 2500)) {
    calls.push_back(Call{s.t_us, s.cost, s.max_wait_us});
  }
  SCOPED_TRACE(absl::StrCat("seed ", c.seed));
  RunBoth(c.spec, "rand", calls, absl::StrCat("randomized seed=", c.seed));
}

INSTANTIATE_TEST_SUITE_P(Specs, LuaRandomizedTest,
                         ::testing::ValuesIn(RandomCases()),
                         testing::ParamName());

}  // namespace
}  // namespace tokenlease
