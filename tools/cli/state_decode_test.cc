#include "cli/state_decode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

// 2026-01-01T00:00:00Z, the time of docs/lua-protocol.md's examples.
constexpr int64_t kNow = 1767225600000000;
constexpr int64_t kSec = 1'000'000;

Band Bucket(int64_t limit, absl::Duration period, int64_t burst = 0,
            Refill refill = Refill::kSmooth) {
  return LimitSpec::TokenBucket(limit, period, burst, refill).bands[0];
}
Band Gcra(int64_t limit, absl::Duration period, int64_t burst = 0) {
  return LimitSpec::Gcra(limit, period, burst).bands[0];
}
Band Fixed(int64_t limit, absl::Duration period,
           WindowAnchor anchor = WindowAnchor::kAligned,
           absl::Duration offset = absl::ZeroDuration()) {
  Band b = LimitSpec::FixedWindow(limit, period, offset).bands[0];
  b.anchor = anchor;
  return b;
}
Band Counter(int64_t limit, absl::Duration period) {
  return LimitSpec::SlidingWindowCounter(limit, period).bands[0];
}
Band Log(int64_t limit, absl::Duration period) {
  return LimitSpec::SlidingWindowLog(limit, period).bands[0];
}

std::string Lines(const DecodedBand& d) { return absl::StrJoin(d.lines, "\n"); }

// What a band offers now, every part of it known: `used` and `available`
// tokens, and the waits for one more token and for a fresh band.
::testing::Matcher<const DecodedBand&> Offers(int64_t used, int64_t available,
                                              int64_t next_in_us,
                                              int64_t full_in_us) {
  using ::testing::AllOf;
  using ::testing::Field;
  return AllOf(
      Field("used", &DecodedBand::used, Optional(used)),
      Field("available", &DecodedBand::available, Optional(available)),
      Field("next_in_us", &DecodedBand::next_in_us, Optional(next_in_us)),
      Field("full_in_us", &DecodedBand::full_in_us, Optional(full_in_us)));
}

// --- stamps --------------------------------------------------------------

struct StampCase {
  std::string name;
  Band band;
  std::string stamp;
};

// The case's name in test listings (not its bytes).
void PrintTo(const StampCase& c, std::ostream* os) { *os << c.name; }

class StampOfTest : public ::testing::TestWithParam<StampCase> {};

TEST_P(StampOfTest, IsWhatTheScriptsWriteAndParsesBack) {
  EXPECT_EQ(StampOf(GetParam().band), GetParam().stamp);
  if (GetParam().stamp.empty()) return;
  std::optional<Stamp> s = ParseStamp(GetParam().stamp);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->text, GetParam().stamp);
  EXPECT_EQ(CompareStamp(*s, GetParam().band), StampVerdict::kSame);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StampOfTest,
    ::testing::Values(
        StampCase{"SmoothBucket", Bucket(10, absl::Seconds(1)), "g100000/1"},
        StampCase{"GcraPerMinute", Gcra(30, absl::Minutes(1), 16),
                  "g2000000/1"},
        StampCase{"GcraSevenPerSecond", Gcra(7, absl::Seconds(1)),
                  "g1000000/7"},
        StampCase{"Stepwise", Bucket(5, absl::Seconds(1), 0, Refill::kStepwise),
                  "s5/1000000/5"},
        StampCase{
            "DailyWindowUtcPlus8",
            Fixed(1, absl::Hours(24), WindowAnchor::kAligned, -absl::Hours(8)),
            "f86400000000/a57600000000"},
        StampCase{"FirstRequestWindow",
                  Fixed(3, absl::Seconds(10), WindowAnchor::kFirstRequest),
                  "f10000000/r0"},
        StampCase{"Counter", Counter(10, absl::Seconds(10)), "c10000000/a0"},
        StampCase{"LogHasNone", Log(3, absl::Seconds(10)), ""}),
    [](const ::testing::TestParamInfo<StampCase>& i) { return i.param.name; });

TEST(ParseStampTest, RefusesWhatIsNotOfAStampsForm) {
  for (const char* bad : {"g1", "g1/0", "g/1", "x1/2", "c10/r0", "f10/x0",
                          "f10/", "s1/2", "s1/2/3/4", "g1/2/3"}) {
    EXPECT_FALSE(ParseStamp(bad).has_value()) << bad;
  }
}

TEST(CompareStampTest, FollowsTheTakeOverRules) {
  const Stamp g = *ParseStamp("g100000/1");
  EXPECT_EQ(CompareStamp(g, Bucket(20, absl::Seconds(1))),
            StampVerdict::kTakesOver);
  EXPECT_EQ(CompareStamp(g, Bucket(10, absl::Seconds(1), 50)),
            StampVerdict::kSame);  // a burst change keeps the stamp
  EXPECT_EQ(CompareStamp(g, Fixed(10, absl::Seconds(1))),
            StampVerdict::kRefuses);
  const Stamp s = *ParseStamp("s5/1000000/5");
  EXPECT_EQ(CompareStamp(s, Bucket(5, absl::Seconds(1), 9, Refill::kStepwise)),
            StampVerdict::kTakesOver);
  const Stamp f = *ParseStamp("f60000000/a0");
  EXPECT_EQ(CompareStamp(f, Fixed(99, absl::Minutes(1))), StampVerdict::kSame);
  EXPECT_EQ(CompareStamp(f, Fixed(5, absl::Minutes(2))),
            StampVerdict::kRefuses);
  EXPECT_EQ(CompareStamp(f, Counter(5, absl::Minutes(1))),
            StampVerdict::kRefuses);
}

// --- string states -------------------------------------------------------

TEST(DecodeSmoothTest, TokenBucketInDebt) {
  // docs/lua-protocol.md's batch example: 12 tokens taken from a bucket of
  // 10/s; the TAT is 1.2 s ahead.
  const Band b = Bucket(10, absl::Seconds(1));
  DecodedBand d = DecodeStringBand("{rl:u2}:b0",
                                   "1767225601200000 0 1 g100000/1", &b, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_EQ(d.kind, BandKind::kSmooth);
  EXPECT_EQ(d.tat_us, kNow + 1'200'000);
  EXPECT_THAT(d.capacity, Optional(10));
  EXPECT_THAT(d, Offers(12, 0, 300'000, 1'200'000));
  EXPECT_THAT(Lines(d), HasSubstr("matches the spec"));
}

TEST(DecodeSmoothTest, FractionOfAMicrosecond) {
  // GCRA 3/s: a token costs 1e6/3 us; the TAT is 0.5 s + 1/3 us ahead.
  const Band b = Gcra(3, absl::Seconds(1));
  DecodedBand d =
      DecodeStringBand("k", "1767225600500000 1 3 g1000000/3", &b, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  // 1.500001 tokens used (rounded up); floor(3 - 1.500001) available.
  EXPECT_THAT(d, Offers(2, 1, 166'667, 500'001));
}

TEST(DecodeSmoothTest, WithoutTheSpecTheBurstIsUnknown) {
  DecodedBand d =
      DecodeStringBand("k", "1767225601200000 0 1 g100000/1", nullptr, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_THAT(d.used, Optional(12));
  EXPECT_THAT(d.full_in_us, Optional(1'200'000));
  EXPECT_EQ(d.available, std::nullopt);
  EXPECT_THAT(Lines(d), HasSubstr("unknown without the burst"));
}

TEST(DecodeSmoothTest, ATatInThePastIsAFullBucket) {
  const Band b = Bucket(10, absl::Seconds(1));
  DecodedBand d =
      DecodeStringBand("k", "1767225599000000 0 1 g100000/1", &b, kNow);
  EXPECT_THAT(d.available, Optional(10));
  EXPECT_THAT(d.full_in_us, Optional(0));
}

TEST(DecodeSmoothTest, AnotherRateTakesTheStateOverWithTheTokensUsed) {
  // 12 tokens used at 10/s are 12 tokens of 20/s too: 8 of 20 left.
  const Band b = Bucket(20, absl::Seconds(1));
  DecodedBand d =
      DecodeStringBand("k", "1767225601200000 0 1 g100000/1", &b, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_THAT(d.available, Optional(8));
  EXPECT_THAT(d.full_in_us, Optional(600'000));
  EXPECT_THAT(Lines(d), HasSubstr("takes the state over"));
}

TEST(DecodeStepwiseTest, WithinAStep) {
  const Band b = Bucket(5, absl::Seconds(1), 0, Refill::kStepwise);
  DecodedBand d =
      DecodeStringBand("k", "2 1767225599500000 s5/1000000/5", &b, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_EQ(d.tokens, 2);
  EXPECT_EQ(d.anchor_us, kNow - 500'000);
  EXPECT_THAT(d, Offers(3, 2, 500'000, 500'000));
}

TEST(DecodeStepwiseTest, RefillsWholeStepsFromTheStampAlone) {
  // Borrowed down to -8; 1.5 s later one step of 5 came: -3, and two more
  // steps fill it.
  DecodedBand d =
      DecodeStringBand("k", "-8 1767225598500000 s5/1000000/5", nullptr, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_EQ(d.tokens, -3);
  EXPECT_EQ(d.anchor_us, kNow - 500'000);
  EXPECT_THAT(d.available, Optional(0));
  EXPECT_THAT(d.next_in_us, Optional(500'000));
  EXPECT_THAT(d.full_in_us, Optional(1'500'000));
  d = DecodeStringBand("k", "-3 1767225597500000 s5/1000000/5", nullptr, kNow);
  EXPECT_EQ(d.tokens, 5);
  EXPECT_THAT(d.full_in_us, Optional(0));
}

TEST(DecodeFixedTest, CurrentWindow) {
  const Band b = Fixed(5, absl::Minutes(1));
  DecodedBand d = DecodeStringBand("k", "1767225600000000 3 f60000000/a0", &b,
                                   kNow + 30 * kSec);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_EQ(d.window_start_us, kNow);
  EXPECT_EQ(d.window_end_us, kNow + 60 * kSec);
  EXPECT_EQ(d.count, 3);
  EXPECT_THAT(d.available, Optional(2));
  EXPECT_EQ(d.next_in_us, std::nullopt);
  EXPECT_THAT(d.full_in_us, Optional(30 * kSec));
  d = DecodeStringBand("k", "1767225600000000 5 f60000000/a0", &b,
                       kNow + 30 * kSec);
  EXPECT_THAT(d.available, Optional(0));
  EXPECT_THAT(d.next_in_us, Optional(30 * kSec));
}

TEST(DecodeFixedTest, AWindowThatEndedCountsNothing) {
  DecodedBand d = DecodeStringBand("k", "1767225500000000 2 f60000000/r0",
                                   nullptr, kNow + 30 * kSec);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_EQ(d.count, 0);
  EXPECT_THAT(d.full_in_us, Optional(0));
  EXPECT_THAT(Lines(d), HasSubstr("the next request opens a new one"));
}

TEST(DecodeCounterTest, WeighsThePreviousWindow) {
  // docs/lua-protocol.md: at 15 s the previous window's 10 weigh 5.
  const Band b = Counter(10, absl::Seconds(10));
  DecodedBand d = DecodeStringBand("k", "1767225610000000 10 5 c10000000/a0",
                                   &b, kNow + 15 * kSec);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_DOUBLE_EQ(d.estimate, 10.0);
  EXPECT_THAT(d.used, Optional(10));
  EXPECT_THAT(d.available, Optional(0));
  EXPECT_THAT(d.full_in_us, Optional(15 * kSec));
  // 10 s later the 5 are the previous window, weighing 2.5 (counted 3).
  d = DecodeStringBand("k", "1767225610000000 10 5 c10000000/a0", &b,
                       kNow + 25 * kSec);
  EXPECT_EQ(d.window_start_us, kNow + 20 * kSec);
  EXPECT_EQ(d.previous, 5);
  EXPECT_EQ(d.count, 0);
  EXPECT_DOUBLE_EQ(d.estimate, 2.5);
  EXPECT_THAT(d.used, Optional(3));
  EXPECT_THAT(d.available, Optional(7));
  EXPECT_THAT(d.full_in_us, Optional(5 * kSec));
}

struct CorruptCase {
  std::string name;
  std::string value;
  std::string problem;
};

// The case's name in test listings (not its bytes).
void PrintTo(const CorruptCase& c, std::ostream* os) { *os << c.name; }

class CorruptStateTest : public ::testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptStateTest, IsAProblemNamingTheKeyNeverACrash) {
  const Band b = Bucket(10, absl::Seconds(1));
  DecodedBand d = DecodeStringBand("{p:k}:b0", GetParam().value, &b, kNow);
  ASSERT_EQ(d.problems.size(), 1u) << Lines(d);
  EXPECT_THAT(d.problems[0], HasSubstr(GetParam().problem));
  EXPECT_EQ(d.available, std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CorruptStateTest,
    ::testing::Values(
        CorruptCase{"Garbage", "garbage",
                    "key '{p:k}:b0' holds 'garbage', not a tokenlease state"},
        CorruptCase{"Empty", "", "not a tokenlease state"},
        CorruptCase{"FourNumbers", "1 2 3 4 g100000/1",
                    "not a tokenlease state"},
        CorruptCase{"NegativeFraction", "1767225601200000 -2 g100000/1",
                    "not a tokenlease state"},
        CorruptCase{"FractionBeyondItsUnit", "1767225601200000 3 3 g1/3",
                    "not a tokenlease state"},
        CorruptCase{"StampOfTheWrongForm", "1 2 g1/0",
                    "not a tokenlease state"},
        CorruptCase{"BeyondTwoToThe53", "9007199254740993 0 g100000/1",
                    "not a tokenlease state"},
        CorruptCase{"AnotherSpecsState", "1767225600000000 3 f60000000/a0",
                    "holds the state of another spec ('f60000000/a0'; this "
                    "call's is 'g100000/1')"}),
    [](const ::testing::TestParamInfo<CorruptCase>& i) {
      return i.param.name;
    });

TEST(DecodeStringBandTest, NoStampAndNoSpecIsUndecidedNotAnError) {
  DecodedBand d = DecodeStringBand("k", "1767225601200000 0", nullptr, kNow);
  EXPECT_EQ(d.kind, BandKind::kUndecided);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_THAT(Lines(d), HasSubstr("give the spec flags"));
}

TEST(DecodeStringBandTest, AnUnstampedStateIsReadAsTheSpecs) {
  const Band b = Bucket(10, absl::Seconds(1));
  DecodedBand d = DecodeStringBand("k", "1767225600500000 0", &b, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_THAT(d.available, Optional(5));
}

// --- sliding logs --------------------------------------------------------

std::vector<LogMember> Members(std::vector<std::string> members) {
  std::vector<LogMember> out;
  for (const std::string& m : members) {
    out.push_back({m, m.substr(0, m.find(':'))});
  }
  return out;
}

TEST(DecodeLogTest, LiveEntriesAndWhenTheyExpire) {
  // docs/lua-protocol.md: 3 per 10 s, 2 at 0 s and 1 at 4 s.
  const Band b = Log(3, absl::Seconds(10));
  const auto members = Members({"1767225600000000:2", "1767225604000000:1"});
  DecodedBand d = DecodeLogBand("k", members, "k:m", "3 1767225605000000", &b,
                                kNow + 5 * kSec);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_EQ(d.log_entries, 2);
  EXPECT_THAT(d, Offers(3, 0, 5 * kSec, 9 * kSec));
  // At 12 s the first entry has expired (not yet pruned).
  d = DecodeLogBand("k", members, "k:m", "3 1767225605000000", &b,
                    kNow + 12 * kSec);
  EXPECT_EQ(d.log_entries, 1);
  EXPECT_EQ(d.log_expired, 1);
  EXPECT_THAT(d.available, Optional(2));
  EXPECT_THAT(d.full_in_us, Optional(2 * kSec));
}

TEST(DecodeLogTest, QuantisedScoresAreQuantumIndexes) {
  // 1000 per second over 256 entries: a quantum of 3906250 ns; index
  // 452409753600 is 2026-01-01T00:00:00Z.
  const Band b = Log(1000, absl::Seconds(1));
  DecodedBand d = DecodeLogBand("k", Members({"452409753600:4"}), "k:m",
                                "4 1767225600000000", &b, kNow + 500'000);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_THAT(d.available, Optional(996));
  EXPECT_THAT(d.full_in_us, Optional(500'000));
  EXPECT_THAT(Lines(d), HasSubstr("quantum of 3906250 ns"));
}

TEST(DecodeLogTest, WithoutTheSpecShowsTheEntriesOnly) {
  DecodedBand d = DecodeLogBand("k", Members({"1767225600000000:2"}), "k:m",
                                "2 1767225600000000", nullptr, kNow);
  EXPECT_THAT(d.problems, IsEmpty());
  EXPECT_THAT(d.used, Optional(2));
  EXPECT_EQ(d.available, std::nullopt);
  EXPECT_THAT(Lines(d), HasSubstr("+2 at 2026-01-01T00:00:00.000000Z"));
}

TEST(DecodeLogTest, AForeignMemberOrMetaIsAProblem) {
  const Band b = Log(3, absl::Seconds(10));
  DecodedBand d =
      DecodeLogBand("k", Members({"x:1"}), "k:m", std::nullopt, &b, kNow);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_THAT(d.problems[0],
              HasSubstr("holds the member 'x:1', not a tokenlease log entry"));
  d = DecodeLogBand("k", {}, "k:m", "3 1767225600000000 g1/1", &b, kNow);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_THAT(d.problems[0], HasSubstr("holds the state of another spec"));
  d = DecodeLogBand("k", {}, "k:m", "-1 5", &b, kNow);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_THAT(d.problems[0], HasSubstr("not a tokenlease state"));
}

}  // namespace
}  // namespace tokenlease::cli
