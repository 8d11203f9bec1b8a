#include "cli/throttle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

Decision Allowed(int64_t remaining, int64_t reset_ns) {
  Decision d;
  d.allowed = true;
  d.source = DecisionSource::kDirect;
  d.remaining = remaining;
  d.reset_after_ns = reset_ns;
  return d;
}

Decision Denied(int64_t remaining, int64_t retry_ns, int64_t reset_ns) {
  Decision d;
  d.allowed = false;
  d.source = DecisionSource::kDirect;
  d.remaining = remaining;
  d.retry_after_ns = retry_ns;
  d.reset_after_ns = reset_ns;
  return d;
}

struct ReplyCase {
  std::string name;
  Decision decision;
  int64_t limit;
  std::vector<int64_t> want;  // limited, limit, remaining, retry, reset
};

// The case's name in test listings (not its bytes).
void PrintTo(const ReplyCase& c, std::ostream* os) { *os << c.name; }

class CellThrottleReplyTest : public ::testing::TestWithParam<ReplyCase> {};

TEST_P(CellThrottleReplyTest, GivesRedisCellsFiveIntegers) {
  const ThrottleReply r =
      CellThrottleReply(GetParam().decision, GetParam().limit);
  EXPECT_EQ((std::vector<int64_t>{r.limited, r.limit, r.remaining,
                                  r.retry_after_s, r.reset_after_s}),
            GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CellThrottleReplyTest,
    ::testing::Values(
        // redis-cell's README: CL.THROTTLE user123 15 30 60 on a new key.
        ReplyCase{"ReadmeExample", Allowed(15, 2 * kS), 16, {0, 16, 15, -1, 2}},
        ReplyCase{"AllowedRetryIsMinusOne", Allowed(0, 0), 5, {0, 5, 0, -1, 0}},
        ReplyCase{"ResetFractionRoundsUp",
                  Allowed(3, 1500 * kMs),
                  5,
                  {0, 5, 3, -1, 2}},
        ReplyCase{"DeniedRetryRoundsUp",
                  Denied(0, 1200 * kMs, 5 * kS),
                  5,
                  {1, 5, 0, 2, 5}},
        ReplyCase{"DeniedWholeSeconds",
                  Denied(0, 3 * kS, 4 * kS),
                  5,
                  {1, 5, 0, 3, 4}},
        // redis-cell adds a second only for a non-zero millisecond part.
        ReplyCase{"SubMillisecondPartDropped",
                  Denied(0, kS + 500'000, kS),
                  5,
                  {1, 5, 0, 1, 1}},
        ReplyCase{"BelowAMillisecondIsZero",
                  Denied(0, 400'000, 999'999),
                  5,
                  {1, 5, 0, 0, 0}},
        ReplyCase{"OneMillisecondIsOneSecond",
                  Denied(0, kMs, kMs),
                  5,
                  {1, 5, 0, 1, 1}},
        ReplyCase{"NeverIsMinusOne",
                  Denied(2, kNever, 600 * kMs),
                  5,
                  {1, 5, 2, -1, 1}}),
    [](const ::testing::TestParamInfo<ReplyCase>& i) { return i.param.name; });

class CellSecondsTest
    : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(CellSecondsTest, TruncatesThenAddsOneForMilliseconds) {
  EXPECT_EQ(CellSeconds(GetParam().first), GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CellSecondsTest,
    ::testing::Values(std::pair<int64_t, int64_t>{0, 0},
                      std::pair<int64_t, int64_t>{1, 0},
                      std::pair<int64_t, int64_t>{kMs - 1, 0},
                      std::pair<int64_t, int64_t>{kMs, 1},
                      std::pair<int64_t, int64_t>{kS - 1, 1},
                      std::pair<int64_t, int64_t>{kS, 1},
                      std::pair<int64_t, int64_t>{kS + kMs - 1, 1},
                      std::pair<int64_t, int64_t>{kS + kMs, 2},
                      std::pair<int64_t, int64_t>{86400 * kS + 1, 86400},
                      // Negative spans (redis-cell's own -1 s): toward zero.
                      std::pair<int64_t, int64_t>{-500 * kMs, 0},
                      std::pair<int64_t, int64_t>{-kS, -1}));

TEST(FormatThrottleReplyTest, OneIntegerALineLikeRedisCli) {
  EXPECT_EQ(FormatThrottleReply({1, 16, 0, 2, 32}), "1\n16\n0\n2\n32\n");
}

TEST(ThrottleSpecTest, IsGcraWithMaxBurstPlusOne) {
  absl::StatusOr<ThrottleArgs> a =
      ParseThrottleArgs({"user123", "15", "30", "60"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->key, "user123");
  EXPECT_EQ(a->quantity, 1);
  EXPECT_EQ(DescribeSpec(ThrottleSpec(*a)), "gcra(limit=30/1m, burst=16)");
  a = ParseThrottleArgs({"k", "0", "1", "1", "0"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->quantity, 0);
  EXPECT_EQ(DescribeSpec(ThrottleSpec(*a)), "gcra(limit=1/1s, burst=1)");
}

struct ArgsCase {
  std::vector<std::string> args;
  std::string message;
};

// The case's name in test listings (not its bytes).
void PrintTo(const ArgsCase& c, std::ostream* os) {
  *os << absl::StrJoin(c.args, " ");
}

class ParseThrottleArgsTest : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(ParseThrottleArgsTest, RefusesWhatRedisCellRefusesAndSaysWhy) {
  absl::StatusOr<ThrottleArgs> a = ParseThrottleArgs(GetParam().args);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseThrottleArgsTest,
    ::testing::Values(
        ArgsCase{{"k", "15", "30"}, "takes 4 or 5 arguments"},
        ArgsCase{{"k", "15", "30", "60", "1", "2"}, "got 6"},
        ArgsCase{{"k", "-1", "30", "60"}, "argument 2 (max_burst) is '-1'"},
        ArgsCase{{"k", "15", "0", "60"}, "argument 3 (count per period)"},
        ArgsCase{{"k", "15", "30", "0"}, "argument 4 (period in seconds)"},
        ArgsCase{{"k", "15", "30", "1.5"}, "argument 4 (period in seconds)"},
        ArgsCase{{"k", "15", "30", "60", "-2"}, "argument 5 (quantity)"}));

}  // namespace
}  // namespace tokenlease::cli
