// Limiter::Handle semantics: copies are pins on the same key; the key is never
// evicted while any copy exists; moved-from and default handles are empty.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "tokenlease/limiter.h"

namespace tokenlease {
namespace {

// A token bucket of 10/s on a manual clock, and a handle of its key "k".
class LimiterHandleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LimiterOptions o;
    o.clock = &clock_;
    auto l = Limiter::Create(LimitSpec::TokenBucket(10, absl::Seconds(1)), o);
    ASSERT_TRUE(l.ok()) << l.status();
    limiter_ = *std::move(l);
    auto h = limiter_->Resolve("k");
    ASSERT_TRUE(h.ok());
    handle_ = *std::move(h);
  }

  ManualClock clock_;
  std::unique_ptr<Limiter> limiter_;
  Limiter::Handle handle_;
};

TEST_F(LimiterHandleTest, EveryCopyPinsTheKeyUntilTheLastIsGone) {
  ASSERT_TRUE(limiter_->TryAcquire(handle_).allowed);
  clock_.Advance(absl::Seconds(1));  // the bucket is full again: idle
  {
    Limiter::Handle copy = handle_;
    Limiter::Handle assigned;
    assigned = copy;
    EXPECT_EQ(copy.key(), "k");
    EXPECT_EQ(assigned.key(), "k");
    handle_ = Limiter::Handle();  // the original lets go
    EXPECT_FALSE(handle_.valid());
    EXPECT_EQ(limiter_->EvictIdle(), 0);  // two copies still pin it
    copy = Limiter::Handle();
    EXPECT_EQ(limiter_->EvictIdle(), 0);  // one still does
    EXPECT_TRUE(limiter_->TryAcquire(assigned).allowed);
    clock_.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(limiter_->EvictIdle(), 1);
  EXPECT_EQ(limiter_->key_count(), 0);
}

TEST_F(LimiterHandleTest, SelfAssignmentAndMovesKeepExactlyOnePin) {
  {
    Limiter::Handle a = std::move(handle_);
    Limiter::Handle& alias = a;
    a = alias;  // self-assignment
    Limiter::Handle b = std::move(a);
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): by design
    EXPECT_TRUE(b.valid());
    EXPECT_EQ(limiter_->EvictIdle(), 0);
  }
  EXPECT_EQ(limiter_->EvictIdle(), 1);
}

// Each thread decides through its own copy; the decisions are the key's.
TEST_F(LimiterHandleTest, CopiesInManyThreadsShareTheKeysLimit) {
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, copy = handle_] {
      for (int i = 0; i < 100; ++i) {
        admitted += limiter_->TryAcquire(copy).allowed;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 10);  // the burst, once: the clock is frozen
}

}  // namespace
}  // namespace tokenlease
