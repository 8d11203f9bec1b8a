// Leased mode against a real redis-server: prefetch, expiry and return,
// release at shutdown, denial caching, cold-key policies, charges, and a
// shared limit held across two instances. A test that waits for the
// reconciler uses LeasedLimiter::Sync (a synchronisation point: every
// request made before it is answered and applied) instead of polling.
// Windows start when the test does (AnchoredAt), so no test depends on the
// time of day. Where a test needs time to pass in the limiter (lease
// expiry, cached refusals, the charge delay, the batch window), its clock is
// a ManualClock the test moves; no test sleeps for it. Redis's clock is
// real (the scripts read TIME): a test that could see it refill bounds the
// refill from the time it measured (MaxRefill) and checks both ways.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "testing/leased_fixture.h"
#include "testing/redis_test.h"
#include "testing/specs.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using ::tokenlease::testing::AnchoredAt;

// The longest a test waits for Redis (through Sync or ReturnAll).
constexpr absl::Duration kSyncBound = absl::Seconds(20);
// Rounds of "decide, then Sync" a test allows before giving up.
constexpr int kMaxRounds = 200;

// Waits for `limiter`'s reconciler to answer every request made so far.
void Sync(LeasedLimiter& limiter) {
  const absl::Status s = limiter.Sync(kSyncBound);
  ASSERT_TRUE(s.ok()) << s;
}

// An aligned window spec whose windows start now (see AnchoredAt).
LimitSpec Anchored(LimitSpec spec) {
  return AnchoredAt(std::move(spec), absl::Now());
}

using ::tokenlease::testing::LeasedFixture;

// The most a smooth token bucket or GCRA `spec` refills in Redis over a
// span this test measured as `elapsed` on its steady clock: whole tokens
// (remaining is floored), with 500 ppm for NTP's slew of Redis's wall clock
// (TIME) against ours and 1 ms for the whole microseconds of both ends.
int64_t MaxRefill(const LimitSpec& spec, std::chrono::nanoseconds elapsed) {
  const Band& b = spec.bands.front();
  const absl::Duration span =
      absl::FromChrono(elapsed) * 1.0005 + absl::Milliseconds(1);
  return static_cast<int64_t>(absl::FDivDuration(span, b.period) *
                              static_cast<double>(b.limit));
}

// What one instance admitted (cost 1 each), by source.
struct Admitted {
  // relaxed: counts, read after the counting threads were joined.
  std::atomic<int64_t> lease{0}, credit{0}, other{0};
  void Count(const Decision& d) {
    if (!d.allowed) return;
    (d.source == DecisionSource::kLease         ? lease
     : d.source == DecisionSource::kLocalCredit ? credit
                                                : other)
        .fetch_add(1, std::memory_order_relaxed);
  }
};

// After ReturnAll, with nothing held: Redis counted exactly what `limiter`
// admitted. Every leased token was spent or returned (none stranded in a
// merge), and every admission from local credit was charged (none forgiven
// beyond the debt cap).
void ExpectRedisCountedExactlyTheAdmissions(const LeasedLimiter& limiter,
                                            const Admitted& admitted) {
  const SharedLimitStats s = limiter.stats();
  EXPECT_EQ(s.redis_errors, 0u);
  EXPECT_EQ(s.lease.held_tokens, 0);
  EXPECT_EQ(s.lease.uncharged_tokens, 0);
  EXPECT_EQ(
      static_cast<int64_t>(s.lease.tokens_granted - s.lease.tokens_returned),
      admitted.lease.load());
  EXPECT_EQ(static_cast<int64_t>(s.lease.tokens_charged),
            admitted.credit.load());
  EXPECT_EQ(admitted.other.load(), 0);
}

using LeasedLimiterTest = LeasedFixture<tokenlease::testing::RedisTest>;
using LeasedLimiterFaultTest =
    LeasedFixture<tokenlease::testing::PrivateRedisTest>;

TEST_F(LeasedLimiterTest, ASpecThatBorrowsIsRefused) {
  LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  spec.max_borrow = absl::Seconds(2);
  LeasedLimiterOptions options;
  options.connection = NewConnection();
  absl::StatusOr<std::unique_ptr<LeasedLimiter>> l =
      LeasedLimiter::Create(spec, options);
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(l.status().message().find("max_borrow is 2s"), std::string::npos)
      << l.status();
  spec.max_borrow = absl::ZeroDuration();
  EXPECT_TRUE(LeasedLimiter::Create(spec, options).ok());
}

TEST_F(LeasedLimiterTest, ColdKeyDeniesThenServesFromTheLease) {
  ManualClock clock(absl::Now());  // the lease cannot expire mid-test
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;
  auto limiter =
      Make(LimitSpec::TokenBucket(1000, absl::Seconds(1)), lease, &clock);
  Decision d = limiter->TryAcquire("k");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kLease);
  EXPECT_GT(d.retry_after_ns, 0);
  Sync(*limiter);  // the lease the denial asked for has landed
  const SharedLimitStats stats = limiter->stats();
  EXPECT_EQ(stats.lease.lease_requests, 1u);
  // A cold key starts with a one-token lease (it may be used only once).
  EXPECT_EQ(stats.lease.tokens_granted, 1u);
  d = limiter->TryAcquire("k");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kLease);
}

// Drives `key` until its lease target has grown to at least `low_water`:
// a key's target doubles each time it runs dry while its refill is on the
// way, so each round spends the key dry, then lets the refill land. Ends
// with the reconciler synced (no refill in flight).
void WarmUp(LeasedLimiter& limiter, const LeasedLimiter::Handle& h,
            const std::string& key, int64_t low_water) {
  for (int round = 0; round < kMaxRounds; ++round) {
    for (int i = 0; i < 100000 && limiter.TryAcquire(h).allowed; ++i) {
    }
    Sync(limiter);
    auto info = limiter.Inspect(key);
    if (info.ok() && info->low_water >= low_water) return;
  }
  FAIL() << "the lease of " << key << " did not grow";
}

// A hot key's lease grows; below the low-water mark a refill is asked for
// while tokens remain (a prefetch, not a refusal).
TEST_F(LeasedLimiterTest, HotKeysGrowTheirLeaseAndPrefetch) {
  // A standing clock: no lease expires mid-test, and the prefetch waits for
  // the batch window until the Sync below sends it.
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  auto limiter =
      Make(LimitSpec::TokenBucket(10000, absl::Seconds(1)), lease, &clock);
  auto h = limiter->Resolve("p");
  ASSERT_TRUE(h.ok());
  WarmUp(*limiter, *h, "p", 8);
  auto info = limiter->Inspect("p");
  ASSERT_TRUE(info.ok());
  ASSERT_TRUE(info->has_lease);
  ASSERT_FALSE(info->refill_pending);
  ASSERT_GE(info->balance, info->low_water);
  // Spend down to just below the low-water mark: the refill is asked for
  // while tokens remain...
  const uint64_t requests = limiter->stats().lease.lease_requests;
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
  // ...and the refill is added to what is left (the tokens still held stay
  // spendable: the key was never dry).
  Sync(*limiter);
  EXPECT_EQ(limiter->stats().lease.lease_requests, requests + 1);
  EXPECT_GT(limiter->Inspect("p")->balance, remaining);
  EXPECT_TRUE(limiter->Inspect("p")->has_lease);
}

// Against one server a renewal is asked for at low_water of the lease;
// cluster_low_water is for a cluster's nodes (cluster_test.cc).
TEST_F(LeasedLimiterTest, OneServerAsksForARenewalAtLowWater) {
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.cluster_low_water = 0.9;
  // 100/s, burst 100: a max lease of 10 tokens.
  auto limiter =
      Make(LimitSpec::TokenBucket(100, absl::Seconds(1)), lease, &clock);
  auto h = limiter->Resolve("w");
  ASSERT_TRUE(h.ok());
  WarmUp(*limiter, *h, "w", 5);
  EXPECT_EQ(limiter->Inspect("w")->low_water, 5);  // 0.5 x 10
}

TEST_F(LeasedLimiterTest, ExpiredLeaseIsReturnedToRedis) {
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;  // every token from leases
  lease.lease_ttl = absl::Minutes(10);
  lease.idle_evict = absl::Hours(1);
  // A fixed window of an hour: nothing refills during the test.
  const LimitSpec spec =
      Anchored(LimitSpec::FixedWindow(100000, absl::Hours(1)));
  auto limiter = Make(spec, lease, &clock);
  auto h = limiter->Resolve("e");
  ASSERT_TRUE(h.ok());
  WarmUp(*limiter, *h, "e", 4);
  const int64_t held = limiter->Inspect("e")->balance;
  ASSERT_GT(held, 0);
  const int64_t granted =
      static_cast<int64_t>(limiter->stats().lease.tokens_granted);
  EXPECT_EQ(RedisRemaining(spec, "e"), 100000 - granted);
  // Past lease_ttl on the reconciler's clock: the leftover goes back.
  clock.Advance(absl::Minutes(11));
  Sync(*limiter);
  EXPECT_EQ(static_cast<int64_t>(limiter->stats().lease.tokens_returned), held);
  EXPECT_EQ(limiter->Inspect("e")->balance, 0);
  EXPECT_FALSE(limiter->Inspect("e")->has_lease);
  EXPECT_EQ(RedisRemaining(spec, "e"), 100000 - granted + held);
}

// Destroying the limiter returns every unused token, so only what was
// spent stays counted in Redis. Also when a refill landed while the key
// still held tokens ("merged"): it merges them into the new lease, and the
// return gives back what is left of both grants, each under its own lease
// id.
TEST_F(LeasedLimiterTest, DestructionReturnsUnusedTokens) {
  const LimitSpec spec = Anchored(LimitSpec::FixedWindow(5000, absl::Hours(1)));
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;  // every token from leases
  lease.lease_ttl = absl::Hours(1);
  lease.idle_evict = absl::Hours(2);
  for (const bool merged : {false, true}) {
    const std::string key = merged ? "merged" : "plain";
    SCOPED_TRACE(key);
    int64_t used = 0;
    {
      auto limiter = Make(spec, lease);
      auto h = limiter->Resolve(key);
      ASSERT_TRUE(h.ok());
      WarmUp(*limiter, *h, key, 4);
      ASSERT_GT(limiter->Inspect(key)->balance, 0);
      if (merged) {
        // Spend one at a time until a refill is asked for, with tokens
        // left; the refill then merges into the leftover.
        bool asked = false;
        for (int i = 0; i < 10000 && !asked; ++i) {
          ASSERT_TRUE(limiter->TryAcquire(*h).allowed);
          asked = limiter->Inspect(key)->refill_pending;
        }
        ASSERT_TRUE(asked);
        ASSERT_GT(limiter->Inspect(key)->balance, 0);
        Sync(*limiter);
      }
      const int64_t granted =
          static_cast<int64_t>(limiter->stats().lease.tokens_granted);
      used = granted - limiter->Inspect(key)->balance;
      ASSERT_EQ(RedisRemaining(spec, key), 5000 - granted);
    }
    // Destroyed: only what was spent stays counted.
    EXPECT_EQ(RedisRemaining(spec, key), 5000 - used);
  }
}

TEST_F(LeasedLimiterTest, RefusalIsCachedLocally) {
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kWait;
  lease.cold_wait = absl::Seconds(1);
  auto limiter =
      Make(Anchored(LimitSpec::FixedWindow(5, absl::Hours(1))), lease);
  int admitted = 0;
  // Tokens arrive in leases; spend until Redis refuses (the window is used
  // up).
  for (int round = 0;
       round < kMaxRounds && limiter->stats().lease.denied_by_redis == 0;
       ++round) {
    admitted += limiter->TryAcquire("c").allowed;
    Sync(*limiter);
  }
  ASSERT_GE(limiter->stats().lease.denied_by_redis, 1u);
  EXPECT_LE(admitted, 5);
  const uint64_t requests = limiter->stats().lease.lease_requests;
  Decision d;
  for (int i = 0; i < 10000; ++i) d = limiter->TryAcquire("c");
  EXPECT_FALSE(d.allowed);
  // Denied locally until the window ends: no new lease requests.
  EXPECT_EQ(limiter->stats().lease.lease_requests, requests);
  EXPECT_GT(d.retry_after_ns, absl::ToInt64Nanoseconds(absl::Minutes(1)));
}

TEST_F(LeasedLimiterTest, AfterARefusalOnlyKeysWithDemandAskAgain) {
  // The reconciler's clock is manual: refusals are cached until a time on
  // it, so the test decides when they end.
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;
  lease.idle_evict = absl::Hours(10);
  lease.lease_ttl = absl::Hours(1);
  const LimitSpec spec = LimitSpec::Gcra(1, absl::Hours(1));
  auto limiter = Make(spec, lease, &clock);
  // Key "idle": one token, spent; the next decision is refused by Redis.
  // Key "busy": the same, plus a decision while the refusal is cached.
  for (const char* key : {"idle", "busy"}) {
    EXPECT_FALSE(limiter->TryAcquire(key).allowed);  // cold: asks
    Sync(*limiter);
    // Spending the only token asks for more (below the low-water mark),
    // which Redis refuses.
    ASSERT_TRUE(limiter->TryAcquire(key).allowed);
    Sync(*limiter);
    ASSERT_TRUE(limiter->Inspect(key)->denied);
  }
  EXPECT_FALSE(limiter->TryAcquire("busy").allowed);  // demand while denied
  const uint64_t requests = limiter->stats().lease.lease_requests;
  clock.Advance(absl::Hours(2));  // both refusals are over
  Sync(*limiter);
  // "busy" asked again by itself (and was refused again: Redis's clock has
  // not moved by two hours); "idle" did not (no polling of idle keys).
  EXPECT_EQ(limiter->stats().lease.lease_requests, requests + 1);
  EXPECT_FALSE(limiter->Inspect("idle")->denied);
  EXPECT_FALSE(limiter->Inspect("idle")->refill_pending);
  EXPECT_TRUE(limiter->Inspect("busy")->denied);
  // A decision on "idle" asks again.
  EXPECT_FALSE(limiter->TryAcquire("idle").allowed);
  Sync(*limiter);
  EXPECT_EQ(limiter->stats().lease.lease_requests, requests + 2);
}

// The default cold-key policy: a fresh key's first requests are admitted
// at once from its local credit (A = floor(0.25 x 100) = 25), and every
// token so admitted reaches Redis as a charge.
TEST_F(LeasedLimiterTest, DefaultPolicyAdmitsAFreshKeysFirstRequests) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Hours(1));
  // A standing clock: the charge delay does not pass, so no charge's reply
  // comes mid-test.
  ManualClock clock(absl::Now());
  auto limiter = Make(spec, LeaseOptions{}, &clock);
  for (int i = 0; i < 12; ++i) {
    const Decision d = limiter->TryAcquire("fresh");
    ASSERT_TRUE(d.allowed) << i;
    EXPECT_EQ(d.source, DecisionSource::kLocalCredit);
  }
  const Decision big = limiter->TryAcquire("fresh", 5);  // a short burst
  EXPECT_TRUE(big.allowed);
  Sync(*limiter);
  const SharedLimitStats stats = limiter->stats();
  EXPECT_EQ(stats.lease.tokens_charged, 17u);
  // Half the credit was spent: the key asked for a lease as well.
  EXPECT_EQ(stats.lease.lease_requests, 1u);
  const int64_t leased = static_cast<int64_t>(stats.lease.tokens_granted);
  EXPECT_EQ(RedisRemaining(spec, "fresh"), 100 - 17 - leased);
}

// New keys are built in spare entries the reconciler prepared (no
// allocation on the deciding thread); with spare_entries = 0 every new key
// allocates, and the stats say so. Long names (kept on the heap) work too.
TEST_F(LeasedLimiterTest, NewKeysUseSpareEntriesTheReconcilerPrepared) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Hours(1));
  for (const int32_t spares : {0, 256}) {
    LeaseOptions lease;
    lease.spare_entries = spares;
    lease.charge_delay = lease.lease_ttl;
    auto limiter = Make(spec, lease);
    ASSERT_NE(limiter, nullptr);
    Sync(*limiter);  // a reconciler step has run: the stock is full
    for (int i = 0; i < 40; ++i) {
      const std::string key =
          i % 2 == 0
              ? absl::StrCat("spare-", spares, "-", i)
              : std::string(100, 'a' + i % 26) + absl::StrCat(spares, "-", i);
      EXPECT_TRUE(limiter->TryAcquire(key).allowed) << key;
    }
    EXPECT_EQ(limiter->stats().lease.spare_misses, spares == 0 ? 40u : 0u)
        << spares;
    EXPECT_EQ(limiter->stats().keys, 40u);
    Sync(*limiter);
    EXPECT_EQ(limiter->stats().lease.tokens_charged, 40u);
  }
}

TEST(LeaseOptionsTest, SpareEntriesIsValidated) {
  LeaseOptions lease;
  lease.spare_entries = -1;
  EXPECT_THAT(lease.Validate().message(), HasSubstr("spare_entries"));
  lease.spare_entries = 65537;
  EXPECT_FALSE(lease.Validate().ok());
  lease.spare_entries = 0;
  EXPECT_TRUE(lease.Validate().ok());
}

// ColdKeyPolicy::kLocalShare with a small share: the credit bounds what is
// admitted before Redis has counted it; the charge's reply refills it.
TEST_F(LeasedLimiterTest, LocalCreditIsBoundedAndRefilledByTheCharge) {
  const LimitSpec spec = LimitSpec::TokenBucket(1000, absl::Hours(1));
  LeaseOptions lease;
  lease.local_share = 0.005;         // A = 5 tokens
  lease.max_lease_fraction = 0.001;  // leases of 1 token: visible below
  // A standing clock: the charge (whose reply would top the credit up)
  // waits for the Sync.
  ManualClock clock(absl::Now());
  auto limiter = Make(spec, lease, &clock);
  Decision d = limiter->TryAcquire("s", 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kLocalCredit);
  EXPECT_EQ(d.remaining, 3);
  EXPECT_FALSE(limiter->TryAcquire("s", 4).allowed);  // beyond the credit
  Sync(*limiter);
  EXPECT_EQ(limiter->stats().lease.tokens_charged, 2u);
  const int64_t leased =
      static_cast<int64_t>(limiter->stats().lease.tokens_granted);
  EXPECT_EQ(RedisRemaining(spec, "s"), 1000 - 2 - leased);
}

// Many keys' charges share batch calls (at most 64 items each).
TEST_F(LeasedLimiterTest, ChargesOfManyKeysShareBatchCalls) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Hours(1));
  // A standing clock: the charge delay does not pass, so all 300 charges
  // wait for the Sync below.
  ManualClock clock(absl::Now());
  auto limiter = Make(spec, LeaseOptions{}, &clock);
  constexpr int kKeys = 300;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(limiter->TryAcquire(absl::StrCat("u", i)).allowed);
  }
  Sync(*limiter);
  const SharedLimitStats stats = limiter->stats();
  EXPECT_EQ(stats.lease.charges, static_cast<uint64_t>(kKeys));
  EXPECT_EQ(stats.lease.tokens_charged, static_cast<uint64_t>(kKeys));
  EXPECT_EQ(stats.lease.lease_requests, 0u);
  // 300 items: 4 full calls and one of 44 (Sync sends them at once).
  EXPECT_EQ(stats.redis_calls, 5u);
  for (int i : {0, 150, kKeys - 1}) {
    EXPECT_EQ(RedisRemaining(spec, absl::StrCat("u", i)), 99) << i;
  }
}

// An item that fails (its key holds another type) fails alone: the other
// keys of its batch call are charged, and its own key is left as it was.
TEST_F(LeasedLimiterTest, ABadKeyInABatchLeavesTheOthersRight) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Hours(1));
  auto limiter = Make(spec, LeaseOptions{});
  const std::string bad_key = absl::StrCat("{", prefix(), "bad}:b0");
  ASSERT_EQ(client().Run({"RPUSH", bad_key, "not", "a", "bucket"}).integer, 3);
  for (const char* key : {"a", "bad", "b", "c"}) {
    ASSERT_TRUE(limiter->TryAcquire(key).allowed) << key;
  }
  // The good keys' charges land while the bad one is retried.
  for (int round = 0;
       round < kMaxRounds && limiter->stats().lease.tokens_charged < 3;
       ++round) {
    (void)limiter->Sync(absl::Milliseconds(20));
  }
  EXPECT_EQ(limiter->stats().lease.tokens_charged, 3u);
  EXPECT_GE(limiter->stats().redis_errors, 1u);
  // The bad key's errors are errors for the key (a wrong type).
  EXPECT_GE(limiter->stats().key_errors, 1u);
  for (const char* key : {"a", "b", "c"}) {
    EXPECT_EQ(RedisRemaining(spec, key), 99) << key;
  }
  EXPECT_EQ(client().Run({"LLEN", bad_key}).integer, 3);  // untouched
  // Once the key is repaired the retried charge lands.
  ASSERT_EQ(client().Run({"DEL", bad_key}).integer, 1);
  Sync(*limiter);
  EXPECT_EQ(limiter->stats().lease.tokens_charged, 4u);
  EXPECT_EQ(RedisRemaining(spec, "bad"), 99);
}

// Three instances over 200 keys of 20 an hour (burst 20): each instance
// spends the 5 hot keys until Redis refuses them to it, and each of the 195
// tail keys is visited 15 times, round robin over the instances. Every key
// admits at most burst + refill + instances x A (docs/design.md, "Accuracy
// bound"; from an empty start no lease is held before the span), and the
// tail keys, offered less than their burst, get all of it at once from
// their local credit. Deterministic: the limiters' clock is manual and
// only the test moves it, and each phase ends at a Sync. Redis's own clock
// refills a key one token every 3 minutes of real time: MaxRefill bounds
// it (0 unless the test took that long), and every check holds with it.
TEST_F(LeasedLimiterTest, ManyKeysAcrossInstancesStayWithinTheirBound) {
  const auto start = std::chrono::steady_clock::now();
  const LimitSpec spec = LimitSpec::TokenBucket(20, absl::Hours(1));
  constexpr int kKeys = 200, kHot = 5, kInstances = 3, kTailVisits = 15;
  constexpr int64_t kBurst = 20, kA = 5;  // A = floor(0.25 x 20)
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.lease_ttl = absl::Milliseconds(200);
  std::vector<std::unique_ptr<LeasedLimiter>> limiters;
  for (int i = 0; i < kInstances; ++i) {
    limiters.push_back(Make(spec, lease, &clock));
    ASSERT_NE(limiters.back(), nullptr);
  }
  std::vector<std::string> keys;
  for (int k = 0; k < kKeys; ++k) keys.push_back(absl::StrCat("user", k));
  std::vector<std::atomic<int64_t>> admitted(kKeys);
  std::vector<Admitted> by_source(kInstances);
  auto decide = [&](int i, int k) {
    const Decision d = limiters[i]->TryAcquire(keys[k]);
    by_source[i].Count(d);
    // relaxed: a count, read after the threads were joined.
    if (d.allowed) admitted[k].fetch_add(1, std::memory_order_relaxed);
    return d;
  };
  auto sync_all = [&] {
    for (auto& l : limiters) Sync(*l);
  };

  // Each instance admits one request of each hot key from its credit; the
  // charges leave at the Sync. So every instance's first partial batch has
  // left at the clock's time, and until the clock moves a partial batch
  // leaves only when something waits for it (a lease a decision is denied
  // for, a Sync).
  for (int i = 0; i < kInstances; ++i) {
    for (int k = 0; k < kHot; ++k) ASSERT_TRUE(decide(i, k).allowed);
  }
  sync_all();

  // The tail, at a standing clock. A key's lease request (asked for once
  // it spent half its credit in an instance) leaves only when that
  // instance's credit is spent, or at the Sync after its visits, so no
  // reply reduces a credit a visit still needs: every visit is admitted.
  for (int k = kHot; k < kKeys; ++k) {
    for (int v = 0; v < kTailVisits; ++v) {
      const Decision d = decide(v % kInstances, k);
      EXPECT_TRUE(d.allowed) << keys[k] << " visit " << v;
      EXPECT_EQ(d.source, DecisionSource::kLocalCredit) << keys[k];
    }
    sync_all();
  }

  // The hot keys, in rounds until Redis has refused each of them to every
  // instance: the clock moves 100 ms (leases end every other round, charges
  // and partial batches leave without a Sync), the expiries are applied
  // with no decision running (a lease ends with at most one grant, which
  // goes back whole), then one thread per instance spends the keys until
  // denied, and every answer is applied.
  auto all_refused = [&] {
    for (auto& l : limiters) {
      for (int k = 0; k < kHot; ++k) {
        absl::StatusOr<LeaseKeyInfo> info = l->Inspect(keys[k]);
        if (!info.ok() || !info->denied) return false;
      }
    }
    return true;
  };
  int rounds = 0;
  for (; rounds < kMaxRounds && !all_refused(); ++rounds) {
    clock.Advance(absl::Milliseconds(100));
    sync_all();
    std::vector<std::thread> threads;
    for (int i = 0; i < kInstances; ++i) {
      threads.emplace_back([&, i] {
        for (int k = 0; k < kHot; ++k) {
          // Bounded: an instance never holds more than the burst.
          for (int n = 0; n < 1000 && decide(i, k).allowed; ++n) {
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    sync_all();
  }
  ASSERT_LT(rounds, kMaxRounds) << "Redis never refused every hot key";
  // The hot keys hold nothing (each was spent until refused); the tail
  // keys' leases go back.
  for (int i = 0; i < kInstances; ++i) {
    ASSERT_TRUE(limiters[i]->ReturnAll(kSyncBound).ok());
    ExpectRedisCountedExactlyTheAdmissions(*limiters[i], by_source[i]);
  }
  const std::vector<int64_t> remaining = RedisRemaining(spec, keys);
  const int64_t refill =
      MaxRefill(spec, std::chrono::steady_clock::now() - start);
  for (int k = 0; k < kKeys; ++k) {
    const int64_t n = admitted[k].load(), r = remaining[k];
    EXPECT_LE(n, kBurst + refill + kInstances * kA)
        << keys[k] << " refill " << refill;
    // Redis counted exactly the admissions (checked above per instance):
    // it holds the burst less them plus what it refilled, or says 0 in
    // debt (charges of at most instances x A beyond the burst).
    EXPECT_GE(n + r, kBurst) << keys[k] << " remaining " << r;
    EXPECT_LE(n + r, kBurst + refill + (r == 0 ? kInstances * kA : 0))
        << keys[k] << " remaining " << r << " refill " << refill;
    if (k < kHot) {
      EXPECT_LE(r, refill) << keys[k] << ": a hot key left its limit unused";
    } else {
      EXPECT_EQ(n, kTailVisits) << keys[k];
    }
  }
  for (auto& l : limiters) Sync(*l);
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

// Two instances, two threads each on their own handle, spend one key of
// 2000 a day (burst 2000) in rounds until Redis refuses it to both:
// together they admit all of the burst and at most burst + refill +
// instances x A (A = 0.25 x 2000), and Redis counted exactly what they
// admitted. As above, the limiters' clock is manual (100 ms a round:
// leases of 500 ms end every fifth round), and Redis's real clock refills
// one token every 43.2 s, which MaxRefill bounds.
TEST_F(LeasedLimiterTest, TwoInstancesHoldTheSharedLimit) {
  const auto start = std::chrono::steady_clock::now();
  const LimitSpec spec = LimitSpec::TokenBucket(2000, absl::Hours(24));
  constexpr int64_t kBurst = 2000, kA = 500, kInstances = 2;
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.lease_ttl = absl::Milliseconds(500);
  std::vector<std::unique_ptr<LeasedLimiter>> limiters;
  for (int i = 0; i < kInstances; ++i) {
    limiters.push_back(Make(spec, lease, &clock));
    ASSERT_NE(limiters.back(), nullptr);
  }
  std::vector<Admitted> admitted(kInstances);
  std::vector<LeasedLimiter::Handle> handles;  // two per instance
  for (int t = 0; t < 2 * kInstances; ++t) {
    auto h = limiters[t % kInstances]->Resolve("hot");
    ASSERT_TRUE(h.ok()) << h.status();
    handles.push_back(*std::move(h));
  }
  auto all_refused = [&] {
    for (auto& l : limiters) {
      absl::StatusOr<LeaseKeyInfo> info = l->Inspect("hot");
      if (!info.ok() || !info->denied) return false;
    }
    return true;
  };
  int rounds = 0;
  for (; rounds < kMaxRounds && !all_refused(); ++rounds) {
    clock.Advance(absl::Milliseconds(100));
    for (auto& l : limiters) Sync(*l);  // expiries, no decision running
    std::vector<std::thread> threads;
    for (int t = 0; t < 2 * kInstances; ++t) {
      threads.emplace_back([&, t] {
        LeasedLimiter& l = *limiters[t % kInstances];
        // Until this thread is denied (bounded: at most the burst).
        for (int n = 0; n < 100000; ++n) {
          const Decision d = l.TryAcquire(handles[t]);
          admitted[t % kInstances].Count(d);
          if (!d.allowed) break;
        }
      });
    }
    for (auto& th : threads) th.join();
    for (auto& l : limiters) Sync(*l);
  }
  ASSERT_LT(rounds, kMaxRounds) << "Redis never refused the key to both";
  int64_t total = 0;
  for (int i = 0; i < kInstances; ++i) {
    ASSERT_TRUE(limiters[i]->ReturnAll(kSyncBound).ok());
    ExpectRedisCountedExactlyTheAdmissions(*limiters[i], admitted[i]);
    total += admitted[i].lease.load() + admitted[i].credit.load();
  }
  const int64_t r = RedisRemaining(spec, "hot");
  const int64_t refill =
      MaxRefill(spec, std::chrono::steady_clock::now() - start);
  // Leased tokens are counted by Redis when granted; only the local credit
  // can go beyond the burst (docs/design.md).
  EXPECT_LE(total, kBurst + refill + kInstances * kA) << "refill " << refill;
  // As above: Redis holds the burst less what was admitted plus what it
  // refilled, or says 0 in debt.
  EXPECT_GE(total + r, kBurst) << "remaining " << r;
  EXPECT_LE(total + r, kBurst + refill + (r == 0 ? kInstances * kA : 0))
      << "remaining " << r << " refill " << refill;
  EXPECT_LE(r, refill) << "the limit was not used up";
}

// Two threads share one handle with mixed costs, so subtractions that find
// too few tokens (and are undone) race with ones that succeed. No token is
// made or lost: what was admitted plus what Redis still has is the window.
// (Whether the handle reads or subtracts first is a speed hint, which
// lease_bench's deny cases measure; both must give these results.)
TEST_F(LeasedLimiterTest, SharedHandleAdmitsExactlyTheWindowAcrossRefusals) {
  const LimitSpec spec = Anchored(LimitSpec::FixedWindow(300, absl::Hours(1)));
  // A standing clock: no lease expires (and strands merged leftovers)
  // mid-test, however slow the machine.
  ManualClock clock(absl::Now());
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;
  auto limiter = Make(spec, lease, &clock);
  auto h = limiter->Resolve("w");
  ASSERT_TRUE(h.ok()) << h.status();
  // Cold: denied, then served through the same handle once a lease lands.
  EXPECT_FALSE(limiter->TryAcquire(*h).allowed);
  Sync(*limiter);
  ASSERT_TRUE(limiter->TryAcquire(*h).allowed);
  const int64_t first = 1;
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
  // Until Redis has refused once (the window is spent). The load threads
  // make the progress, so the bound is a deadline; each round waits for
  // the reconciler's answers (Sync), it does not spin.
  const absl::Time deadline = absl::Now() + kSyncBound;
  while (limiter->stats().lease.denied_by_redis == 0 &&
         absl::Now() < deadline) {
    Sync(*limiter);
  }
  EXPECT_GE(limiter->stats().lease.denied_by_redis, 1u);
  stop.store(true);
  for (auto& t : threads) t.join();
  // Spend what is left here: leftovers merged through two or more refills
  // are dropped, not returned, by design (docs/design.md).
  for (int i = 0; i < 300 && limiter->TryAcquire(*h, 1).allowed; ++i) {
    admitted.fetch_add(1);
  }
  ASSERT_TRUE(limiter->ReturnAll(kSyncBound).ok());
  EXPECT_LE(admitted.load(), 300);
  // Redis refuses only when it holds less than the largest cost asked for.
  EXPECT_GE(admitted.load(), 240);
  EXPECT_EQ(admitted.load() + RedisRemaining(spec, "w"), 300);
}

// Leased mode for every algorithm of the scripts: two instances drain a
// limit of 40 per hour (nothing refills or slides out during the test)
// and together admit exactly 40, which Redis then no longer has.
TEST_F(LeasedLimiterTest, EveryAlgorithmAdmitsExactlyItsLimitAcrossInstances) {
  for (const auto& [name, every] :
       tokenlease::testing::EveryAlgorithm(40, absl::Hours(1))) {
    SCOPED_TRACE(name);
    const LimitSpec spec = Anchored(every);
    LeaseOptions lease;
    lease.cold_key_policy = ColdKeyPolicy::kDeny;
    ManualClock clock(absl::Now());  // no lease expires mid-test
    auto a = Make(spec, lease, &clock);
    auto b = Make(spec, lease, &clock);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    int64_t admitted = 0;
    // Both ask until Redis has refused each of them once.
    for (int round = 0;
         round < kMaxRounds && (a->stats().lease.denied_by_redis == 0 ||
                                b->stats().lease.denied_by_redis == 0);
         ++round) {
      admitted += a->TryAcquire(name).allowed;
      admitted += b->TryAcquire(name).allowed;
      Sync(*a);
      Sync(*b);
    }
    ASSERT_GE(a->stats().lease.denied_by_redis, 1u);
    ASSERT_GE(b->stats().lease.denied_by_redis, 1u);
    // Spend what the leases still hold (bounded: at most the limit).
    for (LeasedLimiter* l : {a.get(), b.get()}) {
      for (int i = 0; i < 40 && l->TryAcquire(name).allowed; ++i) ++admitted;
    }
    ASSERT_TRUE(a->ReturnAll(kSyncBound).ok());
    ASSERT_TRUE(b->ReturnAll(kSyncBound).ok());
    EXPECT_EQ(admitted, 40);
    EXPECT_EQ(RedisRemaining(spec, name), 0);
  }
}

TEST_F(LeasedLimiterTest, CreateRejectsBadOptions) {
  LeasedLimiterOptions options;
  options.connection = NewConnection();
  options.key_prefix = prefix();
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
  options.key_prefix = prefix();
  options.shards = 3;
  l = LeasedLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("LeasedLimiterOptions.shards"));
  options.shards = 64;
  options.max_keys = 0;
  l = LeasedLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("LeasedLimiterOptions.max_keys"));
  options.max_keys = 1 << 20;
  options.max_key_bytes = 0;
  l = LeasedLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("LeasedLimiterOptions.max_key_bytes is 0"));
}

// A key longer than max_key_bytes is refused before it is stored or sent to
// Redis.
TEST_F(LeasedLimiterTest, KeysLongerThanMaxKeyBytesAreRefused) {
  LeasedLimiterOptions options;
  options.connection = NewConnection();
  options.key_prefix = prefix();
  options.max_key_bytes = 8;
  auto l =
      LeasedLimiter::Create(LimitSpec::Gcra(100, absl::Seconds(1)), options);
  ASSERT_TRUE(l.ok()) << l.status();
  const std::string too_long(9, 'k');
  const Decision d = (*l)->TryAcquire(too_long);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kInvalidArgument);
  EXPECT_EQ(d.retry_after_ns, kNever);
  auto h = (*l)->Resolve(too_long);
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(h.status().message(),
              HasSubstr("at most LeasedLimiterOptions.max_key_bytes (8)"));
  EXPECT_EQ((*l)->Inspect(too_long).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*l)->TryAcquire(std::string(8, 'k')).allowed);  // local credit
  ASSERT_TRUE((*l)->Sync(absl::Seconds(10)).ok());
  const SharedLimitStats s = (*l)->stats();
  EXPECT_EQ(s.lease.charges, 1u) << "only the 8-byte key reached Redis";
  EXPECT_EQ(s.lease.lease_requests, 0u);
}

// Sync is a synchronisation point with a deadline: against a frozen server
// it gives up in time and says why; once the server answers it succeeds.
TEST_F(LeasedLimiterFaultTest, SyncFailsByItsDeadlineWhileRedisIsFrozen) {
  LeaseOptions lease;
  lease.cold_key_policy = ColdKeyPolicy::kDeny;
  auto limiter = Make(LimitSpec::Gcra(100, absl::Seconds(1)), lease);
  // A lease answered first: the connection is up before the server freezes
  // (otherwise, on a slow machine, the request can fail at once for want of
  // a connection, and Sync finds nothing in flight).
  EXPECT_FALSE(limiter->TryAcquire("warm").allowed);
  Sync(*limiter);
  server().Pause();
  EXPECT_FALSE(limiter->TryAcquire("f").allowed);  // asks for a lease
  const absl::Status s = limiter->Sync(absl::Milliseconds(100));
  server().Resume();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("is Redis reachable"));
  // The frozen call times out (and may be retried after a backoff); the
  // reconciler goes quiet again once Redis answers.
  Sync(*limiter);
}

TEST_F(LeasedLimiterTest, InvalidCostAndEmptyHandle) {
  auto limiter = Make(LimitSpec::Gcra(10, absl::Seconds(1)), LeaseOptions{});
  EXPECT_EQ(limiter->TryAcquire("x", -1).source,
            DecisionSource::kInvalidArgument);
  EXPECT_EQ(limiter->TryAcquire(LeasedLimiter::Handle(), 1).source,
            DecisionSource::kInvalidArgument);
  Decision d = limiter->TryAcquire("x", 11);  // beyond the burst
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, kNever);
}

}  // namespace
}  // namespace tokenlease
