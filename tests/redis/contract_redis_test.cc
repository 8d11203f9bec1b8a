// The contract of the Redis modes (docs/design.md, "The contract") against a
// real redis-server: UpdateSpec in direct and leased mode (tokens consumed
// stay consumed; what Redis could not take over is refused), shadow mode in
// direct mode, and the failure mode every call falls back to by default
// (fail_closed: a decision, counted and logged, never an error status).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "testing/redis_test.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;

// A slow refill (one token per 6 minutes and more): nothing refills while a
// test runs, so every count below is exact.
LimitSpec Hourly(int64_t limit) {
  return LimitSpec::TokenBucket(limit, absl::Hours(1));
}

class ContractRedisTest : public testing::RedisTest {
 protected:
  std::unique_ptr<DirectLimiter> MakeDirect(LimitSpec spec,
                                            DirectLimiterOptions o = {}) {
    o.connection = NewConnection();
    o.key_prefix = prefix();
    o.timeout = absl::Seconds(5);
    auto limiter = DirectLimiter::Create(std::move(spec), o);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  std::unique_ptr<LeasedLimiter> MakeLeased(LimitSpec spec) {
    LeasedLimiterOptions o;
    o.connection = NewConnection();
    o.key_prefix = prefix();
    // Nothing beyond what Redis grants: the counts are Redis's.
    o.lease.cold_key_policy = ColdKeyPolicy::kDeny;
    auto limiter = LeasedLimiter::Create(std::move(spec), o);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // Decides through `h` until Redis refuses a lease for the key (a cached
  // refusal after an applied reply); returns how many were admitted.
  static int DrainLeases(LeasedLimiter& limiter, const LeasedLimiter::Handle& h,
                         std::string_view key) {
    int admitted = 0;
    for (int i = 0; i < 10'000; ++i) {
      if (limiter.TryAcquire(h).allowed) {
        ++admitted;
        continue;
      }
      // The denial asked for a lease: wait until its answer is applied.
      EXPECT_TRUE(limiter.Sync(absl::Seconds(10)).ok());
      absl::StatusOr<LeaseKeyInfo> info = limiter.Inspect(key);
      EXPECT_TRUE(info.ok());
      if (info.ok() && info->denied && info->balance == 0) return admitted;
    }
    ADD_FAILURE() << "Redis never refused a lease";
    return admitted;
  }
};

TEST_F(ContractRedisTest, DirectUpdateSpecKeepsWhatWasConsumed) {
  auto limiter = MakeDirect(Hourly(3));
  ASSERT_NE(limiter, nullptr);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(limiter->TryAcquire("k").source, DecisionSource::kDirect);
  }
  EXPECT_FALSE(limiter->TryAcquire("k").allowed);
  ASSERT_TRUE(limiter->UpdateSpec(Hourly(5)).ok());
  EXPECT_EQ(limiter->spec().bands[0].limit, 5);
  // 3 of 5 were consumed: 2 more, then none.
  EXPECT_TRUE(limiter->TryAcquire("k").allowed);
  EXPECT_TRUE(limiter->TryAcquire("k").allowed);
  const Decision d = limiter->TryAcquire("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kDirect);
}

TEST_F(ContractRedisTest, UpdateSpecRefusesWhatRedisCouldNotTakeOver) {
  auto direct = MakeDirect(LimitSpec::FixedWindow(5, absl::Minutes(1)));
  ASSERT_NE(direct, nullptr);
  absl::Status s = direct->UpdateSpec(Hourly(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bands[0]"));
  EXPECT_THAT(s.message(), HasSubstr("algorithm"));
  s = direct->UpdateSpec(LimitSpec::FixedWindow(5, absl::Minutes(2)));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("length or alignment"));
  // Another limit on the same window is what the scripts take over.
  EXPECT_TRUE(
      direct->UpdateSpec(LimitSpec::FixedWindow(9, absl::Minutes(1))).ok());
  EXPECT_EQ(direct->spec().bands[0].limit, 9);

  auto leased = MakeLeased(Hourly(10));
  ASSERT_NE(leased, nullptr);
  LimitSpec borrowing = Hourly(10);
  borrowing.max_borrow = absl::Seconds(1);
  s = leased->UpdateSpec(borrowing);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("never borrows"));
  LimitSpec two_bands = Hourly(10);
  two_bands.bands.push_back(Hourly(100).bands[0]);
  EXPECT_EQ(leased->UpdateSpec(two_bands).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(leased->spec().bands.size(), 1u);
}

TEST_F(ContractRedisTest, LeasedUpdateSpecKeepsWhatWasConsumed) {
  auto limiter = MakeLeased(Hourly(10));
  ASSERT_NE(limiter, nullptr);
  auto h = limiter->Resolve("k");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(DrainLeases(*limiter, *h, "k"), 10);
  // The raised limit lifts the cached refusal at the reconciler's next
  // step; 10 of 20 were consumed, so 10 more, then Redis refuses again.
  ASSERT_TRUE(limiter->UpdateSpec(Hourly(20)).ok());
  EXPECT_EQ(limiter->spec().bands[0].limit, 20);
  EXPECT_EQ(DrainLeases(*limiter, *h, "k"), 10);
  // Redis agrees: a direct limiter of the same spec finds the key spent.
  ASSERT_TRUE(limiter->ReturnAll(absl::Seconds(10)).ok());
  auto direct = MakeDirect(Hourly(20));
  ASSERT_NE(direct, nullptr);
  EXPECT_FALSE(direct->TryAcquire("k").allowed);
}

TEST_F(ContractRedisTest, DirectShadowModeAdmitsWhatItWouldDeny) {
  DirectLimiterOptions o;
  o.shadow = true;
  auto limiter = MakeDirect(Hourly(1), o);
  ASSERT_NE(limiter, nullptr);
  EXPECT_EQ(limiter->TryAcquire("k").source, DecisionSource::kDirect);
  const Decision shadowed = limiter->TryAcquire("k");
  EXPECT_TRUE(shadowed.allowed);
  EXPECT_EQ(shadowed.source, DecisionSource::kShadow);
  const SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.mode, LimiterMode::kDirect);
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kDirect), 1u);
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kShadow), 1u);
  EXPECT_EQ(s.redis_calls, 2u);
  // What shadow mode admitted was charged nowhere: without shadow mode the
  // key is exactly spent, not in debt.
  auto enforcing = MakeDirect(Hourly(1));
  ASSERT_NE(enforcing, nullptr);
  EXPECT_EQ(enforcing->TryAcquire("k", 0).remaining, 0);
}

// With no failure mode chosen, a call Redis cannot answer is denied by
// fail_closed: a decision with its retry hint, counted and logged.
TEST_F(ContractRedisTest, DirectCallsFailClosedByDefault) {
  testing::LogLines log;
  DirectLimiterOptions o;
  o.redis.url = "redis://127.0.0.1:1";  // nothing listens there
  o.redis.connect_timeout = absl::Milliseconds(200);
  o.redis.log = log.Sink();
  o.key_prefix = prefix();
  o.timeout = absl::Milliseconds(300);
  auto limiter = DirectLimiter::Create(Hourly(5), o);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  const Decision d = (*limiter)->TryAcquire("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kFailClosed);
  EXPECT_GT(d.retry_after_ns, 0);
  const SharedLimitStats s = (*limiter)->stats();
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kFailClosed), 1u);
  EXPECT_EQ(s.redis_errors, 1u);
  EXPECT_EQ(s.key_errors, 0u);
  bool logged = false;
  for (const std::string& line : log.lines()) {
    logged |= absl::StrContains(line, "Redis gave no decision") &&
              absl::StrContains(line, "fail_closed decides meanwhile");
  }
  EXPECT_TRUE(logged) << "no log line says why the call was denied";
}

// A key of another type is a key error: the failure mode decides it, the
// counters say so, and the log names the key.
TEST_F(ContractRedisTest, DirectKeyErrorsAreCountedAndLogged) {
  testing::LogLines log;
  DirectLimiterOptions o;
  o.failure_mode = FailureMode::kFailOpen;
  RedisOptions ro;
  ro.url = url();
  ro.log = log.Sink();
  auto connection = RedisConnection::Create(ro);
  ASSERT_TRUE(connection.ok());
  o.connection = *connection;
  o.key_prefix = prefix();
  o.timeout = absl::Seconds(5);
  auto limiter = DirectLimiter::Create(Hourly(5), o);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  // The first band's key of "k" (docs/lua-protocol.md) holds a list.
  client().Run({"RPUSH", absl::StrCat("{", prefix(), "k}:b0"), "x"});
  const Decision d = (*limiter)->TryAcquire("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kFailOpen);
  const SharedLimitStats s = (*limiter)->stats();
  EXPECT_EQ(s.key_errors, 1u);
  EXPECT_EQ(s.redis_errors, 1u);
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFailOpen), 1u);
  bool named = false;
  for (const std::string& line : log.lines()) {
    named |= absl::StrContains(line, absl::StrCat(prefix(), "k"));
  }
  EXPECT_TRUE(named) << "no log line names the key";
}

}  // namespace
}  // namespace tokenlease
