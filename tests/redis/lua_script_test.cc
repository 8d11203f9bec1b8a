// The scripts on their own: TIME, partial grants, charges, release, TTLs,
// errors.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "testing/redis_test.h"
#include "testing/scenarios.h"
#include "testing/scripts.h"
#include "testing/specs.h"
#include "tokenlease/decision.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::AcquireArgs;
using internal::RedisReply;
using internal::ReleaseArgs;
using testing::At;
using testing::CountIn;
using testing::DailyAndWeeklyQuota;
using testing::LeaseAt;
using testing::MaxInAnySpan;

constexpr int64_t kT0 = int64_t{1767225600} * 1000000;

// The scripts on keys under "t:" (tests are isolated by the FLUSHALL
// before each).
class LuaScriptTest : public testing::ScriptTest {
 protected:
  LuaScriptTest() : ScriptTest("t:") {}
  // One token: denied 1 us before `t`, granted at `t`; the grant.
  internal::AcquireResult OpensAt(const LimitSpec& spec,
                                  const std::string& name, int64_t t) {
    SCOPED_TRACE(absl::StrCat("OpensAt(", name, ", ", t, ")"));
    EXPECT_EQ(Acquire(spec, name, At(t - 1, 1, 1)).granted, 0);
    const internal::AcquireResult r = Acquire(spec, name, At(t, 1, 1));
    EXPECT_EQ(r.granted, 1);
    return r;
  }
  // One 1-token acquire per arrival; the times of those granted.
  std::vector<int64_t> AdmittedTimes(const LimitSpec& spec,
                                     const std::string& name,
                                     const std::vector<int64_t>& arrivals) {
    std::vector<int64_t> out;
    for (int64_t t : arrivals) {
      const internal::AcquireResult r = Acquire(spec, name, At(t, 1, 1));
      EXPECT_EQ(r.now_us, t);
      if (r.granted == 1) out.push_back(t);
    }
    return out;
  }
};

TEST_F(LuaScriptTest, EvalShaMatchesEmbeddedDigest) {
  RedisReply r =
      Run({"SCRIPT", "LOAD", std::string(internal::lua::kAcquireScript)});
  EXPECT_EQ(r.str, internal::lua::kAcquireSha1);
  r = Run({"SCRIPT", "LOAD", std::string(internal::lua::kReleaseScript)});
  EXPECT_EQ(r.str, internal::lua::kReleaseSha1);
}

TEST_F(LuaScriptTest, RedisTimeIsCloseToTheLocalClock) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const int64_t before = absl::GetCurrentTimeNanos() / 1000;
  const auto r = Acquire(spec, "time", At(-1, 1, 1));
  const int64_t after = absl::GetCurrentTimeNanos() / 1000;
  EXPECT_EQ(r.granted, 1);
  EXPECT_GE(r.now_us, before - 2000);
  EXPECT_LE(r.now_us, after + 2000);
}

TEST_F(LuaScriptTest, PartialGrantsTakeTheLargestAmountAllBandsAllow) {
  LimitSpec spec;
  spec.bands = LimitSpec::Gcra(10, absl::Seconds(1)).bands;
  spec.bands.push_back(LimitSpec::FixedWindow(6, absl::Minutes(1)).bands[0]);
  auto r = Acquire(spec, "partial", At(kT0, 8, 2));
  EXPECT_EQ(r.granted, 6);  // the window allows 6
  r = Acquire(spec, "partial", At(kT0, 8, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 60000000);
  r = Acquire(spec, "partial", At(kT0, 20, 20));
  EXPECT_EQ(r.retry_after_us, -1);  // more than the window can ever hold
}

TEST_F(LuaScriptTest, ChargeIsBoundedByMaxDebt) {
  const LimitSpec spec = LimitSpec::FixedWindow(5, absl::Minutes(1));
  AcquireArgs a = At(kT0, 9, 9);
  a.charge = true;
  a.max_debt = 2;
  auto r = Acquire(spec, "charge", a);
  EXPECT_EQ(r.granted, 7);  // 5 + 2 of debt
  EXPECT_EQ(r.remaining, 0);
  r = Acquire(spec, "charge", At(kT0 + 1, 1, 1));
  EXPECT_EQ(r.granted, 0);
}

TEST_F(LuaScriptTest, ReleaseAppliesAtMostOncePerLease) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const auto g = Acquire(spec, "rel", LeaseAt(kT0, 10, 10, "lease-1"));
  ASSERT_EQ(g.granted, 10);
  ReleaseArgs rel{4, "lease-1", g.now_us, kT0};
  EXPECT_EQ(Release(spec, "rel", rel), 4);
  EXPECT_EQ(Release(spec, "rel", rel), 0);
  EXPECT_EQ(Acquire(spec, "rel", At(kT0, 10, 1)).granted, 4);
}

// The case: two grants drain the bucket; one of them released for
// more than it got used to credit the difference, tokens the other grant
// holds. The recorded grant caps it; an id never granted gives back none.
TEST_F(LuaScriptTest, ReleaseGivesBackAtMostItsGrant) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  ASSERT_EQ(Acquire(spec, "cap", LeaseAt(kT0, 4, 4, "a")).granted, 4);
  ASSERT_EQ(Acquire(spec, "cap", LeaseAt(kT0, 6, 6, "b")).granted, 6);
  EXPECT_EQ(Release(spec, "cap", {10, "a", kT0, kT0}), 4);
  EXPECT_EQ(Release(spec, "cap", {10, "never", kT0, kT0}), 0);
  EXPECT_EQ(Acquire(spec, "cap", At(kT0, 10, 1)).granted, 4);
  EXPECT_EQ(Run({"EXISTS", "{t:cap}:r:a", "{t:cap}:r:never"}).integer, 0);
  // The other grant's record lives until its release horizon (a full
  // refill: 1 s) plus the margin of an explicit time (10 minutes).
  const int64_t ttl = Run({"PTTL", "{t:cap}:r:b"}).integer;
  EXPECT_GT(ttl, 600000);
  EXPECT_LE(ttl, 601000);
  EXPECT_EQ(Run({"GET", "{t:cap}:r:b"}).str, absl::StrCat("6 ", kT0));
}

// A release uses the recorded grant time, whatever granted_at_us says: a
// window credits only the window the grant was made in.
TEST_F(LuaScriptTest, ReleaseUsesTheRecordedGrantTime) {
  const LimitSpec spec = LimitSpec::FixedWindow(5, absl::Seconds(10));
  ASSERT_EQ(Acquire(spec, "w", LeaseAt(kT0, 5, 5, "old")).granted, 5);
  const int64_t next = kT0 + 10000000;
  ASSERT_EQ(Acquire(spec, "w", At(next, 5, 5)).granted, 5);
  // Claims the grant was in the current window: it was not.
  EXPECT_EQ(Release(spec, "w", {5, "old", next, next + 1}), 0);
  EXPECT_EQ(Acquire(spec, "w", At(next + 2, 1, 1)).granted, 0);
}

// A charge records no grant: acquire.lua refuses a lease key with it.
TEST_F(LuaScriptTest, AChargeWithALeaseKeyIsRefused) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  AcquireArgs a = At(kT0, 3, 0);
  a.charge = true;
  a.max_debt = 5;
  std::vector<std::string> args =
      internal::AcquireArguments(spec, "t:", "ch", a);
  // AcquireArguments leaves a lease key out of a charge: one added by hand.
  args.insert(args.begin() + 2, internal::LeaseKey("t:", "ch", "x"));
  args[0] = std::to_string(std::stoi(args[0]) + 1);
  auto r =
      internal::ParseAcquireReply(Eval(internal::lua::kAcquireScript, args));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(
      absl::StrContains(r.status().message(), "a charge records no grant"))
      << r.status();
  EXPECT_EQ(Run({"EXISTS", "{t:ch}:b0", "{t:ch}:r:x"}).integer, 0);
}

TEST_F(LuaScriptTest, ReleaseIntoALaterWindowDoesNothing) {
  const LimitSpec spec = LimitSpec::FixedWindow(5, absl::Seconds(10));
  ASSERT_EQ(Acquire(spec, "relw", LeaseAt(kT0, 5, 5, "l")).granted, 5);
  ASSERT_EQ(Acquire(spec, "relw", At(kT0 + 10000000, 1, 1)).granted, 1);
  EXPECT_EQ(Release(spec, "relw", {3, "l", kT0, kT0 + 10000001}), 0);
  EXPECT_EQ(Acquire(spec, "relw", At(kT0 + 10000002, 5, 1)).granted, 4);
}

TEST_F(LuaScriptTest, EveryKeyHasATtlNoLongerThanTheResetPlusMargin) {
  LimitSpec spec;
  spec.bands = LimitSpec::Gcra(10, absl::Seconds(1)).bands;
  spec.bands.push_back(
      LimitSpec::SlidingWindowLog(100, absl::Seconds(30)).bands[0]);
  spec.bands.push_back(
      LimitSpec::SlidingWindowCounter(100, absl::Seconds(20)).bands[0]);
  const auto r = Acquire(spec, "ttl", At(-1, 5, 5));
  ASSERT_EQ(r.granted, 5);
  for (const std::string& key : internal::BandKeys(spec, "t:", "ttl")) {
    const RedisReply t = Run({"PTTL", key});
    EXPECT_GT(t.integer, 0) << key;  // -1 (no TTL) or -2 (missing) fail
    // Reset of the slowest band (sliding counter: up to 2 periods) + 1 s.
    EXPECT_LE(t.integer, 41000) << key;
  }
  // A band back at its initial state has no key at all.
  const LimitSpec one = LimitSpec::Gcra(10, absl::Seconds(1));
  const auto z = Acquire(one, "idle", At(kT0, 0, 0));
  EXPECT_EQ(z.granted, 0);
  EXPECT_EQ(Run({"EXISTS", "{t:idle}:b0"}).integer, 0);
}

TEST_F(LuaScriptTest, SlidingLogKeepsOneEntryPerGrantUpToTheBound) {
  LimitSpec spec = LimitSpec::SlidingWindowLog(1000, absl::Seconds(1));
  spec.bands[0].max_log_entries = 16;
  for (int i = 0; i < 200; ++i) {
    Acquire(spec, "bound", At(kT0 + i * 1000, 3, 3));
  }
  EXPECT_LE(Run({"ZCARD", "{t:bound}:b0"}).integer, 17);
}

TEST_F(LuaScriptTest, WrongTypeIsAClearErrorNotACrash) {
  Run({"HSET", "{t:wt}:b0", "x", "1"});
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  auto r = internal::ParseAcquireReply(
      Eval(internal::lua::kAcquireScript,
           internal::AcquireArguments(spec, "t:", "wt", At(kT0, 1, 1))));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "{t:wt}:b0"));
  EXPECT_EQ(Run({"PING"}).str, "PONG");
}

TEST_F(LuaScriptTest, UnknownVersionAndBadArgumentsAreRejected) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  std::vector<std::string> args =
      internal::AcquireArguments(spec, "t:", "bad", At(kT0, 1, 1));
  args[2] = "99";  // after numkeys and the key
  auto r =
      internal::ParseAcquireReply(Eval(internal::lua::kAcquireScript, args));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "protocol version"));
  r = internal::ParseAcquireReply(
      Eval(internal::lua::kAcquireScript,
           internal::AcquireArguments(spec, "t:", "bad", At(kT0, -1, -1))));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "wanted is -1"))
      << r.status();
}

TEST_F(LuaScriptTest, ValidateScriptSpecNamesTheField) {
  LimitSpec s = LimitSpec::Gcra(10, absl::Nanoseconds(1500500));
  auto st = internal::ValidateScriptSpec(s);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "bands[0].period")) << st;
  s = LimitSpec::Gcra(int64_t{1} << 40, absl::Seconds(1));
  EXPECT_FALSE(internal::ValidateScriptSpec(s).ok());
  EXPECT_TRUE(internal::ValidateScriptSpec(
                  LimitSpec::Gcra(1000000000, absl::Seconds(1)))
                  .ok());
}

// ------------------------------------------------------------------------
// The scenarios of shared/reference/seed-algorithms.md through the acquire
// script on a real redis-server, with explicit times (tests/scenario_test.cc
// replays the same ones on the local engine; the counts are the same).

constexpr int64_t kSec = 1000000;  // us
constexpr int64_t kHourUs = 3600 * kSec;
constexpr int64_t kDayUs = 24 * kHourUs;

TEST_F(LuaScriptTest, SeedFixedWindowLetsTwiceTheLimitThroughAcrossABoundary) {
  const std::vector<int64_t> ok =
      AdmittedTimes(LimitSpec::FixedWindow(1000, absl::Seconds(3)), "seed:fw",
                    testing::DoubleBurstArrivals(kT0, kSec));
  EXPECT_EQ(ok.size(), 2000u);  // 1000 in each aligned window
  EXPECT_EQ(CountIn(ok, kT0, kT0 + 3 * kSec), 1000);
  EXPECT_EQ(MaxInAnySpan(ok, 3 * kSec), 1980);  // 980 + 900 + 100
}

TEST_F(LuaScriptTest, SeedFixedWindowBurstBlocksTheRestOfTheWindow) {
  const LimitSpec spec = LimitSpec::FixedWindow(1000, absl::Seconds(3));
  // 1000 in second 1 (one call each).
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(Acquire(spec, "seed:fwb", At(kT0 + i * 1000, 1, 1)).granted, 1)
        << i;
  }
  for (int64_t t = kT0 + kSec; t < kT0 + 3 * kSec; t += kSec / 10) {
    const auto r = Acquire(spec, "seed:fwb", At(t, 1, 1));
    EXPECT_EQ(r.granted, 0);
    EXPECT_EQ(r.remaining, 0);
    EXPECT_EQ(r.retry_after_us, kT0 + 3 * kSec - t);
    EXPECT_EQ(r.reset_after_us, kT0 + 3 * kSec - t);
  }
  const auto r = Acquire(spec, "seed:fwb", At(kT0 + 3 * kSec, 1, 1));
  EXPECT_EQ(r.granted, 1);
  EXPECT_EQ(r.remaining, 999);
}

TEST_F(LuaScriptTest, SeedSlidingLogHoldsTheLimitInEveryWindow) {
  LimitSpec spec = LimitSpec::SlidingWindowLog(1000, absl::Seconds(3));
  spec.bands[0].max_log_entries = 1000;  // one entry per grant: exact
  const std::vector<int64_t> ok =
      AdmittedTimes(spec, "seed:log", testing::DoubleBurstArrivals(kT0, kSec));
  EXPECT_EQ(MaxInAnySpan(ok, 3 * kSec), 1000);
  // The first 1000 all fit; seconds 4-5 get only what expires from them.
  EXPECT_EQ(ok.size(), 1020u);
  EXPECT_EQ(CountIn(ok, kT0 + 3 * kSec, kT0 + 5 * kSec), 20);
  // One ZSET member per live grant, no more than max_log_entries.
  EXPECT_LE(Run({"ZCARD", "{t:seed:log}:b0"}).integer, 1000);
}

TEST_F(LuaScriptTest, SeedSlidingCounterCutsTheDoubleBurst) {
  const std::vector<int64_t> ok =
      AdmittedTimes(LimitSpec::SlidingWindowCounter(1000, absl::Seconds(3)),
                    "seed:ctr", testing::DoubleBurstArrivals(kT0, kSec));
  // An estimate (the previous window is taken as uniform): far below the
  // fixed window's 1980, not exact like the log.
  EXPECT_EQ(MaxInAnySpan(ok, 3 * kSec), 1413);
  // Second 4 (e from 0 to 1 s of 3 s): the previous 1000 weigh
  // 1000 * (3 - e) / 3, so at most 1000 / 3 fit by its end.
  EXPECT_EQ(CountIn(ok, kT0 + 3 * kSec, kT0 + 4 * kSec), 333);
  EXPECT_EQ(CountIn(ok, kT0 + 4 * kSec, kT0 + 5 * kSec), 100);
}

TEST_F(LuaScriptTest, SeedTokenBucketWithoutBorrowingRejectsNow) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  EXPECT_EQ(Acquire(spec, "seed:tb0", At(kT0, 10, 10)).granted, 10);
  auto r = Acquire(spec, "seed:tb0", At(kT0, 3, 3));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 300000);  // 3 tokens at 10/s
  // max_borrow 0: a caller willing to wait still gets nothing now.
  AcquireArgs a = At(kT0, 3, 3);
  a.max_wait_us = 5 * kSec;
  r = Acquire(spec, "seed:tb0", a);
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.wait_us, 0);
  EXPECT_EQ(r.retry_after_us, 300000);
}

TEST_F(LuaScriptTest, SeedTokenBucketBorrowingMakesLaterCallersPay) {
  LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  spec.max_borrow = absl::Seconds(2);
  ASSERT_EQ(Acquire(spec, "seed:tbb", At(kT0, 10, 10)).granted, 10);
  // Pre-consume 5 tokens it does not have: granted, the caller waits 0.5 s.
  AcquireArgs a = At(kT0, 5, 5);
  a.max_wait_us = kSec;
  auto r = Acquire(spec, "seed:tbb", a);
  EXPECT_EQ(r.granted, 5);
  EXPECT_EQ(r.wait_us, 500000);
  EXPECT_EQ(r.retry_after_us, 0);
  EXPECT_EQ(r.remaining, 0);
  EXPECT_EQ(r.reset_after_us, 1500000);  // full again after 15 tokens
  // The next caller pays for the debt: 1 token is 0.5 + 0.1 s away.
  r = Acquire(spec, "seed:tbb", At(kT0, 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 600000);
  // 7 more would need a 1.2 s wait: more than the caller accepts (1 s).
  a = At(kT0, 7, 7);
  a.max_wait_us = kSec;
  r = Acquire(spec, "seed:tbb", a);
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 1200000);
  // 16 more would mean 2.1 s of debt: within the caller's 10 s, beyond
  // max_borrow (2 s). More than the capacity: never without borrowing (-1).
  a = At(kT0, 16, 16);
  a.max_wait_us = 10 * kSec;
  r = Acquire(spec, "seed:tbb", a);
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, -1);
  // Denials charged nothing: the debt is still 0.5 s.
  EXPECT_EQ(OpensAt(spec, "seed:tbb", kT0 + 600000).wait_us, 0);
}

TEST_F(LuaScriptTest, SeedStepwiseBorrowing) {
  LimitSpec spec =
      LimitSpec::TokenBucket(5, absl::Seconds(1), 5, Refill::kStepwise);
  spec.max_borrow = absl::Seconds(3);
  AcquireArgs a = At(kT0, 12, 12);  // 5 now, 7 owed
  a.max_wait_us = 3 * kSec;
  auto r = Acquire(spec, "seed:sb", a);
  EXPECT_EQ(r.granted, 12);
  EXPECT_EQ(r.wait_us, 2 * kSec);  // two steps of 5 repay 7
  EXPECT_EQ(Acquire(spec, "seed:sb", At(kT0, 1, 1)).granted, 0);
  EXPECT_EQ(Acquire(spec, "seed:sb", At(kT0 + 2 * kSec, 3, 3)).granted,
            3);  // -7 + 10 = 3
  r = Acquire(spec, "seed:sb", At(kT0 + 2 * kSec, 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, kSec);
}

TEST_F(LuaScriptTest, SeedStepwiseRefillKeepsTheUnelapsedRemainder) {
  // 5 tokens at each whole second since the bucket began.
  const LimitSpec spec =
      LimitSpec::TokenBucket(5, absl::Seconds(1), 5, Refill::kStepwise);
  const int64_t start = kT0 + 300000;  // the key begins at .3 s
  auto r = Acquire(spec, "seed:step", At(start, 5, 5));
  EXPECT_EQ(r.granted, 5);
  EXPECT_EQ(r.reset_after_us, kSec);
  EXPECT_EQ(Run({"GET", "{t:seed:step}:b0"}).str,
            "0 " + std::to_string(start) +
                " s5/1000000/5");  // tokens, step anchor, stamp
  r = Acquire(spec, "seed:step", At(start + 999999, 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 1);
  // 2.5 s later: two steps (at +1 s and +2 s), capped at capacity 5; the
  // next step is still due at +3 s, not at +3.5 s.
  r = Acquire(spec, "seed:step", At(start + 2500000, 5, 5));
  EXPECT_EQ(r.granted, 5);
  EXPECT_EQ(r.reset_after_us, 500000);
  r = Acquire(spec, "seed:step", At(start + 2500000, 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 500000);
  EXPECT_EQ(OpensAt(spec, "seed:step", start + 3 * kSec).remaining, 4);
}

TEST_F(LuaScriptTest, SeedFunnelGcraWithAThrottleReply) {
  // Capacity 60, 360 per hour: one drop every 10 s.
  const LimitSpec spec = LimitSpec::Gcra(360, absl::Hours(1), 60);
  for (int i = 0; i < 60; ++i) {
    const auto r = Acquire(spec, "seed:user:7", At(kT0, 1, 1));
    ASSERT_EQ(r.granted, 1) << i;
    ASSERT_EQ(r.remaining, 59 - i) << i;
  }
  auto r = Acquire(spec, "seed:user:7", At(kT0, 1, 1));
  EXPECT_EQ(r.granted, 0);
  ThrottleReply reply =
      ToThrottleReply(internal::ToDecision(r, DecisionSource::kDirect), 60);
  EXPECT_EQ(reply.limited, 1);
  EXPECT_EQ(reply.limit, 60);
  EXPECT_EQ(reply.remaining, 0);
  EXPECT_EQ(reply.retry_after_s, 10);
  EXPECT_EQ(reply.reset_after_s, 600);
  r = OpensAt(spec, "seed:user:7", kT0 + 10 * kSec);
  reply = ToThrottleReply(internal::ToDecision(r, DecisionSource::kDirect), 60);
  EXPECT_EQ(reply.limited, 0);
  EXPECT_EQ(reply.retry_after_s, -1);
  EXPECT_EQ(reply.reset_after_s, 600);
  // Memory does not grow with the limit: one short string per key.
  EXPECT_EQ(Run({"TYPE", "{t:seed:user:7}:b0"}).str, "string");
  EXPECT_LT(Run({"STRLEN", "{t:seed:user:7}:b0"}).integer, 40);
}

TEST_F(LuaScriptTest, SeedLeakyBucketAsAQueueSpacesCallers) {
  // 50 per second, burst 1: booked slots 20 ms apart, in arrival order.
  LimitSpec spec = LimitSpec::Gcra(50, absl::Seconds(1), 1);
  spec.max_borrow = absl::Seconds(2);
  for (int i = 0; i < 6; ++i) {
    AcquireArgs a = At(kT0, 1, 1);
    a.max_wait_us = 2 * kSec;
    const auto r = Acquire(spec, "seed:queue", a);
    ASSERT_EQ(r.granted, 1) << i;
    EXPECT_EQ(r.wait_us, i * 20000) << i;
  }
  // A caller that cannot get its turn within its timeout is not charged.
  AcquireArgs a = At(kT0, 1, 1);
  a.max_wait_us = 1000;
  EXPECT_EQ(Acquire(spec, "seed:queue", a).granted, 0);
  a.max_wait_us = 2 * kSec;
  EXPECT_EQ(Acquire(spec, "seed:queue", a).wait_us, 120000);
}

TEST_F(LuaScriptTest, SeedDurationLimiterWindowStartsAtFirstHit) {
  LimitSpec spec = LimitSpec::FixedWindow(3, absl::Seconds(10));
  spec.bands[0].anchor = WindowAnchor::kFirstRequest;
  const int64_t first = kT0 + 4321000;
  auto r = Acquire(spec, "seed:dur", At(first, 1, 1));
  EXPECT_EQ(r.granted, 1);
  EXPECT_EQ(r.remaining, 2);
  EXPECT_EQ(r.reset_after_us, 10 * kSec);  // window_end - now
  EXPECT_EQ(Acquire(spec, "seed:dur", At(first + kSec, 2, 2)).granted, 2);
  r = Acquire(spec, "seed:dur", At(first + 9 * kSec, 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, kSec);
  EXPECT_EQ(Acquire(spec, "seed:dur", At(first + 10 * kSec, 3, 3)).granted, 3);
}

TEST_F(LuaScriptTest, SeedOncePerDayAndThreeTimesPerSevenDays) {
  const LimitSpec spec = DailyAndWeeklyQuota();
  ASSERT_TRUE(internal::ValidateScriptSpec(spec).ok());
  // Local day d starts at kT0 - 8h + d days (kT0 is 08:00 local).
  const int64_t day0 = kT0 - 8 * kHourUs;
  const auto at = [&](int day, int hour) {
    return day0 + day * kDayUs + hour * kHourUs;
  };
  const std::string log_key = "{t:sms:alice}:b1";
  auto r = Acquire(spec, "sms:alice", At(at(0, 10), 1, 1));
  EXPECT_EQ(r.granted, 1);
  EXPECT_EQ(r.remaining, 0);  // the daily band's
  EXPECT_EQ(Run({"GET", "{t:sms:alice}:b0"}).str,
            std::to_string(day0) +
                " 1 f86400000000/a57600000000");  // start, count, stamp
  EXPECT_EQ(Run({"ZRANGE", log_key, "0", "-1"}).elements.size(), 1u);
  // Same day: the daily band rejects, and the weekly band is not charged.
  r = Acquire(spec, "sms:alice", At(at(0, 20), 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, 4 * kHourUs);  // next local midnight
  EXPECT_EQ(Run({"ZCARD", log_key}).integer, 1);
  EXPECT_EQ(Run({"ZSCORE", log_key, std::to_string(day0) + ":1"}).str,
            std::to_string(day0));  // score = start of the local day
  EXPECT_EQ(Acquire(spec, "sms:alice", At(at(1, 9), 1, 1)).granted, 1);
  EXPECT_EQ(Acquire(spec, "sms:alice", At(at(2, 23), 1, 1)).granted, 1);
  // Three in the last seven days: the weekly band rejects on day 3; the
  // daily band, which would allow it, is not charged either.
  r = Acquire(spec, "sms:alice", At(at(3, 12), 1, 1));
  EXPECT_EQ(r.granted, 0);
  EXPECT_EQ(r.retry_after_us, at(7, 0) - at(3, 12));  // day 0 leaves the log
  EXPECT_EQ(Run({"GET", "{t:sms:alice}:b0"}).str,
            std::to_string(at(2, 0)) +
                " 1 f86400000000/a57600000000");  // still day 2's window
  EXPECT_EQ(Acquire(spec, "sms:alice", At(at(6, 23), 1, 1)).granted, 0);
  OpensAt(spec, "sms:alice", at(7, 0));
  EXPECT_EQ(Acquire(spec, "sms:alice", At(at(7, 23), 1, 1)).granted, 0);
  EXPECT_EQ(Run({"ZCARD", log_key}).integer, 3);  // days 1, 2, 7
  // Another user is independent.
  EXPECT_EQ(Acquire(spec, "sms:bob", At(at(3, 12), 1, 1)).granted, 1);
}

TEST_F(LuaScriptTest, SeedCalendarDayBoundaryInUtcPlus8) {
  const LimitSpec spec = DailyAndWeeklyQuota();
  const int64_t local_midnight = kT0 + 16 * kHourUs;  // 16:00 UTC
  EXPECT_EQ(Acquire(spec, "cal", At(local_midnight - 60 * kSec, 1, 1)).granted,
            1);
  EXPECT_EQ(Acquire(spec, "cal", At(local_midnight + 60 * kSec, 1, 1)).granted,
            1);
  EXPECT_EQ(Acquire(spec, "cal", At(local_midnight + 120 * kSec, 1, 1)).granted,
            0);
}

// A log granule that starts before the Unix epoch (an explicit now before
// the window offset) is recorded with a negative score; later calls must
// still parse it.
TEST_F(LuaScriptTest, SlidingLogAcceptsGranulesBeforeTheEpoch) {
  LimitSpec spec = LimitSpec::SlidingWindowLog(3, absl::Seconds(1));
  spec.bands[0].window_offset = absl::Microseconds(-5);
  spec.bands[0].log_granularity = absl::Milliseconds(1);
  auto r = Acquire(spec, "prehistoric", At(16, 1, 1));
  EXPECT_EQ(r.granted, 1);
  r = Acquire(spec, "prehistoric", LeaseAt(20, 2, 2, "prehistoric-1"));
  EXPECT_EQ(r.granted, 2);
  r = Acquire(spec, "prehistoric", At(30, 1, 1));
  EXPECT_EQ(r.granted, 0);
  ReleaseArgs rel;
  rel.amount = 1;
  rel.lease_id = "prehistoric-1";
  rel.granted_at_us = 20;
  rel.now_us = 40;
  EXPECT_EQ(Release(spec, "prehistoric", rel), 1);
}

}  // namespace
}  // namespace tokenlease
