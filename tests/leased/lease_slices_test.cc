// Per-thread slices of a hot key (src/leased/lease_slices.h) without a
// server: deciding threads refill their slices from the key's balance while
// the test, as the reconciler, takes the slices back (lease ends, idle
// slices) and grants more. Every token is counted: each is admitted once or
// taken back once, never both, never neither.
#include "leased/lease_slices.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "leased/lease_entry.h"

namespace tokenlease::internal {
namespace {

constexpr int64_t kMs = 1'000'000;

// One decision on `e` for `cost` as the decision path makes it: from the
// thread's slice inline (counted in the slice if `counted`, as a handle
// decision; else not, as a decision by name), else from the slice
// refilled from the balance, else from the balance. `*inline_admits`
// counts the inline admissions the slice counted.
bool Decide(LeaseEntry* e, int64_t cost, bool counted = false,
            int64_t* inline_admits = nullptr) {
  LeaseSlices* s = e->slices.load(std::memory_order_acquire);
  int64_t remaining = 0;
  bool low = false;
  if (s != nullptr) {
    if (counted ? TakeFromSlice<true>(*s, cost, &remaining)
                : TakeFromSlice<false>(*s, cost, &remaining)) {
      if (counted && inline_admits != nullptr) ++*inline_admits;
      return true;
    }
    switch (RefillSlice(e, s, cost, &remaining, &low)) {
      case SliceRefill::kAdmitted:
        return true;
      case SliceRefill::kShort:
        return false;
      case SliceRefill::kNoSlice:
        break;
    }
  }
  const int64_t old = e->balance.fetch_sub(cost, std::memory_order_relaxed);
  if (old >= cost) return true;
  e->balance.fetch_add(cost, std::memory_order_relaxed);
  return false;
}

TEST(LeaseSlicesTest, AnExitedThreadsIndexIsReused) {
  uint32_t first = 0, second = 0;
  std::thread([&] { first = ClaimLeaseSlice(); }).join();
  std::thread([&] { second = ClaimLeaseSlice(); }).join();
  EXPECT_GT(first, 0u);
  EXPECT_EQ(second, first);
  // A thread keeps its index.
  const uint32_t mine = ClaimLeaseSlice();
  EXPECT_EQ(ClaimLeaseSlice(), mine);
  EXPECT_EQ(tls_lease_slice, mine);
}

TEST(LeaseSlicesTest, AKeyGetsSlicesOnlyFromTheThreshold) {
  if (!SlicesSupported()) GTEST_SKIP() << "membarrier(2) is not available";
  LeaseSlicer slicer(/*threshold=*/1000, /*slices_per_key=*/4, 20 * kMs,
                     /*single_thread=*/false);
  LeaseEntry e("k");
  e.flags.store(kManyThreads);  // several threads decide on it
  slicer.OnGrant(&e, 999);
  EXPECT_EQ(e.slices.load(), nullptr);
  slicer.OnGrant(&e, 1000);
  ASSERT_NE(e.slices.load(), nullptr);
  EXPECT_EQ(e.slices.load()->count, 4u);
  EXPECT_EQ(slicer.sliced_keys(), 1u);
  slicer.Forget(&e);
  EXPECT_EQ(e.slices.load(), nullptr);
  EXPECT_EQ(slicer.sliced_keys(), 0u);

  // One thread's refills mark nothing; a second thread's mark the key.
  LeaseEntry one("one");
  NoteRefiller(&one);
  NoteRefiller(&one);
  EXPECT_FALSE(one.flags.load() & kManyThreads);
  slicer.OnGrant(&one, 1000);
  EXPECT_EQ(one.slices.load(), nullptr) << "one thread: no slices";
  std::thread([&] { NoteRefiller(&one); }).join();
  EXPECT_TRUE(one.flags.load() & kManyThreads);
  slicer.OnGrant(&one, 1000);
  EXPECT_NE(one.slices.load(), nullptr);
  slicer.Forget(&one);

  // slice_single_thread: one thread's key gets slices at the threshold.
  LeaseSlicer lone(/*threshold=*/1000, 4, 20 * kMs, /*single_thread=*/true);
  LeaseEntry solo("solo");
  NoteRefiller(&solo);
  EXPECT_FALSE(solo.flags.load() & kManyThreads);
  lone.OnGrant(&solo, 999);
  EXPECT_EQ(solo.slices.load(), nullptr) << "below the threshold";
  lone.OnGrant(&solo, 1000);
  EXPECT_NE(solo.slices.load(), nullptr) << "one thread, single_thread";
  lone.Forget(&solo);

  LeaseSlicer never(/*threshold=*/0, 4, 20 * kMs);
  LeaseEntry f("f");
  f.flags.store(kManyThreads);
  never.OnGrant(&f, int64_t{1} << 40);
  EXPECT_EQ(f.slices.load(), nullptr);
}

TEST(LeaseSlicesTest, AnIdleThreadsSliceReturnsToTheBalance) {
  if (!SlicesSupported()) GTEST_SKIP() << "membarrier(2) is not available";
  LeaseSlicer slicer(/*threshold=*/64, /*slices_per_key=*/0, 20 * kMs);
  LeaseEntry e("k");
  e.flags.store(kManyThreads);  // several threads decide on it
  e.balance.store(10'000);
  slicer.OnGrant(&e, 10'000);
  // A thread decides a few times (its slice fills with a chunk), then
  // stops deciding but lives on.
  std::atomic<bool> done{false}, leave{false};
  std::thread t([&] {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(Decide(&e, 1));
    done.store(true);
    while (!leave.load()) std::this_thread::yield();
  });
  while (!done.load()) std::this_thread::yield();
  const int64_t held = LeaseSlicer::Held(&e);
  EXPECT_GT(held, 0);
  EXPECT_EQ(e.balance.load() + held, 10'000 - 20);
  int64_t now = 0;
  slicer.Sweep(now);  // sees the tokens
  slicer.Sweep(now += 19 * kMs);
  EXPECT_EQ(LeaseSlicer::Held(&e), held) << "returned before slice_idle";
  slicer.Sweep(now += 1 * kMs);
  EXPECT_EQ(LeaseSlicer::Held(&e), 0);
  EXPECT_EQ(e.balance.load(), 10'000 - 20);
  leave.store(true);
  t.join();
  slicer.Forget(&e);
}

TEST(LeaseSlicesTest, CloseTakesEverySliceAndTheOwnersUseTheBalance) {
  if (!SlicesSupported()) GTEST_SKIP() << "membarrier(2) is not available";
  LeaseSlicer slicer(/*threshold=*/64, /*slices_per_key=*/0, 20 * kMs);
  LeaseEntry e("k");
  e.flags.store(kManyThreads);  // several threads decide on it
  e.balance.store(1'000);
  slicer.OnGrant(&e, 1'000);
  // Refills of 1, then 2 tokens: the slice holds one.
  ASSERT_TRUE(Decide(&e, 1));
  ASSERT_TRUE(Decide(&e, 1));
  const int64_t held = LeaseSlicer::Held(&e);
  EXPECT_EQ(held, 1);
  ASSERT_TRUE(slicer.Close(&e));
  EXPECT_TRUE(slicer.Closing(&e));
  EXPECT_EQ(LeaseSlicer::Held(&e), 0);
  // Revoked: the owner decides from the balance and fills no slice.
  ASSERT_TRUE(Decide(&e, 1));
  EXPECT_EQ(LeaseSlicer::Held(&e), 0);
  EXPECT_EQ(e.balance.load(), 1'000 - 3 - held);
  EXPECT_EQ(slicer.Reopen(&e), held);
  EXPECT_FALSE(slicer.Closing(&e));
  ASSERT_TRUE(Decide(&e, 1));
  ASSERT_TRUE(Decide(&e, 1));
  EXPECT_EQ(LeaseSlicer::Held(&e), 1);
  slicer.Forget(&e);
}

// An owner preempted inside its section (`started` one past `ended`, as
// the test sets by hand) holds the close of that slice only: the others are
// taken, the slices stay revoked, and a later Close takes the rest.
TEST(LeaseSlicesTest, AClosePreemptedOwnerIsFinishedAtALaterTry) {
  if (!SlicesSupported()) GTEST_SKIP() << "membarrier(2) is not available";
  LeaseSlicer slicer(/*threshold=*/64, /*slices_per_key=*/4, 20 * kMs);
  LeaseEntry e("k");
  e.flags.store(kManyThreads);  // several threads decide on it
  slicer.OnGrant(&e, 1'000);
  LeaseSlices* s = e.slices.load();
  for (uint32_t i = 0; i < 4; ++i) (*s)[i].tokens.store(10 * (i + 1));
  (*s)[2].started.store((*s)[2].ended.load() + 1);  // "inside its section"
  EXPECT_FALSE(slicer.Close(&e));
  EXPECT_TRUE(slicer.Closing(&e));
  EXPECT_EQ(LeaseSlicer::Held(&e), 30);  // slice 2 is left alone
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ((*s)[i].revoked.load(), 1u);
  (*s)[2].tokens.store(29);  // its section ends, having spent one
  (*s)[2].ended.store((*s)[2].ended.load() + 1);
  EXPECT_TRUE(slicer.Close(&e));
  EXPECT_EQ(LeaseSlicer::Held(&e), 0);
  EXPECT_EQ(slicer.Reopen(&e), 10 + 20 + 29 + 40);
  EXPECT_FALSE(slicer.Closing(&e));
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ((*s)[i].revoked.load(), 0u);
  slicer.Forget(&e);
}

// A hot key's inline decisions are counted in its slices; when the key is
// forgotten its block goes to the next hot key with the counts, so the
// limiter's count never goes back.
TEST(LeaseSlicesTest, AForgottenKeysCountsStayWithItsBlock) {
  if (!SlicesSupported()) GTEST_SKIP() << "membarrier(2) is not available";
  LeaseSlicer slicer(/*threshold=*/64, /*slices_per_key=*/4, 20 * kMs);
  int64_t counted = 0;
  LeaseEntry a("a");
  a.flags.store(kManyThreads);
  a.balance.store(1'000);
  slicer.OnGrant(&a, 1'000);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Decide(&a, 1, true, &counted));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Decide(&a, 1));  // by name
  EXPECT_GT(counted, 0);  // the first decision refills: not inline
  EXPECT_EQ(slicer.Admitted(), static_cast<uint64_t>(counted));
  ASSERT_TRUE(slicer.Close(&a));
  slicer.Reopen(&a);
  LeaseSlices* block = a.slices.load();
  slicer.Forget(&a);
  EXPECT_EQ(slicer.Admitted(), static_cast<uint64_t>(counted));
  LeaseEntry b("b");
  b.flags.store(kManyThreads);
  b.balance.store(1'000);
  slicer.OnGrant(&b, 1'000);
  EXPECT_EQ(b.slices.load(), block);  // reused
  EXPECT_EQ(LeaseSlicer::Held(&b), 0);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Decide(&b, 1, true, &counted));
  EXPECT_EQ(slicer.Admitted(), static_cast<uint64_t>(counted));
  EXPECT_EQ(b.balance.load() + LeaseSlicer::Held(&b), 1'000 - 10);
  slicer.Forget(&b);
}

// The stress: threads decide with costs 1, 2 and 5 while the test ends
// leases (Close, then take the balance), sweeps idle slices with a manual
// clock, and grants again. At the end every token granted was admitted or
// taken back exactly once.
TEST(LeaseSlicesTest, TokensAreNeverSpentTwiceUnderRacingTakeBacks) {
  if (!SlicesSupported()) GTEST_SKIP() << "membarrier(2) is not available";
  constexpr int kThreads = 6;  // more than cores: owners get preempted
  constexpr int64_t kGrant = 5'000;
  constexpr int kGrants = 100;
  LeaseSlicer slicer(/*threshold=*/64, /*slices_per_key=*/4, 2 * kMs);
  LeaseEntry e("k");
  e.flags.store(kManyThreads);  // several threads decide on it
  std::atomic<bool> stop{false};
  std::atomic<int64_t> admitted{0};
  std::atomic<int> admitting{0};    // threads that have admitted once
  std::atomic<int64_t> counted{0};  // inline admissions the slices counted
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int64_t cost = t % 3 == 0 ? 1 : t % 3 == 1 ? 2 : 5;
      int64_t mine = 0, inline_admits = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (Decide(&e, cost, /*counted=*/t % 2 == 0, &inline_admits)) {
          if (mine == 0) admitting.fetch_add(1);
          mine += cost;
        }
        // Some threads pause now and then, so that their slices idle.
        if (t >= 4 && mine % 1000 < cost) std::this_thread::yield();
      }
      admitted.fetch_add(mine);
      counted.fetch_add(inline_admits);
    });
  }
  int64_t granted = 0, taken_back = 0, now = 0;
  auto grant = [&] {
    e.balance.fetch_add(kGrant);
    granted += kGrant;
    slicer.OnGrant(&e, kGrant);
  };
  // The rounds race only once every thread decides: on a loaded machine
  // they start late (the rounds alone take a few ms). Grants meanwhile as
  // the balance runs low; bounded for a machine that never runs them.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (admitting.load() < kThreads && absl::Now() < deadline) {
    if (e.balance.load() < kGrant) grant();
    slicer.Sweep(now += kMs);
    std::this_thread::yield();
  }
  EXPECT_EQ(admitting.load(), kThreads);
  bool closing = false;
  for (int g = 0; g < kGrants; ++g) {
    grant();
    std::this_thread::yield();
    slicer.Sweep(now += kMs);
    if (g % 4 == 3) {  // a lease ends: slices first, then the balance
      // As EndLease: a Close or a balance that is not ready is tried
      // again at a later round (the slices stay closed meanwhile).
      closing = true;
    }
    if (closing) {
      if (!slicer.Close(&e)) continue;
      int64_t left = e.balance.load();
      while (left > 0 && !e.balance.compare_exchange_weak(left, 0)) {
      }
      if (left < 0) continue;  // a failed subtraction's add-back is on its way
      taken_back += slicer.Reopen(&e) + left;
      closing = false;
    }
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(slicer.Close(&e));
  taken_back += slicer.Reopen(&e) + e.balance.exchange(0);
  EXPECT_EQ(admitted.load() + taken_back, granted);
  EXPECT_GT(admitted.load(), 0);
  // Every counted inline admission, and only those, is in the count.
  EXPECT_GT(counted.load(), 0);
  EXPECT_EQ(slicer.Admitted(), static_cast<uint64_t>(counted.load()));
  slicer.Forget(&e);
}

}  // namespace
}  // namespace tokenlease::internal
