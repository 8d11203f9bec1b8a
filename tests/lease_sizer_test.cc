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

}  // namespace
}  // namespace tokenlease::internal
