// A hot key's per-thread slices (LeaseOptions::slice_threshold) against a
// real redis-server: threads through handles and by name drain one key
// while leases end and idle slices go back; Redis counts exactly what was
// admitted. The limiter's clock is a ManualClock the test moves (lease
// expiry, slice_idle); Redis's clock is real, and the limits here never
// refill during a test (an hour-long window starting now).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "testing/leased_fixture.h"
#include "testing/redis_test.h"
#include "testing/specs.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using ::tokenlease::testing::AnchoredAt;

constexpr absl::Duration kSyncBound = absl::Seconds(20);

class HotKeyTest : public tokenlease::testing::LeasedFixture<
                       tokenlease::testing::RedisTest> {
 protected:
  // Options that give a key slices as soon as its lease reaches 64 tokens.
  static LeaseOptions Sliced() {
    LeaseOptions lease;
    lease.slice_threshold = 64;
    lease.slices_per_key = 4;  // and fewer than the threads below
    lease.cold_key_policy = ColdKeyPolicy::kDeny;
    lease.slice_idle = absl::Milliseconds(4);
    return lease;
  }

  // `threads` threads drain "hot" (a fixed window of 200,000 for an hour)
  // on a limiter with `lease`, `watch` running on this thread before each
  // Sync while they decide; checks that Redis counts exactly what was
  // admitted and, if `check_sliced`, that the key is sliced at the end.
  void DrainExactly(const LeaseOptions& lease, int threads,
                    const std::function<void(LeasedLimiter&)>& watch,
                    bool check_sliced = true);
};

// `threads` threads decide on "hot" (half through their own handle copy,
// half by name; costs 1 and 3) until Redis has refused once, while
// `between_syncs` runs on this thread before each Sync. Returns what was
// admitted, everything spent to the last token.
// `settle` runs after the threads stopped, before this thread spends what
// is left. Checks that stats() counted every decision (hot keys' slices
// count theirs apart: LeaseSlice::ended).
int64_t Drain(
    LeasedLimiter& limiter, int threads,
    const std::function<void()>& between_syncs,
    const std::function<void()>& settle = [] {}) {
  auto h = limiter.Resolve("hot");
  EXPECT_TRUE(h.ok()) << h.status();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> admitted{0};
  std::atomic<uint64_t> decided{0}, allowed{0};  // decisions made, admitted
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t, handle = *h] {
      const int64_t cost = t % 2 == 0 ? 1 : 3;
      int64_t mine = 0;
      uint64_t made = 0, yes = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const Decision d = t < threads / 2 ? limiter.TryAcquire(handle, cost)
                                           : limiter.TryAcquire("hot", cost);
        ++made;
        if (d.allowed) {
          mine += cost;
          ++yes;
        }
      }
      admitted.fetch_add(mine);
      decided.fetch_add(made);
      allowed.fetch_add(yes);
    });
  }
  const absl::Time deadline = absl::Now() + kSyncBound;
  while (limiter.stats().lease.denied_by_redis == 0 && absl::Now() < deadline) {
    between_syncs();
    const absl::Status s = limiter.Sync(kSyncBound);
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_GE(limiter.stats().lease.denied_by_redis, 1u);
  stop.store(true);
  for (std::thread& t : pool) t.join();
  settle();
  // What the slices and the balance still hold, spent here.
  while (limiter.TryAcquire(*h, 1).allowed) {
    admitted.fetch_add(1);
    allowed.fetch_add(1);
    decided.fetch_add(1);
  }
  decided.fetch_add(1);  // the refusal that ended the loop
  const DecisionCounts counts = limiter.stats().decisions;
  EXPECT_EQ(counts.Total(), decided.load());
  EXPECT_EQ(counts.TotalAdmitted(), allowed.load());
  return admitted.load();
}

void HotKeyTest::DrainExactly(const LeaseOptions& lease, int threads,
                              const std::function<void(LeasedLimiter&)>& watch,
                              bool check_sliced) {
  constexpr int64_t kLimit = 200'000;
  const LimitSpec spec =
      AnchoredAt(LimitSpec::FixedWindow(kLimit, absl::Hours(1)), absl::Now());
  // A clock that only moves at the end: no lease expires (leftovers merged
  // through two refills would be dropped, by design).
  ManualClock clock(absl::Now());
  auto limiter = Make(spec, lease, &clock);
  // The stopped threads' slices idle out into the balance (two steps past
  // slice_idle), so that this thread can spend them: a lease returned while
  // slices hold tokens of two grants ago drops those (as it drops any
  // leftover merged through two refills).
  const int64_t admitted = Drain(
      *limiter, threads, [&] { watch(*limiter); },
      [&] {
        for (int i = 0; i < 2; ++i) {
          clock.Advance(absl::Milliseconds(5));
          ASSERT_TRUE(limiter->Sync(kSyncBound).ok());
        }
      });
  auto info = limiter->Inspect("hot");
  ASSERT_TRUE(info.ok()) << info.status();
  if (check_sliced) {
    EXPECT_TRUE(info->sliced);
  }
  ASSERT_TRUE(limiter->ReturnAll(kSyncBound).ok());
  EXPECT_EQ(limiter->stats().lease.held_tokens, 0);
  EXPECT_LE(admitted, kLimit);
  EXPECT_EQ(admitted + RedisRemaining(spec, "hot"), kLimit);
  // Redis refuses only when less than the largest cost (3) is left.
  EXPECT_GE(admitted, kLimit - 3 * 4);
}

TEST_F(HotKeyTest, SlicedKeyAdmitsExactlyTheLimitAcrossThreads) {
  DrainExactly(Sliced(), 6, [](LeasedLimiter&) {});
}

// LeaseOptions::slice_single_thread (default true): a key one thread
// decides on gets slices while it alone decides, and Redis still counts
// exactly what was admitted.
TEST_F(HotKeyTest, ALoneThreadDecidesFromSlicesByDefault) {
  ASSERT_TRUE(LeaseOptions{}.slice_single_thread);
  // Looked at while the one deciding thread runs (this thread decides
  // nothing until Drain's threads have stopped).
  bool sliced_while_alone = false;
  DrainExactly(Sliced(), 1, [&](LeasedLimiter& limiter) {
    auto info = limiter.Inspect("hot");
    if (info.ok() && info->sliced) sliced_while_alone = true;
  });
  EXPECT_TRUE(sliced_while_alone);
}

// slice_single_thread = false: a key one thread decides on keeps the
// balance's path however hot it is (slices come with a second thread), and
// Redis counts exactly what was admitted.
TEST_F(HotKeyTest, ALoneThreadKeepsTheBalanceWithoutSliceSingleThread) {
  LeaseOptions lease = Sliced();
  lease.slice_single_thread = false;
  bool sliced_while_alone = false;
  int64_t most_held = 0;  // the key was hot: it held a lease past the threshold
  DrainExactly(
      lease, 1,
      [&](LeasedLimiter& limiter) {
        auto info = limiter.Inspect("hot");
        ASSERT_TRUE(info.ok()) << info.status();
        most_held = std::max(most_held, info->balance);
        if (info->sliced) sliced_while_alone = true;
      },
      /*check_sliced=*/false);
  EXPECT_GE(most_held, lease.slice_threshold);
  EXPECT_FALSE(sliced_while_alone);
}

TEST_F(HotKeyTest, SlicedKeyStaysWithinTheLimitWhileLeasesEndAndSlicesIdle) {
  constexpr int64_t kLimit = 200'000;
  const LimitSpec spec =
      AnchoredAt(LimitSpec::FixedWindow(kLimit, absl::Hours(1)), absl::Now());
  ManualClock clock(absl::Now());
  LeaseOptions lease = Sliced();
  lease.lease_ttl = absl::Milliseconds(10);
  lease.idle_evict = absl::Milliseconds(20);
  lease.charge_delay = absl::Milliseconds(5);
  auto limiter = Make(spec, lease, &clock);
  // Each round moves the limiter's clock by 3 ms: a lease whose refills
  // stop ends within a few rounds, and slices of threads that lose the
  // race for a while idle out.
  // Every fourth round also returns every lease while the threads decide
  // (the slices closed under load).
  int round = 0;
  const int64_t admitted = Drain(*limiter, 6, [&] {
    clock.Advance(absl::Milliseconds(3));
    if (++round % 4 == 0) {
      const absl::Status s = limiter->ReturnAll(kSyncBound);
      EXPECT_TRUE(s.ok()) << s;
    }
  });
  ASSERT_TRUE(limiter->ReturnAll(kSyncBound).ok());
  const SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.lease.held_tokens, 0);
  EXPECT_GE(s.lease.leases_returned, 1u);
  EXPECT_LE(admitted, kLimit);
  // Never more than Redis counted; what it counted beyond the admissions
  // are leftovers dropped by design (merged through two refills).
  EXPECT_LE(admitted + RedisRemaining(spec, "hot"), kLimit);
  EXPECT_GE(admitted, kLimit * 9 / 10);
}

TEST_F(HotKeyTest, AnIdleThreadsSliceGoesBackToTheLease) {
  const LimitSpec spec = AnchoredAt(
      LimitSpec::FixedWindow(1'000'000, absl::Hours(1)), absl::Now());
  ManualClock clock(absl::Now());
  auto limiter = Make(spec, Sliced(), &clock);
  auto h = limiter->Resolve("hot");
  ASSERT_TRUE(h.ok());
  // Until the key holds a lease large enough for slices: this thread and
  // another take turns (two deciding threads: the key gets slices whatever
  // slice_single_thread says).
  for (int round = 0; round < 50 && !limiter->Inspect("hot")->sliced; ++round) {
    for (int i = 0; i < 200; ++i) limiter->TryAcquire(*h);
    std::thread([&, handle = *h] {
      for (int i = 0; i < 200; ++i) limiter->TryAcquire(handle);
    }).join();
    ASSERT_TRUE(limiter->Sync(kSyncBound).ok());
  }
  ASSERT_TRUE(limiter->Inspect("hot")->sliced);
  // Another thread decides a little and stays alive, idle (as this one).
  std::atomic<bool> done{false}, leave{false};
  std::thread idle([&, handle = *h] {
    // Ten admissions (a denial waits for the refill it asked for).
    int allowed = 0;
    for (int i = 0; i < 1000 && allowed < 10; ++i) {
      if (limiter->TryAcquire(handle).allowed) {
        ++allowed;
      } else {
        EXPECT_TRUE(limiter->Sync(kSyncBound).ok());
      }
    }
    EXPECT_EQ(allowed, 10);
    done.store(true);
    while (!leave.load()) std::this_thread::yield();
  });
  while (!done.load()) std::this_thread::yield();
  const int64_t held = limiter->Inspect("hot")->sliced_tokens;
  const int64_t balance = limiter->Inspect("hot")->balance;
  const uint64_t granted = limiter->stats().lease.tokens_granted;
  ASSERT_GT(held, 0);
  // Two steps after slice_idle: the first sees the tokens, the second
  // finds them unchanged for longer than slice_idle.
  ASSERT_TRUE(limiter->Sync(kSyncBound).ok());
  clock.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(limiter->Sync(kSyncBound).ok());
  clock.Advance(absl::Milliseconds(5));
  ASSERT_TRUE(limiter->Sync(kSyncBound).ok());
  EXPECT_EQ(limiter->Inspect("hot")->sliced_tokens, 0);
  // The tokens went back to the key's balance, not away (the balance also
  // has what was granted meanwhile: prefetches asked for earlier).
  EXPECT_EQ(limiter->Inspect("hot")->balance,
            balance + static_cast<int64_t>(
                          limiter->stats().lease.tokens_granted - granted));
  leave.store(true);
  idle.join();
}

}  // namespace
}  // namespace tokenlease
