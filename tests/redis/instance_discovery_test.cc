// Instance discovery (LeasedLimiterOptions::instance_group) against a real
// redis-server: limiters of one group count each other, kFailLocal's share
// follows the count, the count is kept through an outage, and a limiter
// that ends leaves the count. The limiters' clock is a manual one that
// moves only when a test says so, so the shares below are exact.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "redis/instance_census.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using testing::kWaitBound;
using testing::WaitUntil;

class InstanceDiscoveryTest : public testing::PrivateRedisTest {
 protected:
  std::unique_ptr<LeasedLimiter> Make(const std::string& group = "g",
                                      int32_t fallback_instances = 1) {
    LeasedLimiterOptions options;
    options.fallback_instances = fallback_instances;
    options.connection = NewConnection();
    options.key_prefix = prefix();
    options.clock = &clock_;
    options.failure_mode = FailureMode::kFailLocal;
    options.instance_group = group;
    options.announce_ttl = kTtl;
    options.lease.cold_key_policy = ColdKeyPolicy::kDeny;
    auto limiter = LeasedLimiter::Create(spec_, options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // Moves the clock on by a third of the TTL (each limiter announces
  // again) until every limiter counts `n`; false after kWaitBound.
  bool WaitForCount(const std::vector<LeasedLimiter*>& limiters, int32_t n) {
    return WaitUntil([&] {
      bool all = true;
      for (LeasedLimiter* l : limiters) all = all && l->stats().instances == n;
      if (!all) clock_.Advance(kTtl / 3);
      return all;
    });
  }

  // Decisions on a fresh key `key` while Redis is away: how many the local
  // share admitted of `requests`.
  int AdmittedDuringOutage(LeasedLimiter& limiter, const std::string& key,
                           int requests) {
    int admitted = 0;
    for (int i = 0; i < requests; ++i) {
      const Decision d = limiter.TryAcquire(key);
      EXPECT_EQ(d.source, DecisionSource::kFallback);
      admitted += d.allowed;
    }
    return admitted;
  }

  static constexpr absl::Duration kTtl = absl::Seconds(3);
  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  // 900 an hour: the manual clock moves a few seconds at most, which
  // refills no share of it below 300 an hour.
  const LimitSpec spec_ = LimitSpec::TokenBucket(900, absl::Hours(1));
};

TEST_F(InstanceDiscoveryTest, TheShareFollowsTheLiveInstancesThroughAnOutage) {
  auto a = Make();
  auto b = Make();
  auto c = Make();
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(WaitForCount({a.get(), b.get(), c.get()}, 3));
  EXPECT_EQ(
      client().Run({"ZCARD", internal::InstancesKey(prefix(), "g")}).integer,
      3);
  EXPECT_GT(a->stats().announcements, 0u);

  server().Kill();
  for (LeasedLimiter* l : {a.get(), b.get(), c.get()}) {
    ASSERT_TRUE(WaitUntil(
        [&] { return l->connection().health() == RedisHealth::kDown; }));
  }
  // The last count is kept: each admits a third of the limit (fallback
  // instances 1 would have admitted all 900 in each).
  for (LeasedLimiter* l : {a.get(), b.get(), c.get()}) {
    EXPECT_EQ(AdmittedDuringOutage(*l, "k", 400), 300);
    EXPECT_EQ(l->stats().instances, 3);
  }
  // A count older than the TTL is still kept while Redis is away: the step
  // that sends the next announcement (which fails) has dropped the old
  // counts it could.
  const uint64_t failures = a->stats().announce_failures;
  clock_.Advance(kTtl * 2);
  ASSERT_TRUE(
      WaitUntil([&] { return a->stats().announce_failures > failures; }));
  EXPECT_EQ(a->stats().instances, 3);
}

TEST_F(InstanceDiscoveryTest, ALimiterThatEndsLeavesTheCount) {
  auto a = Make();
  auto b = Make();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(WaitForCount({a.get(), b.get()}, 2));
  b.reset();  // leaves at once
  ASSERT_TRUE(WaitUntil([&] {
    return client()
               .Run({"ZCARD", internal::InstancesKey(prefix(), "g")})
               .integer == 1;
  }));
  // The highest count of the last TTL is kept: the share grows only once
  // a whole TTL has passed since the last count of 2. Sync ends after a
  // step that folded in the reply counting 1.
  const uint64_t answered = a->stats().announcements;
  clock_.Advance(kTtl / 3);
  ASSERT_TRUE(WaitUntil([&] { return a->stats().announcements > answered; }));
  ASSERT_TRUE(a->Sync(kWaitBound).ok());
  EXPECT_EQ(a->stats().instances, 2);
  ASSERT_TRUE(WaitForCount({a.get()}, 1));

  server().Kill();
  ASSERT_TRUE(WaitUntil(
      [&] { return a->connection().health() == RedisHealth::kDown; }));
  EXPECT_EQ(AdmittedDuringOutage(*a, "k", 1000), 900);
}

// Instances that start together do not all announce before the first
// count: a limiter that first counts itself alone keeps fallback_instances
// for an announce_ttl, and through an outage that begins then (found in the
// demo: one instance enforced the whole limit, its peer half).
TEST_F(InstanceDiscoveryTest, AFirstCountBelowTheFallbackDoesNotGrowTheShare) {
  auto a = Make("g", /*fallback_instances=*/3);
  ASSERT_TRUE(a);
  ASSERT_TRUE(WaitUntil([&] { return a->stats().announcements > 0; }));
  // The census ticks every ttl / 30: the step after this folds the count of
  // 1 in.
  clock_.Advance(kTtl / 30);
  ASSERT_TRUE(a->Sync(kWaitBound).ok());
  EXPECT_EQ(
      client().Run({"ZCARD", internal::InstancesKey(prefix(), "g")}).integer,
      1);
  EXPECT_EQ(a->stats().instances, 3);

  server().Kill();
  ASSERT_TRUE(WaitUntil(
      [&] { return a->connection().health() == RedisHealth::kDown; }));
  EXPECT_EQ(AdmittedDuringOutage(*a, "k", 400), 300);
  // Still while Redis stays away, however long: no answer moves the window.
  const uint64_t failures = a->stats().announce_failures;
  clock_.Advance(kTtl * 2);
  ASSERT_TRUE(
      WaitUntil([&] { return a->stats().announce_failures > failures; }));
  EXPECT_EQ(a->stats().instances, 3);
}

// The fallback count lasts one ttl from the start: the share is of 1 only
// once a whole ttl of answers says 1, not at the first of them.
TEST_F(InstanceDiscoveryTest, TheFallbackCountLastsOneTtlWhileRedisAnswers) {
  auto a = Make("g", /*fallback_instances=*/3);
  ASSERT_TRUE(a);
  // Waits for the n-th answer, then lets a census tick (every ttl / 30)
  // fold it in.
  auto folded = [&](uint64_t n) {
    ASSERT_TRUE(WaitUntil([&] { return a->stats().announcements >= n; }));
    clock_.Advance(kTtl / 30);
    ASSERT_TRUE(a->Sync(kWaitBound).ok());
  };
  folded(1);  // a count of 1 at ttl / 30
  EXPECT_EQ(a->stats().instances, 3);
  clock_.Advance(kTtl / 2);  // the next announcement is due
  ASSERT_TRUE(a->Sync(kWaitBound).ok());
  folded(2);  // another 1, well within a ttl of the start
  EXPECT_EQ(a->stats().instances, 3);
  ASSERT_TRUE(WaitForCount({a.get()}, 1));
}

// A DirectLimiter announces itself from its calls (it has no thread), in
// the same set as leased limiters, on the real clock.
TEST_F(InstanceDiscoveryTest, DirectAndLeasedLimitersOfAGroupCountEachOther) {
  auto MakeDirect = [&]() -> std::unique_ptr<DirectLimiter> {
    DirectLimiterOptions options;
    options.connection = NewConnection();
    options.key_prefix = prefix();
    options.failure_mode = FailureMode::kFailLocal;
    options.instance_group = "g";
    options.announce_ttl = absl::Milliseconds(300);
    auto limiter = DirectLimiter::Create(spec_, options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  };
  auto a = Make();
  auto d1 = MakeDirect();
  auto d2 = MakeDirect();
  ASSERT_TRUE(a && d1 && d2);
  EXPECT_EQ(d1->stats().instances, 1);  // fallback_instances, before a call
  ASSERT_TRUE(WaitUntil([&] {
    // Each call may announce; a few on "x" cost nothing the test needs.
    EXPECT_EQ(d1->TryAcquire("x").source, DecisionSource::kDirect);
    EXPECT_EQ(d2->TryAcquire("x").source, DecisionSource::kDirect);
    clock_.Advance(kTtl / 3);
    return a->stats().instances == 3 && d1->stats().instances == 3 &&
           d2->stats().instances == 3;
  }));

  server().Kill();
  ASSERT_TRUE(WaitUntil(
      [&] { return d1->connection().health() == RedisHealth::kDown; }));
  int admitted = 0;
  for (int i = 0; i < 400; ++i) {
    const Decision d = d1->TryAcquire("k");
    EXPECT_EQ(d.source, DecisionSource::kFallback);
    admitted += d.allowed;
  }
  EXPECT_EQ(admitted, 300);  // 900 an hour over 3 (a refill every 12 s)
  EXPECT_EQ(d1->stats().instances, 3);
}

TEST_F(InstanceDiscoveryTest, ADirectLimiterThatEndsLeavesTheCount) {
  DirectLimiterOptions options;
  options.connection = NewConnection();
  options.key_prefix = prefix();
  options.instance_group = "g";
  auto d = DirectLimiter::Create(spec_, options);
  ASSERT_TRUE(d.ok()) << d.status();
  // Announces.
  ASSERT_EQ((*d)->TryAcquire("x").source, DecisionSource::kDirect);
  const std::string key = internal::InstancesKey(prefix(), "g");
  ASSERT_TRUE(WaitUntil([&] {
    return client().Run({"ZCARD", key}).integer == 1;
  }));
  d->reset();
  ASSERT_TRUE(WaitUntil([&] {
    return client().Run({"EXISTS", key}).integer == 0;
  }));
}

TEST_F(InstanceDiscoveryTest, GroupsCountApart) {
  auto a = Make("g1");
  auto b = Make("g1");
  auto c = Make("g2");
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(WaitForCount({a.get(), b.get()}, 2));
  ASSERT_TRUE(WaitForCount({c.get()}, 1));
}

TEST_F(InstanceDiscoveryTest, WithoutAGroupNothingIsAnnounced) {
  LeasedLimiterOptions options;
  options.connection = NewConnection();
  options.key_prefix = prefix();
  options.clock = &clock_;
  options.failure_mode = FailureMode::kFailLocal;
  options.fallback_instances = 7;
  auto limiter = LeasedLimiter::Create(spec_, options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  ASSERT_TRUE((*limiter)->Sync(kWaitBound).ok());
  EXPECT_EQ((*limiter)->stats().instances, 7);
  EXPECT_EQ((*limiter)->stats().announcements, 0u);
  EXPECT_EQ(client().Run({"KEYS", "*instances*"}).elements.size(), 0u);
}

TEST_F(InstanceDiscoveryTest, AWrongTypeKeyCountsAsFailuresAndKeepsTheCount) {
  client().Run({"RPUSH", internal::InstancesKey(prefix(), "g"), "x"});
  auto a = Make();
  ASSERT_TRUE(a);
  ASSERT_TRUE(WaitUntil([&] {
    clock_.Advance(kTtl / 3);
    return a->stats().announce_failures >= 2;
  }));
  EXPECT_EQ(a->stats().instances, 1);  // fallback_instances
  EXPECT_EQ(a->stats().announcements, 0u);
}

}  // namespace
}  // namespace tokenlease
