// The Limiter's API contract: handles, costs, run-time spec changes, clocks
// that step back, and the extremes of the accepted rates.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/specs.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = int64_t{1767225600} * kSecond;

std::unique_ptr<Limiter> Make(const LimitSpec& spec, LimiterOptions o = {}) {
  auto l = Limiter::Create(spec, o);
  EXPECT_TRUE(l.ok()) << l.status();
  return std::move(*l);
}

// A reservation refused as bad input: nothing granted, no wait, and a
// denial by kInvalidArgument that never fits.
::testing::Matcher<const Reservation&> RefusedAsBadInput() {
  using ::testing::AllOf;
  using ::testing::Field;
  return AllOf(
      Field("granted", &Reservation::granted, false),
      Field("wait_ns", &Reservation::wait_ns, 0),
      Field("decision", &Reservation::decision,
            AllOf(Field("allowed", &Decision::allowed, false),
                  Field("source", &Decision::source,
                        DecisionSource::kInvalidArgument),
                  Field("retry_after_ns", &Decision::retry_after_ns, kNever))));
}

// Every algorithm, with a composite of a fixed window and a sliding log of
// the same rate.
std::vector<testing::NamedFactory> Algorithms() {
  std::vector<testing::NamedFactory> out = testing::SingleBandFactories();
  out.push_back({"composite", [](int64_t limit, absl::Duration period) {
                   return testing::Composite(
                       {LimitSpec::FixedWindow(limit, period),
                        LimitSpec::SlidingWindowLog(limit, period)});
                 }});
  return out;
}

// One test per algorithm, at rates of the test's choosing.
class LimiterAlgorithmTest
    : public ::testing::TestWithParam<testing::NamedFactory> {
 protected:
  // The algorithm with `limit` per second.
  static LimitSpec Spec(int64_t limit) {
    return GetParam().make(limit, absl::Seconds(1));
  }
};

INSTANTIATE_TEST_SUITE_P(Algorithms, LimiterAlgorithmTest,
                         ::testing::ValuesIn(Algorithms()),
                         testing::ParamName());

TEST(LimiterTest, HandleAndNameShareState) {
  ManualClock clock;
  auto l = Make(LimitSpec::TokenBucket(3, absl::Seconds(1)), {.clock = &clock});
  auto h = l->Resolve("user:1");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->key(), "user:1");
  EXPECT_TRUE(l->TryAcquire(*h).allowed);
  EXPECT_TRUE(l->TryAcquire("user:1").allowed);
  EXPECT_TRUE(l->TryAcquire(*h, 1, clock.NowNanos()).allowed);
  EXPECT_FALSE(l->TryAcquire("user:1").allowed);
  EXPECT_EQ(l->key_count(), 1);
  Limiter::Handle moved = std::move(*h);
  EXPECT_FALSE(h->valid());
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(l->TryAcquire(moved).allowed);
}

TEST(LimiterTest, BadHandlesAndCostsAreDeniedNotCrashes) {
  auto a = Make(LimitSpec::TokenBucket(3, absl::Seconds(1)));
  auto b = Make(LimitSpec::TokenBucket(3, absl::Seconds(1)));
  Limiter::Handle empty;
  Decision d = a->TryAcquire(empty);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kInvalidArgument);
  auto other = b->Resolve("k");
  ASSERT_TRUE(other.ok());
  d = a->TryAcquire(*other);
  EXPECT_EQ(d.source, DecisionSource::kInvalidArgument);
  d = a->TryAcquire("k", -1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kInvalidArgument);
  EXPECT_EQ(d.retry_after(), absl::InfiniteDuration());
  // Reserve's bad input is a denied reservation that charged nothing.
  EXPECT_THAT(a->Reserve("k", -1, absl::Seconds(1)), RefusedAsBadInput());
  EXPECT_THAT(a->Reserve("k", 1, absl::Seconds(-1)), RefusedAsBadInput());
  EXPECT_EQ(a->TryAcquire("k", 0).remaining, 3);
  // Empty and binary key names are ordinary keys.
  EXPECT_TRUE(a->TryAcquire("").allowed);
  EXPECT_TRUE(a->TryAcquire(std::string("a\0b", 3)).allowed);
}

TEST_P(LimiterAlgorithmTest, CostZeroPeeksCostAboveBurstNeverFits) {
  auto l = Make(Spec(4));
  EXPECT_TRUE(l->TryAcquire("k", 3, kT0).allowed);
  Decision peek = l->TryAcquire("k", 0, kT0);
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.remaining, 1);
  EXPECT_TRUE(l->TryAcquire("k", 1, kT0).allowed);  // peek charged nothing
  const Decision never = l->TryAcquire("k", 5, kT0 + 1000);
  EXPECT_FALSE(never.allowed);
  EXPECT_EQ(never.retry_after_ns, kNever);
}

// Costs up to INT64_MAX, after a charge, after a borrowing Reserve (token
// buckets: 2 tokens below zero), and at the latest time a Limiter keeps:
// denied for good, nothing charged (no count or balance wraps around into
// an admission or a corrupt state).
TEST_P(LimiterAlgorithmTest, AHugeCostIsDeniedAndChargesNothing) {
  for (const int64_t now : {kT0, INT64_MAX}) {
    SCOPED_TRACE(absl::StrCat("now ", now));
    ManualClock clock(absl::FromUnixNanos(now));
    LimitSpec spec = Spec(4);
    const bool bucket = spec.bands.size() == 1 &&
                        spec.bands[0].algorithm == Algorithm::kTokenBucket;
    if (bucket) spec.max_borrow = absl::Seconds(2);
    auto l = Make(spec, {.clock = &clock});
    ASSERT_TRUE(l->TryAcquire("k", 1).allowed);
    if (bucket) {
      ASSERT_TRUE(l->Reserve("k", 5, absl::Seconds(2)).granted);
    }
    const Decision before = l->TryAcquire("k", 0);
    for (int64_t cost : {int64_t{5}, int64_t{1} << 32, int64_t{1} << 62,
                         INT64_MAX - 1, INT64_MAX}) {
      SCOPED_TRACE(absl::StrCat("cost ", cost));
      const Decision d = l->TryAcquire("k", cost);
      EXPECT_FALSE(d.allowed);
      if (cost > 5) {
        EXPECT_EQ(d.retry_after_ns, kNever);
      }
      const Decision after = l->TryAcquire("k", 0);
      EXPECT_EQ(after.allowed, before.allowed);
      EXPECT_EQ(after.remaining, before.remaining);
      EXPECT_EQ(after.reset_after_ns, before.reset_after_ns);
    }
  }
}

TEST_P(LimiterAlgorithmTest, ClockSteppingBackMintsNothing) {
  auto l = Make(Spec(10));
  const int64_t t = kT0 + 5 * kSecond + 123;
  EXPECT_TRUE(l->TryAcquire("k", 10, t).allowed);
  // An hour back, then creeping forward to the original time: the spent
  // tokens must not come back.
  for (int64_t back = t - 3600 * kSecond; back <= t; back += 600 * kSecond) {
    EXPECT_FALSE(l->TryAcquire("k", 1, back).allowed) << (t - back);
  }
  EXPECT_FALSE(l->TryAcquire("k", 1, t).allowed);
  // Time moving on again refills as usual.
  EXPECT_TRUE(l->TryAcquire("k", 1, t + 2 * kSecond).allowed);
}

TEST(LimiterTest, OnePerWeek) {
  auto l = Make(LimitSpec::TokenBucket(1, absl::Hours(24 * 7)));
  EXPECT_TRUE(l->TryAcquire("k", 1, kT0).allowed);
  const Decision d = l->TryAcquire("k", 1, kT0 + 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, 7 * 24 * 3600 * kSecond - 1);
  EXPECT_FALSE(
      l->TryAcquire("k", 1, kT0 + 7 * 24 * 3600 * kSecond - 1).allowed);
  EXPECT_TRUE(l->TryAcquire("k", 1, kT0 + 7 * 24 * 3600 * kSecond).allowed);
}

TEST(LimiterTest, BillionPerSecond) {
  auto l = Make(LimitSpec::TokenBucket(1'000'000'000, absl::Seconds(1)));
  EXPECT_TRUE(l->TryAcquire("k", 1'000'000'000, kT0).allowed);
  EXPECT_FALSE(l->TryAcquire("k", 1, kT0).allowed);
  EXPECT_TRUE(l->TryAcquire("k", 1, kT0 + 1).allowed);  // one per ns
  EXPECT_FALSE(l->TryAcquire("k", 2, kT0 + 2).allowed);
  EXPECT_TRUE(l->TryAcquire("k", 999'999'998, kT0 + kSecond - 1).allowed);
}

TEST(LimiterTest, NoDriftOverManyPeriods) {
  // 7 per second has an emission interval of 142857142.857... ns. Taking
  // the whole refill every second, back to back, must always succeed (no
  // rounding against the caller), and 1 ns earlier must always fail (no
  // rounding in the caller's favour), however long it runs.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int64_t kPeriods = 100'000;
#else
  constexpr int64_t kPeriods = 1'000'000;
#endif
  for (int64_t limit : {int64_t{7}, int64_t{999'999'937}}) {
    auto l = Make(LimitSpec::Gcra(limit, absl::Seconds(1), limit));
    ASSERT_TRUE(l->TryAcquire("k", limit, kT0).allowed);
    for (int64_t s = 1; s <= kPeriods; ++s) {
      const int64_t now = kT0 + s * kSecond;
      ASSERT_FALSE(l->TryAcquire("k", limit, now - 1).allowed)
          << "limit " << limit << " s=" << s;
      ASSERT_TRUE(l->TryAcquire("k", limit, now).allowed)
          << "limit " << limit << " s=" << s;
    }
  }
}

TEST(LimiterTest, PrimeRateIsExactAtTheTokenBoundary) {
  const int64_t limit = 999'999'937;
  auto l = Make(LimitSpec::Gcra(limit, absl::Seconds(1), limit));
  ASSERT_TRUE(l->TryAcquire("k", limit, kT0).allowed);
  // After 1 s exactly `limit` tokens are back; after 1 s - 1 ns, fewer.
  EXPECT_FALSE(l->TryAcquire("k", limit, kT0 + kSecond - 1).allowed);
  EXPECT_TRUE(l->TryAcquire("k", limit, kT0 + kSecond).allowed);
}

TEST(LimiterTest, UpdateSpecKeepsConsumedTokens) {
  ManualClock clock(absl::FromUnixNanos(kT0));
  auto l =
      Make(LimitSpec::TokenBucket(10, absl::Seconds(1)), {.clock = &clock});
  ASSERT_TRUE(l->TryAcquire("k", 8).allowed);  // 2 left
  // Lowering the rate does not refill anybody.
  ASSERT_TRUE(l->UpdateSpec(LimitSpec::TokenBucket(5, absl::Seconds(1))).ok());
  Decision d = l->TryAcquire("k", 0);
  EXPECT_EQ(d.remaining, 0);  // 8 of 5 consumed: in debt
  EXPECT_FALSE(l->TryAcquire("k").allowed);
  // 3 tokens of debt + 1 at 5/s: 0.8 s.
  EXPECT_EQ(l->TryAcquire("k").retry_after(), absl::Milliseconds(800));
  clock.Advance(absl::Milliseconds(800));
  EXPECT_TRUE(l->TryAcquire("k").allowed);
  // Raising it adds capacity but keeps what was consumed.
  ASSERT_TRUE(
      l->UpdateSpec(LimitSpec::TokenBucket(100, absl::Seconds(1))).ok());
  d = l->TryAcquire("k", 0);
  EXPECT_EQ(d.remaining, 95);  // 5 of 100 consumed
  EXPECT_EQ(l->spec().bands[0].limit, 100);
}

TEST(LimiterTest, UpdateSpecKeepsWindowCounts) {
  ManualClock clock(absl::FromUnixNanos(kT0));
  auto l =
      Make(LimitSpec::FixedWindow(10, absl::Seconds(60)), {.clock = &clock});
  ASSERT_TRUE(l->TryAcquire("k", 6).allowed);
  ASSERT_TRUE(l->UpdateSpec(LimitSpec::FixedWindow(5, absl::Seconds(60))).ok());
  EXPECT_FALSE(l->TryAcquire("k").allowed);
  ASSERT_TRUE(l->UpdateSpec(LimitSpec::FixedWindow(8, absl::Seconds(60))).ok());
  EXPECT_TRUE(l->TryAcquire("k", 2).allowed);
  EXPECT_FALSE(l->TryAcquire("k").allowed);
}

TEST(LimiterTest, UpdateSpecRejectsAStructuralChange) {
  auto l = Make(LimitSpec::TokenBucket(10, absl::Seconds(1)));
  absl::Status s = l->UpdateSpec(LimitSpec::FixedWindow(10, absl::Seconds(1)));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("token_bucket to fixed_window"));
  s = l->UpdateSpec(
      LimitSpec::TokenBucket(10, absl::Seconds(1), 0, Refill::kStepwise));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = l->UpdateSpec(LimitSpec::TokenBucket(0, absl::Seconds(1)));
  EXPECT_THAT(std::string(s.message()), HasSubstr("bands[0].limit is 0"));
  EXPECT_EQ(l->spec().bands[0].limit, 10);  // unchanged
}

TEST(LimiterTest, ReserveNeedsBuckets) {
  // A window band cannot borrow: Reserve is bad input (kInvalidArgument),
  // never a decision of the window, and charges nothing.
  auto l = Make(LimitSpec::FixedWindow(10, absl::Seconds(1)));
  EXPECT_THAT(l->Reserve("k", 1, absl::Seconds(1)), RefusedAsBadInput());
  EXPECT_EQ(l->TryAcquire("k", 0).remaining, 10);
  const LimiterStats s = l->stats();
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kInvalidArgument), 1u);
}

TEST(LimiterTest, AcquireOnWindowsWaitsForTheNextWindow) {
  auto l = Make(LimitSpec::FixedWindow(2, absl::Milliseconds(50)));
  const absl::Time start = absl::Now();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(l->Acquire("k", 1, absl::Seconds(2)).allowed) << i;
  }
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));      // >= 2 windows
  EXPECT_FALSE(l->Acquire("k", 3, absl::Seconds(1)).allowed);  // never fits
}

TEST(LimiterTest, FourBandsChargeAllOrNothing) {
  auto l = Make(
      testing::Composite({LimitSpec::TokenBucket(100, absl::Seconds(1)),
                          LimitSpec::FixedWindow(5, absl::Seconds(10)),
                          LimitSpec::SlidingWindowCounter(50, absl::Seconds(1)),
                          LimitSpec::SlidingWindowLog(7, absl::Seconds(60))}));
  EXPECT_TRUE(l->TryAcquire("k", 5, kT0).allowed);
  Decision d = l->TryAcquire("k", 1, kT0 + 1);
  EXPECT_FALSE(d.allowed);  // the fixed window is full
  EXPECT_EQ(d.retry_after_ns, 10 * kSecond - 1);
  EXPECT_EQ(d.remaining, 0);
  // Ten seconds on: the window reopens; the log (7/min) had only 5.
  EXPECT_TRUE(l->TryAcquire("k", 2, kT0 + 10 * kSecond).allowed);
  d = l->TryAcquire("k", 1, kT0 + 10 * kSecond);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, 50 * kSecond);  // the log's oldest leaves
}

TEST(LimiterTest, SlidingLogRunsLateCallersAtTheLatestTimeSeen) {
  // Expiry cannot be undone, so a call carrying an older time (a thread
  // preempted after reading its clock) is evaluated at the latest time the
  // log has seen, and recorded there.
  auto l = Make(LimitSpec::SlidingWindowLog(1, absl::Seconds(10)));
  ASSERT_TRUE(l->TryAcquire("k", 1, kT0).allowed);
  ASSERT_TRUE(l->TryAcquire("k", 0, kT0 + 10 * kSecond).allowed);  // expires
  ASSERT_TRUE(l->TryAcquire("k", 1, kT0 + 5 * kSecond).allowed);   // at +10 s
  const Decision d = l->TryAcquire("k", 1, kT0 + 16 * kSecond);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, 4 * kSecond);
}

}  // namespace
}  // namespace tokenlease
