// Failure modes of leased mode (FailureMode, OutageUsage, shadow) against
// a real redis-server that is frozen (SIGSTOP) or killed (kill -9) and
// restarted empty. Time in the limiter is a manual clock that stands
// still, so a lease never expires and the fail_local share never refills
// during a test: the counts below are exact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;

using testing::kWaitBound;
using testing::WaitUntil;

enum class Fault { kFreeze, kKillAndRestartEmpty };

struct ModeCase {
  FailureMode mode;
  Fault fault;
};

std::string CaseName(const ::testing::TestParamInfo<ModeCase>& info) {
  return absl::StrCat(FailureModeName(info.param.mode), "_",
                      info.param.fault == Fault::kFreeze ? "freeze" : "kill");
}

class FailureFixture : public tokenlease::testing::PrivateRedisTest {
 protected:
  // 1000 tokens an hour (nothing refills during a test), decided by
  // `instances` instances.
  std::unique_ptr<LeasedLimiter> Make(LeasedLimiterOptions options) {
    options.connection = NewConnection();
    options.key_prefix = prefix();
    options.clock = &clock_;
    options.lease.cold_key_policy = ColdKeyPolicy::kDeny;
    auto limiter = LeasedLimiter::Create(spec_, options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // Takes a first lease for `h`, then breaks Redis and spends the lease
  // dry; returns once the limiter applies its failure mode.
  void LeaseThenBreak(LeasedLimiter& limiter, const LeasedLimiter::Handle& h,
                      Fault fault) {
    EXPECT_FALSE(limiter.TryAcquire(h).allowed);  // asks for a lease
    ASSERT_TRUE(limiter.Sync(kWaitBound).ok());
    ASSERT_TRUE(limiter.TryAcquire(h).allowed);
    if (fault == Fault::kFreeze) {
      server().Pause();
    } else {
      server().Kill();
    }
    Decision d;
    for (int i = 0; i < 10000; ++i) {
      d = limiter.TryAcquire(h);
      if (d.source != DecisionSource::kLease || !d.allowed) break;
    }
    // A frozen server is down once the refill waited down_after.
    ASSERT_TRUE(WaitUntil(
        [&] { return limiter.connection().health() == RedisHealth::kDown; }));
  }

  // Repairs the fault; returns how long until a decision was paid from a
  // new lease.
  absl::Duration RepairAndTimeTheLease(LeasedLimiter& limiter,
                                       const LeasedLimiter::Handle& h,
                                       Fault fault) {
    if (fault == Fault::kFreeze) {
      server().Resume();
    } else {
      EXPECT_TRUE(server().Restart().ok());
    }
    const absl::Time start = absl::Now();
    EXPECT_TRUE(WaitUntil([&] {
      const Decision d = limiter.TryAcquire(h);
      return d.allowed && d.source == DecisionSource::kLease;
    }));
    return absl::Now() - start;
  }

  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  const LimitSpec spec_ = LimitSpec::TokenBucket(1000, absl::Hours(1));
};

class FailureModeTest : public FailureFixture,
                        public ::testing::WithParamInterface<ModeCase> {};

// During the fault: fail_closed denies, fail_open admits, fail_local admits
// exactly the share (1000 / 4 instances = 250). Leasing resumes after.
TEST_P(FailureModeTest, TheModeDecidesWhileRedisIsAwayAndLeasingResumes) {
  const ModeCase c = GetParam();
  LeasedLimiterOptions options;
  options.failure_mode = c.mode;
  options.fallback_instances = 4;
  auto limiter = Make(options);
  auto h = limiter->Resolve("k");
  ASSERT_TRUE(h.ok());
  LeaseThenBreak(*limiter, *h, c.fault);
  if (HasFailure()) return;
  // The decision that found the lease dry may already have been the mode's.
  const SharedLimitStats before = limiter->stats();
  constexpr int kRequests = 400;
  int admitted = 0;
  for (int i = 0; i < kRequests; ++i) {
    const Decision d = i % 2 == 0 ? limiter->TryAcquire(*h)
                                  : limiter->TryAcquire("k");  // by name too
    admitted += d.allowed;
    EXPECT_EQ(d.source, testing::ModeSource(c.mode));
    if (c.mode == FailureMode::kFailClosed) {
      EXPECT_GT(d.retry_after_ns, 0);
    }
  }
  const SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.mode, LimiterMode::kLeased);
  EXPECT_EQ(s.decisions.Total() - before.decisions.Total(),
            uint64_t{kRequests});
  switch (c.mode) {
    case FailureMode::kFailClosed:
      EXPECT_EQ(admitted, 0);
      EXPECT_EQ(s.decisions.Denied(DecisionSource::kFailClosed) -
                    before.decisions.Denied(DecisionSource::kFailClosed),
                uint64_t{kRequests});
      break;
    case FailureMode::kFailOpen:
      EXPECT_EQ(admitted, kRequests);
      EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFailOpen) -
                    before.decisions.Admitted(DecisionSource::kFailOpen),
                uint64_t{kRequests});
      break;
    case FailureMode::kFailLocal:
      // The share, whole: nothing refills on the stopped clock.
      EXPECT_EQ(admitted + before.decisions.Admitted(DecisionSource::kFallback),
                250u);
      EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFallback), 250u);
      EXPECT_EQ(s.decisions.Denied(DecisionSource::kFallback) -
                    before.decisions.Denied(DecisionSource::kFallback),
                uint64_t{kRequests} - admitted);
      break;
  }
  const absl::Duration took = RepairAndTimeTheLease(*limiter, *h, c.fault);
  // The acceptance figure (250 ms) is measured by the harness
  // (docs/benchmarks.md); under sanitizers on 2 cores a test allows more.
  EXPECT_LT(took, absl::Seconds(5));
  // Back to leases, and the connection is no longer down (the retry hint's
  // return to a round trip is LeaseBookTest.RecoveryRestoresTheRoundTrip...).
  EXPECT_NE(limiter->connection().health(), RedisHealth::kDown);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, FailureModeTest,
    ::testing::Values(
        ModeCase{FailureMode::kFailClosed, Fault::kFreeze},
        ModeCase{FailureMode::kFailOpen, Fault::kFreeze},
        ModeCase{FailureMode::kFailLocal, Fault::kFreeze},
        ModeCase{FailureMode::kFailClosed, Fault::kKillAndRestartEmpty},
        ModeCase{FailureMode::kFailOpen, Fault::kKillAndRestartEmpty},
        ModeCase{FailureMode::kFailLocal, Fault::kKillAndRestartEmpty}),
    CaseName);

// OutageUsage::kCharge: what fail_open admitted while Redis was gone is
// charged when it is back (here to a Redis restarted empty, which would
// otherwise hand out a full burst again).
TEST_F(FailureFixture, ChargedOutageUsageReachesRedis) {
  LeasedLimiterOptions options;
  options.failure_mode = FailureMode::kFailOpen;
  options.outage_usage = OutageUsage::kCharge;
  auto limiter = Make(options);
  auto h = limiter->Resolve("k");
  ASSERT_TRUE(h.ok());
  LeaseThenBreak(*limiter, *h, Fault::kKillAndRestartEmpty);
  if (HasFailure()) return;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(limiter->TryAcquire(*h).source, DecisionSource::kFailOpen);
  }
  RepairAndTimeTheLease(*limiter, *h, Fault::kKillAndRestartEmpty);
  ASSERT_TRUE(limiter->ReturnAll(kWaitBound).ok());
  EXPECT_GE(limiter->stats().lease.tokens_charged, 300u);
  // What Redis has left: at most the burst less the outage's 300 and the
  // decision that saw the new lease.
  DirectLimiterOptions direct_options;
  direct_options.connection = NewConnection();
  direct_options.key_prefix = prefix();
  auto direct = DirectLimiter::Create(spec_, direct_options);
  ASSERT_TRUE(direct.ok());
  const Decision d = (*direct)->TryAcquire("k", 0, kWaitBound);
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_LE(d.remaining, 1000 - 300 - 1);
}

// A refusal cached before Redis went away gives way to the failure mode,
// by handle and by name: the denied key's inline path
// (LeaseDecider::CachedRefusal) asks whether the key's server is down, as
// Slow does. The refusal stays cached through the outage (the clock stands
// still), so only that check tells the two apart.
TEST_F(FailureFixture, ACachedRefusalGivesWayToTheFailureMode) {
  LeasedLimiterOptions options;
  options.failure_mode = FailureMode::kFailOpen;
  auto limiter = Make(options);
  auto h = limiter->Resolve("k");
  ASSERT_TRUE(h.ok());
  // Spends the burst (1000) until Redis refuses a lease.
  for (int i = 0; i < 20'000 && !limiter->Inspect("k")->denied; ++i) {
    if (!limiter->TryAcquire(*h).allowed) {
      ASSERT_TRUE(limiter->Sync(kWaitBound).ok());
    }
  }
  ASSERT_TRUE(limiter->Inspect("k")->denied);
  // The first denial notes the demand (Slow); the rest take the inline path.
  for (int i = 0; i < 20; ++i) {
    const Decision d =
        i % 2 == 0 ? limiter->TryAcquire(*h) : limiter->TryAcquire("k");
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.source, DecisionSource::kLease);
    EXPECT_GT(d.retry_after_ns, 0);
  }
  server().Kill();
  ASSERT_TRUE(WaitUntil(
      [&] { return limiter->connection().health() == RedisHealth::kDown; }));
  ASSERT_TRUE(limiter->Inspect("k")->denied);
  for (int i = 0; i < 20; ++i) {
    const Decision d =
        i % 2 == 0 ? limiter->TryAcquire(*h) : limiter->TryAcquire("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.source, DecisionSource::kFailOpen);
  }
}

// Shadow mode admits what it would deny, counts it, and charges nothing
// for it.
TEST_F(FailureFixture, ShadowModeAdmitsAndCountsDenials) {
  LeasedLimiterOptions options;
  options.shadow = true;
  auto limiter = Make(options);
  int shadow = 0;
  for (int i = 0; i < 50; ++i) {
    const Decision d = limiter->TryAcquire("s");
    EXPECT_TRUE(d.allowed);
    shadow += d.source == DecisionSource::kShadow;
  }
  EXPECT_GE(shadow, 1);
  EXPECT_EQ(limiter->stats().decisions.Admitted(DecisionSource::kShadow),
            static_cast<uint64_t>(shadow));
  // An invalid request is still refused.
  const Decision bad = limiter->TryAcquire("s", -1);
  EXPECT_FALSE(bad.allowed);
  EXPECT_EQ(bad.source, DecisionSource::kInvalidArgument);
  EXPECT_EQ(limiter->stats().decisions.Denied(DecisionSource::kInvalidArgument),
            1u);
}

// Window limits cannot charge an outage's usage: a window that ended must
// not pay in a new one. Refused before any connection is made.
TEST(FailureOptionsTest, ChargeIsRefusedForWindowLimits) {
  LeasedLimiterOptions options;
  options.outage_usage = OutageUsage::kCharge;
  auto l = LeasedLimiter::Create(LimitSpec::FixedWindow(10, absl::Seconds(1)),
                                 options);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(l.status().message(), HasSubstr("bands[0] is a fixed_window"));
  options.outage_usage = static_cast<OutageUsage>(7);
  l = LeasedLimiter::Create(LimitSpec::Gcra(10, absl::Seconds(1)), options);
  EXPECT_THAT(l.status().message(), HasSubstr("outage_usage is 7"));
  options.outage_usage = OutageUsage::kForget;
  options.failure_mode = static_cast<FailureMode>(9);
  l = LeasedLimiter::Create(LimitSpec::Gcra(10, absl::Seconds(1)), options);
  EXPECT_THAT(l.status().message(), HasSubstr("failure_mode is 9"));
}

}  // namespace
}  // namespace tokenlease
