// The adaptive lease rule on its own (src/leased/lease_sizer.h).
#include "leased/lease_sizer.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "testing/specs.h"

namespace tokenlease::internal {
namespace {

// The default lease options: max 10% of burst, min_batch 10 ms, start at 1
// token.
const LeaseOptions kOptions{};

TEST(LeaseSizerTest, SizingFollowsTheRateAndCaps) {
  const LeaseSizing s =
      ComputeSizing(LimitSpec::TokenBucket(10000, absl::Seconds(1)), kOptions);
  EXPECT_EQ(s.max_lease, 1000);
  EXPECT_EQ(s.min_batch, 100);   // 10 ms of 10000/s
  EXPECT_EQ(s.initial_size, 1);  // starts at one token, doubles when dry

  // A slow limit: a token or so per request.
  const LeaseSizing slow =
      ComputeSizing(LimitSpec::TokenBucket(60, absl::Minutes(1)), kOptions);
  EXPECT_EQ(slow.min_batch, 1);
  EXPECT_EQ(slow.initial_size, 1);
  EXPECT_EQ(slow.max_lease, 6);
}

// 10000/s: max_lease 1000, min_batch 100.
LeaseSizing Fast() {
  return ComputeSizing(LimitSpec::TokenBucket(10000, absl::Seconds(1)),
                       kOptions);
}

// ComputeAsk(target, last_remaining, cost) -> the ask.
struct AskCase {
  std::string name;
  int64_t target, last_remaining, cost;
  int64_t wanted, minimum;
};

void PrintTo(const AskCase& c, std::ostream* os) { *os << c.name; }

class LeaseAskTest : public ::testing::TestWithParam<AskCase> {};

INSTANTIATE_TEST_SUITE_P(
    Cases, LeaseAskTest,
    ::testing::Values(
        // Unknown remaining: the target (capped).
        AskCase{"UnknownRemainingAsksForTheTarget", 800, -1, 1, 800, 100},
        AskCase{"UnknownRemainingCapsAtMaxLease", 5000, -1, 1, 1000, 100},
        // Plenty left: still the target.
        AskCase{"PlentyLeftAsksForTheTarget", 800, 9000, 1, 800, 100},
        // 1000 left: at most a quarter of it.
        AskCase{"ShrinksToAQuarterOfTheRemaining", 800, 1000, 1, 250, 100},
        // Nearly exhausted: down to the minimum batch, never below.
        AskCase{"NeverBelowTheMinimumBatch", 800, 10, 1, 100, 100},
        // A large cost is always asked for in full.
        AskCase{"LargeCostInFull", 1, 10, 700, 700, 700}),
    ::tokenlease::testing::ParamName());

TEST_P(LeaseAskTest, AskShrinksAsTheLimitNearsExhaustion) {
  const AskCase& c = GetParam();
  const LeaseAsk a =
      ComputeAsk(Fast(), kOptions, c.target, c.last_remaining, c.cost);
  EXPECT_EQ(a.wanted, c.wanted);
  EXPECT_EQ(a.minimum, c.minimum);
}

TEST(LeaseSizerTest, TargetAdapts) {
  const LeaseSizing s = Fast();
  EXPECT_EQ(AdaptTarget(s, 100, /*ran_dry=*/true, 0), 200);
  EXPECT_EQ(AdaptTarget(s, 800, true, 0), 1000);  // capped at max_lease
  EXPECT_EQ(AdaptTarget(s, 100, false, 0.8), 50);
  EXPECT_EQ(AdaptTarget(s, 1, false, 0.8), 1);
  EXPECT_EQ(AdaptTarget(s, 100, false, 0.2), 100);
}

// RenewalCannotWait: a lease landed at kLanded holding `held_at_landing`;
// `elapsed_ms` later the key holds `held`; the renewal would wait 21 ms (a
// 20 ms window and a 1 ms round trip).
struct WaitCase {
  std::string name;
  bool short_burst;  // 10,000/s, burst 1,000 (max lease 100); else 100/s,
                     // burst 100 (max lease 10)
  int64_t held_at_landing, elapsed_ms, held;
  bool cannot_wait;
};

void PrintTo(const WaitCase& c, std::ostream* os) { *os << c.name; }

class RenewalWaitTest : public ::testing::TestWithParam<WaitCase> {};

INSTANTIATE_TEST_SUITE_P(
    Cases, RenewalWaitTest,
    ::testing::Values(
        // 50 spent in 10 ms: the 50 left last 10 ms, and half a max lease
        // (50) lasts 10 ms at the key's pace (below the limit's rate): one
        // lease per window would cap it at half its pace.
        WaitCase{"AKeyThatSpendsALeasePerWindowCannotWait", true, 100, 10, 50,
                 true},
        WaitCase{"AnEmptyKeyAtPaceCannotWait", true, 100, 10, 0, true},
        // The 90 left last 90 ms: the renewal can wait.
        WaitCase{"AKeyThatHoldsEnoughWaits", true, 100, 10, 90, false},
        // 333/s: its 5 tokens last 15 ms, but at the limit's 100/s half a
        // max lease (5 tokens) lasts 50 ms: the limit, not the window,
        // caps it.
        WaitCase{"ALongTailKeyWaitsHoweverFastItSpends", false, 10, 15, 5,
                 false},
        // 100/s of a 10,000/s limit: its last token lasts 10 ms, but half a
        // max lease lasts 500 ms at its pace.
        WaitCase{"ASlowKeyWaits", true, 10, 90, 1, false},
        // No pace to go by.
        WaitCase{"NothingSpentWaits", true, 100, 10, 100, false},
        WaitCase{"WithoutALeaseWaits", true, 0, 10, -1, false},
        WaitCase{"AClockSteppingBackWaits", true, 100, -10, 50, false},
        WaitCase{"NoTimeElapsedWaits", true, 100, 0, 50, false}),
    ::tokenlease::testing::ParamName());

TEST(LeaseSizerTest, TimeToMinimumCountsTheRefillSinceTheReply) {
  const LeaseSizing s = Fast();  // 10 tokens a millisecond
  constexpr int64_t kMs = 1'000'000;
  EXPECT_EQ(TimeToMinimum(s, 100, 20, 0), 8 * kMs);
  EXPECT_EQ(TimeToMinimum(s, 100, 20, 2 * kMs), 6 * kMs);
  EXPECT_EQ(TimeToMinimum(s, 100, 20, 8 * kMs), 0);   // refilled by now
  EXPECT_EQ(TimeToMinimum(s, 100, 20, 80 * kMs), 0);  // long refilled
  EXPECT_EQ(TimeToMinimum(s, 100, 100, 0), 0);        // there already
  EXPECT_EQ(TimeToMinimum(s, 100, 500, 0), 0);
}

TEST_P(RenewalWaitTest, OnlyAKeyTheWindowWouldCapCannotWait) {
  const WaitCase& c = GetParam();
  const LeaseSizing s =
      c.short_burst
          ? ComputeSizing(LimitSpec::TokenBucket(10000, absl::Seconds(1), 1000),
                          kOptions)
          : ComputeSizing(LimitSpec::TokenBucket(100, absl::Seconds(1)),
                          kOptions);
  ASSERT_EQ(s.max_lease, c.short_burst ? 100 : 10);
  constexpr int64_t kMs = 1'000'000;
  constexpr int64_t kLanded = 5'000 * kMs;
  EXPECT_EQ(RenewalCannotWait(s, kOptions.low_water, c.held_at_landing, kLanded,
                              c.held, kLanded + c.elapsed_ms * kMs, 21 * kMs),
            c.cannot_wait);
}

}  // namespace
}  // namespace tokenlease::internal
