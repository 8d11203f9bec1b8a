// The acquire script against the local engine: the same calls through both
// must give the same decisions (the local engine's ns rounded up to us).
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "redis/redis_server.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "tokenlease/clock.h"
#include "tokenlease/limiter.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::AcquireArgs;
using internal::AcquireResult;

// 2026-01-01T00:00:00Z in us.
constexpr int64_t kT0 = int64_t{1767225600} * 1000000;

int64_t CeilUs(int64_t ns) { return ns < 0 ? ns : (ns + 999) / 1000; }

class LuaVectorsTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    server_ = new testing::RedisServer();
    ASSERT_TRUE(server_->Start().ok());
    auto client = testing::SyncClient::Connect(server_->port());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = client->release();
  }
  static void TearDownTestSuite() {
    delete client_;
    delete server_;
  }

  static internal::RedisReply Eval(const std::vector<std::string>& args) {
    std::vector<std::string> cmd = {"EVAL",
                                    std::string(internal::lua::kAcquireScript)};
    cmd.insert(cmd.end(), args.begin(), args.end());
    return client_->Run(cmd);
  }

  static AcquireResult Acquire(const LimitSpec& spec, const std::string& name,
                               int64_t now_us, int64_t cost,
                               int64_t max_wait_us = 0) {
    AcquireArgs a;
    a.wanted = a.minimum = cost;
    a.max_wait_us = max_wait_us;
    a.now_us = now_us;
    auto r = internal::ParseAcquireReply(
        Eval(internal::AcquireArguments(spec, "vec:", name, a)));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : AcquireResult{};
  }

  static testing::RedisServer* server_;
  static testing::SyncClient* client_;
};
testing::RedisServer* LuaVectorsTest::server_ = nullptr;
testing::SyncClient* LuaVectorsTest::client_ = nullptr;

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
      auto r =
          (*limiter)->Reserve(name, c.cost, absl::Microseconds(c.max_wait_us));
      ASSERT_TRUE(r.ok()) << r.status();
      d = r->decision;
      wait_ns = r->wait_ns;
    } else {
      d = (*limiter)->TryAcquire(name, c.cost, now_us * 1000);
    }
    const AcquireResult lua =
        LuaVectorsTest::Acquire(spec, name, now_us, c.cost, c.max_wait_us);
    const Decision ld = internal::ToDecision(lua, DecisionSource::kDirect);
    const std::string where =
        absl::StrCat(context, " call #", i, " t=+", c.t_us, "us cost=", c.cost,
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

Band MakeBand(Algorithm a, int64_t limit, absl::Duration period,
              int64_t burst = 0) {
  Band b;
  b.algorithm = a;
  b.limit = limit;
  b.period = period;
  b.burst = burst;
  return b;
}
LimitSpec Spec(std::vector<Band> bands,
               absl::Duration max_borrow = absl::ZeroDuration()) {
  LimitSpec s;
  s.bands = std::move(bands);
  s.max_borrow = max_borrow;
  return s;
}

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
  Band day = MakeBand(Algorithm::kSlidingWindowLog, 3, absl::Hours(24 * 7));
  day.log_granularity = absl::Hours(24);
  day.window_offset = -absl::Hours(8);
  RunBoth(Spec({day}), "slg",
          {C(0, 1), C(3600000000, 1), C(86400000000, 1), C(86400000001, 1),
           C(7 * 86400000000 - 28800000001, 1),
           C(7 * 86400000000 - 28800000000, 1)},
          "sliding log day granule");
  Band q = MakeBand(Algorithm::kSlidingWindowLog, 1000, absl::Seconds(1));
  q.max_log_entries = 8;  // quantum 125 ms
  std::vector<Call> calls;
  for (int i = 0; i < 60; ++i) calls.push_back(C(i * 37000, 30));
  RunBoth(Spec({q}), "slq", calls, "sliding log quantised");
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
  Band daily = MakeBand(Algorithm::kFixedWindow, 1, absl::Hours(24));
  daily.window_offset = -absl::Hours(8);
  Band weekly = MakeBand(Algorithm::kSlidingWindowLog, 3, absl::Hours(24 * 7));
  weekly.log_granularity = absl::Hours(24);
  weekly.window_offset = -absl::Hours(8);
  std::vector<Call> calls;
  for (int i = 0; i < 30; ++i) {
    calls.push_back(C(i * 43200000000 / 2 + i * 977, 1));
  }
  RunBoth(Spec({daily, weekly}), "quota", calls, "daily+weekly");
  RunBoth(
      Spec({MakeBand(Algorithm::kGcra, 100, absl::Seconds(1), 20),
            MakeBand(Algorithm::kSlidingWindowCounter, 150, absl::Seconds(2)),
            MakeBand(Algorithm::kFixedWindow, 1000, absl::Minutes(1)),
            MakeBand(Algorithm::kSlidingWindowLog, 120, absl::Seconds(2))}),
      "four",
      [] {
        std::vector<Call> v;
        for (int i = 0; i < 300; ++i) v.push_back(C(i * 7919, 1 + i % 5));
        return v;
      }(),
      "four bands");
}

// -------------------------------------------------------------- randomized

std::vector<LimitSpec> RandomSpecs() {
  std::vector<LimitSpec> out;
  out.push_back(LimitSpec::TokenBucket(7, absl::Seconds(1), 3));
  out.push_back(LimitSpec::Gcra(1000000000, absl::Seconds(1)));
  out.push_back(LimitSpec::Gcra(3, absl::Hours(24 * 7), 3));
  LimitSpec b = LimitSpec::Gcra(13, absl::Milliseconds(1700), 6);
  b.max_borrow = absl::Milliseconds(900);
  out.push_back(b);
  out.push_back(LimitSpec::TokenBucket(5, absl::Milliseconds(300), 12,
                                       Refill::kStepwise));
  LimitSpec sb =
      LimitSpec::TokenBucket(4, absl::Milliseconds(250), 4, Refill::kStepwise);
  sb.max_borrow = absl::Milliseconds(600);
  out.push_back(sb);
  out.push_back(LimitSpec::FixedWindow(9, absl::Milliseconds(700),
                                       absl::Milliseconds(123)));
  LimitSpec fr = LimitSpec::FixedWindow(9, absl::Milliseconds(700));
  fr.bands[0].anchor = WindowAnchor::kFirstRequest;
  out.push_back(fr);
  out.push_back(LimitSpec::SlidingWindowCounter(11, absl::Milliseconds(900)));
  out.push_back(LimitSpec::SlidingWindowLog(8, absl::Milliseconds(800)));
  LimitSpec lq = LimitSpec::SlidingWindowLog(50, absl::Milliseconds(999));
  lq.bands[0].max_log_entries = 7;
  out.push_back(lq);
  LimitSpec lg = LimitSpec::SlidingWindowLog(6, absl::Seconds(1));
  lg.bands[0].log_granularity = absl::Milliseconds(300);
  lg.bands[0].window_offset = absl::Milliseconds(71);
  out.push_back(lg);
  out.push_back(Spec(
      {MakeBand(Algorithm::kTokenBucket, 20, absl::Seconds(1)),
       MakeBand(Algorithm::kSlidingWindowLog, 15, absl::Milliseconds(1500))}));
  return out;
}

TEST_F(LuaVectorsTest, RandomizedAgreement) {
  const std::vector<LimitSpec> specs = RandomSpecs();
  for (size_t si = 0; si < specs.size(); ++si) {
    const LimitSpec& spec = specs[si];
    const uint64_t seed = 0x5eed0000 + si;
    std::mt19937_64 gen(seed);  // deterministic: the seed replays a failure
    auto uniform = [&gen](int64_t lo, int64_t hi) {  // [lo, hi)
      return std::uniform_int_distribution<int64_t>(lo, hi - 1)(gen);
    };
    auto chance = [&gen](double p) {
      return std::bernoulli_distribution(p)(gen);
    };
    const Band& b0 = spec.bands[0];
    const int64_t period_us = absl::ToInt64Microseconds(b0.period);
    const int64_t cap = std::max<int64_t>(b0.burst, b0.limit);
    const bool buckets = [&] {
      for (const Band& b : spec.bands) {
        if (b.algorithm != Algorithm::kTokenBucket &&
            b.algorithm != Algorithm::kGcra)
          return false;
      }
      return true;
    }();
    std::vector<Call> calls;
    int64_t t = uniform(0, period_us);
    for (int i = 0; i < 2500; ++i) {
      switch (uniform(0, 4)) {
        case 0:
          break;  // same instant
        case 1:
          t += uniform(1, 1000);
          break;
        case 2:
          t += uniform(1, period_us / cap + 2);
          break;
        default:
          t += uniform(0, 2 * period_us);
          break;
      }
      int64_t cost = uniform(0, 3);
      if (chance(0.1)) cost = uniform(0, cap + 2);
      // The first call charges: a key the local engine creates without a
      // charge anchors a stepwise bucket where the script (which stores
      // nothing for a full bucket) does not; both are equivalent states.
      if (i == 0) cost = 1;
      Call c = C(t, cost);
      if (buckets && spec.max_borrow > absl::ZeroDuration() && chance(0.3)) {
        c.max_wait_us = uniform(1, 2 * period_us);
      }
      calls.push_back(c);
    }
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    RunBoth(spec, absl::StrCat("rand", si), calls,
            absl::StrCat("randomized seed=", seed));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace tokenlease
