#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;

std::string Error(const LimitSpec& spec) {
  return std::string(ValidateSpec(spec).message());
}

TEST(ValidateSpecTest, AcceptsEveryFactory) {
  EXPECT_TRUE(
      ValidateSpec(LimitSpec::TokenBucket(1, absl::Hours(24 * 7))).ok());
  EXPECT_TRUE(
      ValidateSpec(LimitSpec::TokenBucket(1'000'000'000, absl::Seconds(1)))
          .ok());
  EXPECT_TRUE(
      ValidateSpec(LimitSpec::Gcra(999'999'937, absl::Seconds(1))).ok());
  EXPECT_TRUE(
      ValidateSpec(LimitSpec::FixedWindow(5, absl::Hours(24), absl::Hours(-8)))
          .ok());
  EXPECT_TRUE(
      ValidateSpec(LimitSpec::SlidingWindowCounter(5, absl::Seconds(1))).ok());
  EXPECT_TRUE(
      ValidateSpec(LimitSpec::SlidingWindowLog(5, absl::Seconds(1))).ok());
}

TEST(ValidateSpecTest, NamesTheWrongField) {
  EXPECT_THAT(Error(LimitSpec{}), HasSubstr("between 1 and 4"));
  EXPECT_THAT(Error(LimitSpec::TokenBucket(0, absl::Seconds(1))),
              HasSubstr("bands[0].limit is 0"));
  EXPECT_THAT(Error(LimitSpec::TokenBucket(-5, absl::Seconds(1))),
              HasSubstr("bands[0].limit is -5"));
  EXPECT_THAT(Error(LimitSpec::TokenBucket(5, absl::ZeroDuration())),
              HasSubstr("bands[0].period"));
  EXPECT_THAT(Error(LimitSpec::TokenBucket(5, absl::Nanoseconds(1.5))),
              HasSubstr("whole number"));
  EXPECT_THAT(Error(LimitSpec::TokenBucket(5, absl::Seconds(1), -1)),
              HasSubstr("bands[0].burst is -1"));
  EXPECT_THAT(Error(LimitSpec::SlidingWindowCounter(int64_t{1} << 33,
                                                    absl::Seconds(1))),
              HasSubstr("sliding_counter"));
  LimitSpec borrow = LimitSpec::TokenBucket(5, absl::Seconds(1));
  borrow.max_borrow = absl::Seconds(-1);
  EXPECT_THAT(Error(borrow), HasSubstr("max_borrow"));
  LimitSpec log = LimitSpec::SlidingWindowLog(5, absl::Seconds(1));
  log.bands[0].max_log_entries = 1;
  EXPECT_THAT(Error(log), HasSubstr("max_log_entries is 1"));
  log.bands[0].max_log_entries = 0;
  log.bands[0].log_granularity = absl::Seconds(2);
  EXPECT_THAT(Error(log), HasSubstr("log_granularity"));
  LimitSpec five;
  five.bands.assign(5, LimitSpec::Gcra(1, absl::Seconds(1)).bands[0]);
  EXPECT_THAT(Error(five), HasSubstr("5 bands"));
  LimitSpec second_bad = LimitSpec::Gcra(1, absl::Seconds(1));
  second_bad.bands.push_back(second_bad.bands[0]);
  second_bad.bands[1].limit = 0;
  EXPECT_THAT(Error(second_bad), HasSubstr("bands[1].limit"));
}

TEST(ValidateSpecTest, RejectsBurstBeyondExactRange) {
  // 2^40 tokens with an emission interval of ~31 ms units: beyond 2^62.
  const absl::Status s = ValidateSpec(
      LimitSpec::TokenBucket(1, absl::Hours(24 * 365), int64_t{1} << 40));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("exact-arithmetic range"));
}

TEST(ValidateSpecTest, CreateReportsSpecAndOptionErrors) {
  auto l = Limiter::Create(LimitSpec::TokenBucket(0, absl::Seconds(1)));
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  LimiterOptions o;
  o.shards = 3;
  l = Limiter::Create(LimitSpec::TokenBucket(1, absl::Seconds(1)), o);
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("shards is 3"));
  o = {};
  o.max_keys = 0;
  l = Limiter::Create(LimitSpec::TokenBucket(1, absl::Seconds(1)), o);
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("max_keys is 0"));
  for (int32_t bad : {0, -1, 65537}) {
    o = {};
    o.max_key_bytes = bad;
    l = Limiter::Create(LimitSpec::TokenBucket(1, absl::Seconds(1)), o);
    EXPECT_THAT(std::string(l.status().message()),
                HasSubstr(absl::StrCat("LimiterOptions.max_key_bytes is ", bad,
                                       "; it must be between 1 and 65536")));
  }
}

TEST(DescribeSpecTest, IsReadable) {
  EXPECT_EQ(DescribeSpec(LimitSpec::TokenBucket(100, absl::Seconds(1))),
            "token_bucket(limit=100/1s, burst=100, smooth)");
  LimitSpec s = LimitSpec::FixedWindow(1, absl::Hours(24), absl::Hours(-8));
  EXPECT_EQ(DescribeSpec(s), "fixed_window(limit=1/24h, offset=-8h)");
}

}  // namespace
}  // namespace tokenlease
