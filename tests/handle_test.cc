// Limiter::Handle semantics: copies are pins on the same key; the key is never
// evicted while any copy exists; moved-from and default handles are empty.
#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "tokenlease/limiter.h"

namespace tokenlease {
namespace {

std::unique_ptr<Limiter> Make(ManualClock* clock) {
  LimiterOptions o;
  o.clock = clock;
  auto l = Limiter::Create(LimitSpec::TokenBucket(10, absl::Seconds(1)), o);
  EXPECT_TRUE(l.ok()) << l.status();
  return std::move(*l);
}

TEST(LimiterHandleTest, EveryCopyPinsTheKeyUntilTheLastIsGone) {
  ManualClock clock;
  auto l = Make(&clock);
  auto h = l->Resolve("k");
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(l->TryAcquire(*h).allowed);
  clock.Advance(absl::Seconds(1));  // the bucket is full again: idle
  {
    Limiter::Handle copy = *h;
    Limiter::Handle assigned;
    assigned = copy;
    EXPECT_EQ(copy.key(), "k");
    EXPECT_EQ(assigned.key(), "k");
    *h = Limiter::Handle();  // the original lets go
    EXPECT_FALSE(h->valid());
    EXPECT_EQ(l->EvictIdle(), 0);  // two copies still pin it
    copy = Limiter::Handle();
    EXPECT_EQ(l->EvictIdle(), 0);  // one still does
    EXPECT_TRUE(l->TryAcquire(assigned).allowed);
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(l->EvictIdle(), 1);
  EXPECT_EQ(l->key_count(), 0);
}

TEST(LimiterHandleTest, SelfAssignmentAndMovesKeepExactlyOnePin) {
  ManualClock clock;
  auto l = Make(&clock);
  {
    auto h = l->Resolve("k");
    ASSERT_TRUE(h.ok());
    Limiter::Handle a = *std::move(h);
    Limiter::Handle& alias = a;
    a = alias;  // self-assignment
    Limiter::Handle b = std::move(a);
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): by design
    EXPECT_TRUE(b.valid());
    EXPECT_EQ(l->EvictIdle(), 0);
  }
  EXPECT_EQ(l->EvictIdle(), 1);
}

// Each thread decides through its own copy; the decisions are the key's.
TEST(LimiterHandleTest, CopiesInManyThreadsShareTheKeysLimit) {
  ManualClock clock;
  auto l = Make(&clock);
  auto h = l->Resolve("k");
  ASSERT_TRUE(h.ok());
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, copy = *h] {
      for (int i = 0; i < 100; ++i) admitted += l->TryAcquire(copy).allowed;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 10);  // the burst, once: the clock is frozen
}

}  // namespace
}  // namespace tokenlease
