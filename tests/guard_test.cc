#include "tokenlease/guard.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(GuardTest, RunsTheCallOnlyWhenAdmitted) {
  ManualClock clock;
  auto l = Limiter::Create(LimitSpec::FixedWindow(2, absl::Seconds(10)),
                           {.clock = &clock});
  ASSERT_TRUE(l.ok());
  int calls = 0;
  const auto handler = [&] { return ++calls; };
  absl::StatusOr<int> r = RateLimited(**l, "user:1", handler);
  EXPECT_EQ(*r, 1);
  EXPECT_EQ(*RateLimited(**l, "user:1", handler), 2);
  r = RateLimited(**l, "user:1", handler);
  EXPECT_EQ(calls, 2);  // not called when denied
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'user:1'"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("retry after"));
}

TEST(GuardTest, VoidAndStatusCallsAndNeverFittingCosts) {
  auto l = Limiter::Create(LimitSpec::TokenBucket(1, absl::Hours(1)));
  ASSERT_TRUE(l.ok());
  bool ran = false;
  EXPECT_TRUE(RateLimited(**l, "k", [&] { ran = true; }).ok());
  EXPECT_TRUE(ran);
  const absl::Status s =
      RateLimited(**l, "k", [] { return absl::InternalError("unreached"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const absl::Status big = RateLimited(
      **l, "other", [] {}, 5);
  EXPECT_THAT(std::string(big.message()), HasSubstr("ever admit"));
  const absl::Status neg = RateLimited(
      **l, "other", [] {}, -1);
  EXPECT_EQ(neg.code(), absl::StatusCode::kInvalidArgument);
  // A key beyond max_key_bytes: refused, and the message shows 64 bytes of
  // it and its size, not all of it.
  const std::string huge = std::string(64, 'a') + std::string(4000, 'b');
  const absl::Status long_key = RateLimited(**l, huge, [] {});
  EXPECT_EQ(long_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(long_key.message()),
              HasSubstr("'" + std::string(64, 'a') + "... (4064 bytes)'"));
  EXPECT_THAT(std::string(long_key.message()), Not(HasSubstr("bbb")));
}

}  // namespace
}  // namespace tokenlease
