// The adaptive lease rule on its own (src/lease/lease_sizer.h).
#include "lease/lease_sizer.h"

#include <gtest/gtest.h>

namespace tokenlease::internal {
namespace {

TEST(LeaseSizerTest, SizingFollowsTheRateAndCaps) {
  LeaseOptions o;  // max 10% of burst, min_batch 10 ms, start at 1 token
  const LeaseSizing s =
      ComputeSizing(LimitSpec::TokenBucket(10000, absl::Seconds(1)), o);
  EXPECT_EQ(s.max_lease, 1000);
  EXPECT_EQ(s.min_batch, 100);   // 10 ms of 10000/s
  EXPECT_EQ(s.initial_size, 1);  // starts at one token, doubles when dry

  // A slow limit: a token or so per request.
  const LeaseSizing slow =
      ComputeSizing(LimitSpec::TokenBucket(60, absl::Minutes(1)), o);
  EXPECT_EQ(slow.min_batch, 1);
  EXPECT_EQ(slow.initial_size, 1);
  EXPECT_EQ(slow.max_lease, 6);
}

TEST(LeaseSizerTest, AskShrinksAsTheLimitNearsExhaustion) {
  LeaseOptions o;
  const LeaseSizing s =
      ComputeSizing(LimitSpec::TokenBucket(10000, absl::Seconds(1)), o);
  // Unknown remaining: the target (capped).
  LeaseAsk a = ComputeAsk(s, o, 800, -1, 1);
  EXPECT_EQ(a.wanted, 800);
  EXPECT_EQ(a.minimum, 100);
  a = ComputeAsk(s, o, 5000, -1, 1);
  EXPECT_EQ(a.wanted, 1000);
  // Plenty left: still the target.
  a = ComputeAsk(s, o, 800, 9000, 1);
  EXPECT_EQ(a.wanted, 800);
  // 1000 left: at most a quarter of it.
  a = ComputeAsk(s, o, 800, 1000, 1);
  EXPECT_EQ(a.wanted, 250);
  // Nearly exhausted: down to the minimum batch, never below.
  a = ComputeAsk(s, o, 800, 10, 1);
  EXPECT_EQ(a.wanted, 100);
  EXPECT_EQ(a.minimum, 100);
  // A large cost is always asked for in full.
  a = ComputeAsk(s, o, 1, 10, 700);
  EXPECT_EQ(a.wanted, 700);
  EXPECT_EQ(a.minimum, 700);
}

TEST(LeaseSizerTest, TargetAdapts) {
  LeaseOptions o;
  const LeaseSizing s =
      ComputeSizing(LimitSpec::TokenBucket(10000, absl::Seconds(1)), o);
  EXPECT_EQ(AdaptTarget(s, 100, /*ran_dry=*/true, 0), 200);
  EXPECT_EQ(AdaptTarget(s, 800, true, 0), 1000);  // capped at max_lease
  EXPECT_EQ(AdaptTarget(s, 100, false, 0.8), 50);
  EXPECT_EQ(AdaptTarget(s, 1, false, 0.8), 1);
  EXPECT_EQ(AdaptTarget(s, 100, false, 0.2), 100);
}

}  // namespace
}  // namespace tokenlease::internal
