// A Redis that loses its data (kill -9 without persistence, restarted
// empty) against limits with and without start_empty: the data-loss
// marker is read on every connection, the loss is counted, and a
// start_empty limit hands out no second burst while one without does.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using testing::kWaitBound;
using testing::WaitUntil;

class DataLossTest : public testing::PrivateRedisTest {
 protected:
  std::unique_ptr<DirectLimiter> MakeDirect(bool start_empty) {
    DirectLimiterOptions options;
    options.connection = testing::ConnectFast(url());
    options.key_prefix = prefix();
    options.start_empty = start_empty;
    auto limiter = DirectLimiter::Create(spec_, options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // Kills the server and starts it again, empty; returns once `limiter`
  // has a decision from the new one.
  void LoseTheData(DirectLimiter& limiter) {
    server().Kill();
    ASSERT_TRUE(server().Restart().ok());
    ASSERT_TRUE(WaitUntil([&] {
      return limiter.TryAcquire("probe").source == DecisionSource::kDirect;
    }));
  }

  // A decision of `limiter` for `cost` tokens of `key`, which Redis must
  // have made (a test failure otherwise).
  static Decision FromRedis(DirectLimiter& limiter, std::string_view key,
                            int64_t cost) {
    const Decision d = limiter.TryAcquire(key, cost);
    EXPECT_EQ(d.source, DecisionSource::kDirect) << key << " x" << cost;
    return d;
  }

  // 100 an hour: nothing refills during a test (a token every 36 s).
  const LimitSpec spec_ = LimitSpec::TokenBucket(100, absl::Hours(1));
};

// A Redis whose tokenlease state began long ago (a fresh marker would make
// every key start drained, as after a loss: docs/operations.md).
void SetOldMarker(testing::RedisServer& server) {
  const int64_t two_hours_ago_us =
      absl::ToUnixMicros(absl::Now() - absl::Hours(2));
  ASSERT_TRUE(
      server
          .Command({"SET", "tokenlease:since", absl::StrCat(two_hours_ago_us)})
          .ok());
}

TEST_F(DataLossTest, AStartEmptyDirectLimitHandsOutNoSecondBurst) {
  SetOldMarker(server());
  if (HasFailure()) return;
  auto strict = MakeDirect(true);
  auto loose = MakeDirect(false);
  ASSERT_TRUE(strict && loose);
  ASSERT_TRUE(FromRedis(*strict, "k", 100).allowed);
  const RedisStats before = strict->connection().stats();
  ASSERT_GT(before.state_since_us, 0);  // read before the first call
  EXPECT_EQ(before.data_losses, 0u);

  LoseTheData(*strict);
  if (HasFailure()) return;
  ASSERT_TRUE(WaitUntil([&] {
    return loose->TryAcquire("probe").source == DecisionSource::kDirect;
  }));
  const RedisStats after = strict->connection().stats();
  EXPECT_GT(after.state_since_us, before.state_since_us);
  EXPECT_EQ(after.data_losses, 1u);

  // The key's state is gone: drained at the restart for the strict limit
  // (nothing written, so the key stays without state)...
  const Decision d = FromRedis(*strict, "k", 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after_ns, 0);
  // ...and a full bucket again for the other: the second burst.
  EXPECT_TRUE(FromRedis(*loose, "k", 100).allowed);
}

// A new Redis cannot be told from one that lost its data: its marker is
// new, so a start_empty limit's keys start drained at its creation.
TEST_F(DataLossTest, OnANewRedisAStartEmptyLimitStartsDrained) {
  auto strict = MakeDirect(true);
  auto loose = MakeDirect(false);
  ASSERT_TRUE(strict && loose);
  EXPECT_FALSE(FromRedis(*strict, "k", 2).allowed);
  EXPECT_EQ(strict->connection().stats().data_losses, 0u);
  EXPECT_TRUE(FromRedis(*loose, "k2", 100).allowed);
}

TEST_F(DataLossTest, AStartEmptyLeasedLimitGetsNoLeaseFromAnEmptiedRedis) {
  ManualClock clock(absl::FromUnixSeconds(1'700'000'000));
  auto Make = [&](bool start_empty) -> std::unique_ptr<LeasedLimiter> {
    LeasedLimiterOptions options;
    options.connection = testing::ConnectFast(url());
    options.key_prefix = prefix();
    options.clock = &clock;
    options.start_empty = start_empty;
    options.lease.cold_key_policy = ColdKeyPolicy::kDeny;
    auto limiter = LeasedLimiter::Create(spec_, options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  };
  auto strict = Make(true);
  auto loose = Make(false);
  ASSERT_TRUE(strict && loose);
  auto probe = MakeDirect(false);
  ASSERT_TRUE(probe);
  LoseTheData(*probe);
  if (HasFailure()) return;
  // Both limiters' connections read the new server's marker.
  const int64_t since = probe->connection().stats().state_since_us;
  ASSERT_GT(since, 0);
  for (LeasedLimiter* l : {strict.get(), loose.get()}) {
    ASSERT_TRUE(WaitUntil([&] {
      l->TryAcquire("warmup");  // a call, in case nothing else reconnects
      return l->connection().stats().state_since_us == since;
    }));
  }
  EXPECT_FALSE(strict->TryAcquire("n").allowed);  // asks for a lease
  EXPECT_FALSE(loose->TryAcquire("n2").allowed);
  ASSERT_TRUE(strict->Sync(kWaitBound).ok());
  ASSERT_TRUE(loose->Sync(kWaitBound).ok());
  EXPECT_FALSE(strict->TryAcquire("n").allowed);  // Redis granted nothing
  EXPECT_GT(strict->stats().lease.denied_by_redis, 0u);
  EXPECT_TRUE(loose->TryAcquire("n2").allowed);  // a lease of a full bucket
}

TEST_F(DataLossTest, SlidingLogLimitsCannotStartEmpty) {
  DirectLimiterOptions direct;
  direct.connection = NewConnection();
  direct.start_empty = true;
  const LimitSpec log = LimitSpec::SlidingWindowLog(10, absl::Seconds(1));
  absl::StatusOr<std::unique_ptr<DirectLimiter>> d =
      DirectLimiter::Create(log, direct);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  LeasedLimiterOptions leased;
  leased.connection = direct.connection;
  leased.start_empty = true;
  absl::StatusOr<std::unique_ptr<LeasedLimiter>> l =
      LeasedLimiter::Create(log, leased);
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(l.status().message().find("sliding_log"), std::string::npos);
}

}  // namespace
}  // namespace tokenlease
