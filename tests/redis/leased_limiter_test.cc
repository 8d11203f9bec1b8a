// Leased mode against a real redis-server: prefetch, expiry and return,
// release at shutdown, denial caching, cold-key policies, charges, and a
// shared limit held across two instances.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "redis/redis_server.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using ::tokenlease::testing::RedisServer;

constexpr absl::Duration kWaitBound = absl::Seconds(20);

// Polls `cond` every millisecond until it holds or kWaitBound passes.
template <typename Cond>
bool WaitFor(Cond cond) {
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cond();
}

class LeasedLimiterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = server_.Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  std::shared_ptr<RedisConnection> NewConnection() {
    RedisOptions redis;
    redis.url = server_.url();
    redis.reconnect_min_backoff = absl::Milliseconds(5);
    redis.reconnect_max_backoff = absl::Milliseconds(100);
    auto conn = RedisConnection::Create(redis);
    EXPECT_TRUE(conn.ok()) << conn.status();
    return conn.ok() ? *conn : nullptr;
  }

  std::unique_ptr<LeasedLimiter> Make(LimitSpec spec, LeaseOptions lease,
                                      Clock* clock = nullptr) {
    LeasedLimiterOptions options;
    options.connection = NewConnection();
    options.key_prefix = "lt:";
    options.lease = lease;
    options.clock = clock;
    auto limiter = LeasedLimiter::Create(std::move(spec), options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // The shared limit's remaining tokens as Redis sees them (a cost-0 direct
  // call charges nothing).
  int64_t RedisRemaining(const LimitSpec& spec, const std::string& key) {
    DirectLimiterOptions options;
    options.connection = NewConnection();
    options.key_prefix = "lt:";
    auto direct = DirectLimiter::Create(spec, options);
    EXPECT_TRUE(direct.ok()) << direct.status();
    auto d = (*direct)->TryAcquire(key, 0, absl::Seconds(5));
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? d->remaining : -1;
  }

  RedisServer server_;
};

TEST_F(LeasedLimiterTest, ColdKeyDeniesThenServesFromTheLease) {
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;
  auto limiter = Make(LimitSpec::TokenBucket(1000, absl::Seconds(1)), lease);
  Decision d = limiter->TryAcquire("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kLease);
  EXPECT_GT(d.retry_after_ns, 0);
  ASSERT_TRUE(WaitFor([&] { return limiter->TryAcquire("k").allowed; }));
  const LeaseStats stats = limiter->stats();
  EXPECT_GE(stats.lease_requests, 1u);
  EXPECT_GE(stats.tokens_granted, 1u);
  // A cold key starts with a one-token lease (it may be used only once).
  EXPECT_LE(stats.tokens_granted, 4u);
}

// Drives `key` until its lease target has grown to at least `low_water`
// (a key's target doubles each time it runs dry before its refill lands).
void WarmUp(LeasedLimiter& limiter, const LeaseHandle& h,
            const std::string& key, int64_t low_water) {
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    for (int i = 0; i < 1000; ++i) limiter.TryAcquire(h);
    auto info = limiter.Inspect(key);
    if (info.ok() && info->low_water >= low_water) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  FAIL() << "the lease of " << key << " did not grow";
}

TEST_F(LeasedLimiterTest, HotKeysGrowTheirLeaseAndPrefetch) {
  LeaseOptions lease;
  auto limiter = Make(LimitSpec::TokenBucket(10000, absl::Seconds(1)), lease);
  auto h = limiter->Resolve("p");
  ASSERT_TRUE(h.ok());
  WarmUp(*limiter, *h, "p", 8);
  // Let the key settle with a full lease: wait for any refill in flight.
  ASSERT_TRUE(WaitFor([&] {
    auto i = limiter->Inspect("p");
    return i.ok() && !i->refill_pending && i->balance >= i->low_water;
  }));
  auto info = limiter->Inspect("p");
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(info->has_lease);
  // Spend down to just below the low-water mark: the refill is asked for
  // while tokens remain...
  int64_t remaining = info->balance;
  while (remaining >= info->low_water) {
    Decision d = limiter->TryAcquire(*h);
    ASSERT_TRUE(d.allowed);
    remaining = d.remaining;
  }
  ASSERT_GT(remaining, 0);
  auto after = limiter->Inspect("p");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->refill_pending || after->balance > remaining);
  // ...and lands before the key runs dry (nothing is spent meanwhile).
  ASSERT_TRUE(WaitFor([&] {
    auto i = limiter->Inspect("p");
    return i.ok() && (i->balance > remaining || i->denied);
  }));
  EXPECT_GT(limiter->Inspect("p")->balance, remaining);
}

TEST_F(LeasedLimiterTest, ExpiredLeaseIsReturnedToRedis) {
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.lease_ttl = absl::Minutes(10);
  lease.idle_evict = absl::Hours(1);
  // A fixed window of an hour: nothing refills during the test.
  const LimitSpec spec = LimitSpec::FixedWindow(100000, absl::Hours(1));
  auto limiter = Make(spec, lease, &clock);
  auto h = limiter->Resolve("e");
  ASSERT_TRUE(h.ok());
  WarmUp(*limiter, *h, "e", 4);
  ASSERT_TRUE(WaitFor([&] {
    auto i = limiter->Inspect("e");
    return i.ok() && !i->refill_pending && i->balance > 0;
  }));
  const int64_t held = limiter->Inspect("e")->balance;
  const int64_t granted = static_cast<int64_t>(limiter->stats().tokens_granted);
  EXPECT_EQ(RedisRemaining(spec, "e"), 100000 - granted);
  // Past lease_ttl on the reconciler's clock: the leftover goes back.
  clock.Advance(absl::Minutes(11));
  ASSERT_TRUE(WaitFor([&] {
    return static_cast<int64_t>(limiter->stats().tokens_returned) == held;
  })) << limiter->stats().tokens_returned
      << " of " << held;
  EXPECT_EQ(limiter->Inspect("e")->balance, 0);
  EXPECT_FALSE(limiter->Inspect("e")->has_lease);
  EXPECT_EQ(RedisRemaining(spec, "e"), 100000 - granted + held);
}

TEST_F(LeasedLimiterTest, DestructionReturnsUnusedTokens) {
  const LimitSpec spec = LimitSpec::FixedWindow(5000, absl::Hours(1));
  LeaseOptions lease;
  lease.lease_ttl = absl::Hours(1);
  lease.idle_evict = absl::Hours(2);
  int64_t used = 0;
  {
    auto limiter = Make(spec, lease);
    auto h = limiter->Resolve("d");
    ASSERT_TRUE(h.ok());
    WarmUp(*limiter, *h, "d", 4);
    ASSERT_TRUE(WaitFor([&] {
      auto i = limiter->Inspect("d");
      return i.ok() && !i->refill_pending && i->balance > 0;
    }));
    const int64_t granted =
        static_cast<int64_t>(limiter->stats().tokens_granted);
    used = granted - limiter->Inspect("d")->balance;
    ASSERT_EQ(RedisRemaining(spec, "d"), 5000 - granted);
  }
  // Destroyed: only what was spent stays counted.
  EXPECT_EQ(RedisRemaining(spec, "d"), 5000 - used);
}

// A refill that lands while the key still holds tokens merges them into
// the new lease; on return both grants give back what is left, each under
// its own lease id, so nothing stays counted that was not spent.
TEST_F(LeasedLimiterTest, LeftoversMergedIntoANewLeaseAreReturnedToo) {
  const LimitSpec spec = LimitSpec::FixedWindow(5000, absl::Hours(1));
  LeaseOptions lease;
  lease.lease_ttl = absl::Hours(1);
  lease.idle_evict = absl::Hours(2);
  int64_t used = 0;
  {
    auto limiter = Make(spec, lease);
    auto h = limiter->Resolve("m");
    ASSERT_TRUE(h.ok());
    WarmUp(*limiter, *h, "m", 4);
    auto settled = [&] {
      auto i = limiter->Inspect("m");
      return i.ok() && !i->refill_pending && i->balance > 0;
    };
    ASSERT_TRUE(WaitFor(settled));
    // Spend one at a time until a refill is asked for, with tokens left.
    bool asked = false;
    for (int i = 0; i < 10000 && !asked; ++i) {
      ASSERT_TRUE(limiter->TryAcquire(*h).allowed);
      asked = limiter->Inspect("m")->refill_pending;
    }
    ASSERT_TRUE(asked);
    ASSERT_GT(limiter->Inspect("m")->balance, 0);
    ASSERT_TRUE(WaitFor(settled));
    const int64_t granted =
        static_cast<int64_t>(limiter->stats().tokens_granted);
    used = granted - limiter->Inspect("m")->balance;
  }
  EXPECT_EQ(RedisRemaining(spec, "m"), 5000 - used);
}

TEST_F(LeasedLimiterTest, RefusalIsCachedLocally) {
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kWait;
  lease.cold_wait = absl::Seconds(1);
  auto limiter = Make(LimitSpec::FixedWindow(5, absl::Hours(1)), lease);
  int admitted = 0;
  for (int i = 0; i < 5; ++i) admitted += limiter->TryAcquire("c").allowed;
  // Tokens arrive in leases; wait until the window is used up.
  ASSERT_TRUE(WaitFor([&] {
    admitted += limiter->TryAcquire("c").allowed;
    return limiter->stats().denied_by_redis >= 1;
  }));
  EXPECT_LE(admitted, 5);
  const uint64_t requests = limiter->stats().lease_requests;
  Decision d;
  for (int i = 0; i < 10000; ++i) d = limiter->TryAcquire("c");
  EXPECT_FALSE(d.allowed);
  // Denied locally until the window ends: no new lease requests.
  EXPECT_EQ(limiter->stats().lease_requests, requests);
  EXPECT_GT(d.retry_after_ns, absl::ToInt64Nanoseconds(absl::Minutes(1)));
}

TEST_F(LeasedLimiterTest, AfterARefusalOnlyKeysWithDemandAskAgain) {
  // The reconciler's clock is manual: refusals are cached until a time on
  // it, so the test decides when they end.
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.idle_evict = absl::Hours(10);
  lease.lease_ttl = absl::Hours(1);
  const LimitSpec spec = LimitSpec::Gcra(1, absl::Hours(1));
  auto limiter = Make(spec, lease, &clock);
  // Key "idle": one token, spent; the next decision is refused by Redis.
  // Key "busy": the same, plus a decision while the refusal is cached.
  for (const char* key : {"idle", "busy"}) {
    // Spending the only token asks for more (below the low-water mark).
    ASSERT_TRUE(WaitFor([&] { return limiter->TryAcquire(key).allowed; }));
    ASSERT_TRUE(WaitFor([&] {
      auto i = limiter->Inspect(key);
      return i.ok() && i->denied;
    }));
  }
  EXPECT_FALSE(limiter->TryAcquire("busy").allowed);  // demand while denied
  const uint64_t requests = limiter->stats().lease_requests;
  clock.Advance(absl::Hours(2));  // both refusals are over
  // ("busy" may be refused again at once: Redis's clock has not moved.)
  ASSERT_TRUE(WaitFor([&] { return !limiter->Inspect("idle")->denied; }));
  // "busy" asks again by itself; "idle" does not (no polling of idle keys).
  ASSERT_TRUE(
      WaitFor([&] { return limiter->stats().lease_requests == requests + 1; }));
  // (Redis refuses it again: its clock has not moved by two hours.)
  EXPECT_FALSE(limiter->Inspect("idle")->refill_pending);
  EXPECT_EQ(limiter->stats().lease_requests, requests + 1);
  // A decision on "idle" asks again.
  EXPECT_FALSE(limiter->TryAcquire("idle").allowed);
  ASSERT_TRUE(
      WaitFor([&] { return limiter->stats().lease_requests == requests + 2; }));
}

TEST_F(LeasedLimiterTest, LocalShareAdmitsColdKeysAndIsCharged) {
  const LimitSpec spec = LimitSpec::TokenBucket(1000, absl::Hours(1));
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kLocalShare;
  lease.local_share = 0.005;  // 5 tokens
  auto limiter = Make(spec, lease);
  Decision d = limiter->TryAcquire("s", 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kFallback);
  // Wait for the charge and for the lease request sent with it (whose
  // grant Redis has counted once it is applied here).
  ASSERT_TRUE(WaitFor([&] {
    auto i = limiter->Inspect("s");
    return limiter->stats().tokens_charged >= 2 && i.ok() && !i->refill_pending;
  }));
  // Redis counts the 2 unleased tokens plus whatever was leased since.
  const int64_t leased = static_cast<int64_t>(limiter->stats().tokens_granted);
  EXPECT_EQ(RedisRemaining(spec, "s"), 1000 - 2 - leased);
}

TEST_F(LeasedLimiterTest, WaitPolicyAdmitsTheFirstRequest) {
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kWait;
  lease.cold_wait = absl::Seconds(1);
  auto limiter = Make(LimitSpec::Gcra(100, absl::Seconds(1)), lease);
  Decision d = limiter->TryAcquire("w");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kLease);
  // A larger first cost is leased in full (the lease covers the cost).
  d = limiter->TryAcquire("w2", 7);
  EXPECT_TRUE(d.allowed);
}

TEST_F(LeasedLimiterTest, TwoInstancesHoldTheSharedLimit) {
  // 2 instances x 2 threads hammer one key of 2000/s for ~1 s: together
  // they admit no more than burst + rate x elapsed (+ what the last leases
  // could still hold), and most of it.
  const LimitSpec spec = LimitSpec::TokenBucket(2000, absl::Seconds(1));
  LeaseOptions lease;
  lease.lease_ttl = absl::Milliseconds(500);
  auto a = Make(spec, lease);
  auto b = Make(spec, lease);
  std::atomic<int64_t> admitted{0};
  std::atomic<bool> stop{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    LeasedLimiter* l = (t % 2 ? a : b).get();
    threads.emplace_back([&, l] {
      auto h = l->Resolve("hot");
      ASSERT_TRUE(h.ok());
      int64_t mine = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        mine += l->TryAcquire(*h).allowed;
      }
      admitted.fetch_add(mine);
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  stop.store(true);
  for (auto& th : threads) th.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const double bound = 2000 + 2000 * elapsed;
  EXPECT_LE(admitted.load(), bound) << "elapsed " << elapsed;
  // Under sanitizers the threads are slow, but they still offer far more
  // than the limit: most of the limit is used.
  EXPECT_GE(admitted.load(), 0.5 * 2000 * elapsed) << "elapsed " << elapsed;
}

// Two threads share one handle with mixed costs, so subtractions that find
// too few tokens (and are undone) race with ones that succeed. No token is
// made or lost: what was admitted plus what Redis still has is the window.
// (Whether the handle reads or subtracts first is a speed hint, which
// lease_bench's deny cases measure; both must give these results.)
TEST_F(LeasedLimiterTest, SharedHandleAdmitsExactlyTheWindowAcrossRefusals) {
  const LimitSpec spec = LimitSpec::FixedWindow(300, absl::Hours(1));
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;
  auto limiter = Make(spec, lease);
  auto h = limiter->Resolve("w");
  ASSERT_TRUE(h.ok()) << h.status();
  // Cold: denied, then served through the same handle once a lease lands.
  EXPECT_FALSE(limiter->TryAcquire(*h).allowed);
  int64_t first = 0;
  ASSERT_TRUE(WaitFor([&] {
    first = limiter->TryAcquire(*h).allowed ? 1 : 0;
    return first == 1;
  }));
  // A cost beyond the burst is refused for good, and must not make later
  // lease requests ask for it (Redis would refuse them all).
  Decision huge = limiter->TryAcquire(*h, 301);
  EXPECT_FALSE(huge.allowed);
  EXPECT_EQ(huge.retry_after_ns, kNever);

  std::atomic<int64_t> admitted{first};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int64_t cost : {1, 3}) {
    threads.emplace_back([&, cost] {
      int64_t mine = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (limiter->TryAcquire(*h, cost).allowed) mine += cost;
      }
      admitted.fetch_add(mine);
    });
  }
  EXPECT_TRUE(WaitFor([&] { return limiter->stats().denied_by_redis >= 1; }));
  stop.store(true);
  for (auto& t : threads) t.join();
  // Spend what is left here: leftovers merged through two or more refills
  // are dropped, not returned, by design (docs/design.md).
  for (int i = 0; i < 300 && limiter->TryAcquire(*h, 1).allowed; ++i) {
    admitted.fetch_add(1);
  }
  ASSERT_TRUE(limiter->ReturnAll(absl::Seconds(10)).ok());
  EXPECT_LE(admitted.load(), 300);
  // Redis refuses only when it holds less than the largest cost asked for.
  EXPECT_GE(admitted.load(), 240);
  EXPECT_EQ(admitted.load() + RedisRemaining(spec, "w"), 300);
}

// Leased mode for every algorithm of the scripts: two instances drain a
// limit of 40 per hour (nothing refills or slides out during the test)
// and together admit exactly 40, which Redis then no longer has.
TEST_F(LeasedLimiterTest, EveryAlgorithmAdmitsExactlyItsLimitAcrossInstances) {
  LimitSpec composite = LimitSpec::FixedWindow(40, absl::Hours(1));
  composite.bands.push_back(
      LimitSpec::SlidingWindowLog(60, absl::Hours(2)).bands[0]);
  const std::vector<std::pair<std::string, LimitSpec>> cases = {
      {"token_bucket_smooth", LimitSpec::TokenBucket(40, absl::Hours(1))},
      {"token_bucket_stepwise",
       LimitSpec::TokenBucket(40, absl::Hours(1), 0, Refill::kStepwise)},
      {"gcra", LimitSpec::Gcra(40, absl::Hours(1))},
      {"fixed_window", LimitSpec::FixedWindow(40, absl::Hours(1))},
      {"sliding_counter", LimitSpec::SlidingWindowCounter(40, absl::Hours(1))},
      {"sliding_log", LimitSpec::SlidingWindowLog(40, absl::Hours(1))},
      {"composite", composite},
  };
  for (const auto& [name, spec] : cases) {
    SCOPED_TRACE(name);
    LeaseOptions lease;
    lease.cold_key_policy = ColdKeyPolicy::kDeny;
    auto a = Make(spec, lease);
    auto b = Make(spec, lease);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    int64_t admitted = 0;
    // Both ask until Redis has refused each of them once.
    const bool refused = WaitFor([&] {
      admitted += a->TryAcquire(name).allowed;
      admitted += b->TryAcquire(name).allowed;
      return a->stats().denied_by_redis >= 1 && b->stats().denied_by_redis >= 1;
    });
    EXPECT_TRUE(refused);
    // Spend what the leases still hold (bounded: at most the limit).
    for (LeasedLimiter* l : {a.get(), b.get()}) {
      for (int i = 0; i < 40 && l->TryAcquire(name).allowed; ++i) ++admitted;
    }
    ASSERT_TRUE(a->ReturnAll(absl::Seconds(10)).ok());
    ASSERT_TRUE(b->ReturnAll(absl::Seconds(10)).ok());
    EXPECT_EQ(admitted, 40);
    EXPECT_EQ(RedisRemaining(spec, name), 0);
  }
}

TEST_F(LeasedLimiterTest, CreateRejectsBadOptions) {
  LeasedLimiterOptions options;
  options.connection = NewConnection();
  options.lease.low_water = 1.5;
  auto l = LeasedLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("low_water"));
  options.lease = LeaseOptions{};
  options.lease.idle_evict = absl::Milliseconds(1);
  l = LeasedLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("idle_evict"));
  options.lease = LeaseOptions{};
  options.key_prefix = "";
  l = LeasedLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("key_prefix"));
}

TEST_F(LeasedLimiterTest, InvalidCostAndEmptyHandle) {
  auto limiter = Make(LimitSpec::Gcra(10, absl::Seconds(1)), LeaseOptions{});
  EXPECT_EQ(limiter->TryAcquire("x", -1).source,
            DecisionSource::kInvalidArgument);
  EXPECT_EQ(limiter->TryAcquire(LeaseHandle(), 1).source,
            DecisionSource::kInvalidArgument);
  Decision d = limiter->TryAcquire("x", 11);  // beyond the burst
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, kNever);
}

}  // namespace
}  // namespace tokenlease
