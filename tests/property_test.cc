// Property tests: the real Limiter against the reference models of
// testing/reference_model.h on randomized arrival sequences with fixed seeds
// (testing/generators.h), plus the meaning of retry_after and reset_after
// checked by replaying the engine's history, and minimal replays of every
// discrepancy found. The randomized checks run once per spec family
// (TEST_P over kFamilies), each family on its own seeds.
//
// Every failure prints the seed, the spec, the first differing call (index,
// now_ns, cost), both decisions and the whole call trace up to it, so that a
// failure can be replayed with TryAcquire(key, cost, now_ns) alone. Set
// TOKENLEASE_PROPERTY_SEED=<seed> to run only that seed.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "testing/generators.h"
#include "testing/reference_model.h"
#include "testing/specs.h"
#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/limiter.h"
#include "tokenlease/spec.h"

namespace tokenlease::reference {
namespace {

using testing::BandKind;
using testing::Call;
using testing::CallGenerator;
using testing::kDay;
using testing::kEpoch2026;
using testing::kMs;
using testing::kSecond;
using testing::kUs;
using testing::RandomSpec;
using testing::Rng;
using testing::SpecString;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kSequences = 40;
constexpr int kCalls = 150;
constexpr int kRetrySequences = 12;
constexpr int kRetryCalls = 80;
#else
constexpr int kSequences = 200;
constexpr int kCalls = 300;
constexpr int kRetrySequences = 60;
constexpr int kRetryCalls = 150;
#endif
// Decisions whose retry_after / reset_after is replayed per sequence.
constexpr int kRetryChecksPerSequence = 8;
// Failing sequences printed in full per test (all are counted); override
// with TOKENLEASE_PROPERTY_REPORTS=<n>.
constexpr int kReportsPerTest = 3;

std::unique_ptr<Limiter> NewLimiter(const LimitSpec& spec, Clock* clock) {
  LimiterOptions options;
  options.clock = clock;
  options.shards = 1;
  auto limiter = Limiter::Create(spec, options);
  if (!limiter.ok()) {
    ADD_FAILURE() << "Limiter::Create(" << SpecString(spec)
                  << "): " << limiter.status();
    return nullptr;
  }
  return *std::move(limiter);
}

constexpr char kKey[] = "k";

std::string CallString(int index, const Call& c) {
  return absl::StrCat("call #", index, ": TryAcquire(\"", kKey,
                      "\", cost=", c.cost, ", now_ns=", c.now, ")");
}

std::string TraceString(const std::vector<Call>& calls, int last_index) {
  std::string out = absl::StrCat("  replay (now_ns, cost) of calls #0..#",
                                 last_index, ":\n   ");
  for (int i = 0; i <= last_index && i < static_cast<int>(calls.size()); ++i) {
    absl::StrAppend(&out, " {", calls[i].now, ", ", calls[i].cost, "},");
    if (i % 4 == 3) absl::StrAppend(&out, "\n   ");
  }
  return out;
}

// Seeds to run: all, or only TOKENLEASE_PROPERTY_SEED.
std::vector<uint64_t> Seeds(uint64_t base, int count) {
  std::vector<uint64_t> seeds;
  if (const char* only = std::getenv("TOKENLEASE_PROPERTY_SEED")) {
    const uint64_t s = std::strtoull(only, nullptr, 10);
    if (s >= base && s < base + static_cast<uint64_t>(count)) {
      seeds.push_back(s);
    }
    return seeds;
  }
  for (int i = 0; i < count; ++i) seeds.push_back(base + i);
  return seeds;
}

// ------------------------------------------------------ exact comparison

// Outcome of one sequence: empty `report` if the engine matched.
struct SequenceOutcome {
  std::string report;
  std::vector<std::string> fields;  // kinds of mismatch seen
};

// Field-by-field comparison. A mismatch in `allowed` ends the sequence
// (the states diverge); one in remaining/retry/reset is reported and the
// sequence continues, since both sides charged the same.
struct Comparison {
  std::map<std::string, int> first_index;  // field -> first call index
  std::string details;
  bool diverged = false;
  int last_index = -1;

  void Compare(int index, const Call& c, const Decision& engine,
               const Decision& model, const char* model_name) {
    std::vector<std::string> bad;
    if (engine.allowed != model.allowed) bad.push_back("allowed");
    if (engine.source != model.source) bad.push_back("source");
    if (engine.remaining != model.remaining) bad.push_back("remaining");
    if (engine.retry_after_ns != model.retry_after_ns) {
      bad.push_back("retry_after_ns");
    }
    if (engine.reset_after_ns != model.reset_after_ns) {
      bad.push_back("reset_after_ns");
    }
    bool fresh = false;
    for (const std::string& f : bad) {
      if (first_index.emplace(f, index).second) fresh = true;
    }
    if (fresh) {
      std::string fields;
      for (const std::string& f : bad) absl::StrAppend(&fields, f, " ");
      absl::StrAppend(&details, "  first difference in { ", fields, "} at ",
                      CallString(index, c),
                      "\n    engine:    ", DecisionToString(engine), "\n    ",
                      model_name, ": ", DecisionToString(model), "\n");
      last_index = std::max(last_index, index);
    }
    if (engine.allowed != model.allowed) diverged = true;
  }
};

// The reference model's own consistency: a retry_after it reports must be
// the first instant at which the request fits.
std::string SelfCheck(const ReferenceLimiter& model, const Call& c,
                      const Decision& d) {
  if (d.allowed || c.cost < 0) return "";
  if (d.retry_after_ns == kNever) {
    if (model.FitsAt(c.now + 20 * 366 * kDay, c.cost)) {
      return "model says kNever but the cost fits 20 years later";
    }
    return "";
  }
  if (d.retry_after_ns <= 0) return "model denial with retry_after <= 0";
  if (!model.FitsAt(c.now + d.retry_after_ns, c.cost)) {
    return "model's request does not fit at now + retry_after";
  }
  if (model.FitsAt(c.now + d.retry_after_ns - 1, c.cost)) {
    return "model's request fits at now + retry_after - 1";
  }
  return "";
}

struct NamedModel {
  const char* name;
  ReferenceLimiter model;
};

SequenceOutcome RunExact(const LimitSpec& spec, uint64_t seed, int calls,
                         bool allow_back, bool with_bucket_form) {
  SequenceOutcome out;
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  if (limiter == nullptr) return out;
  std::vector<NamedModel> models;
  models.push_back({"reference", ReferenceLimiter(spec)});
  if (with_bucket_form) {
    models.push_back({"bucket-ref", ReferenceLimiter(spec, true)});
  }
  CallGenerator gen(spec, seed * 0x9E3779B97F4A7C15ull + 1, allow_back);
  std::vector<Call> trace;
  Comparison cmp;
  std::string model_bug;
  Decision last;
  for (int i = 0; i < calls && !cmp.diverged && model_bug.empty(); ++i) {
    const Call c = gen.Next(i == 0 ? nullptr : &last);
    trace.push_back(c);
    const Decision engine = limiter->TryAcquire(kKey, c.cost, c.now);
    for (NamedModel& m : models) {
      const Decision expected = m.model.Call(c.now, c.cost);
      cmp.Compare(i, c, engine, expected, m.name);
      const std::string bug = SelfCheck(m.model, c, expected);
      if (!bug.empty() && model_bug.empty()) {
        model_bug = absl::StrCat("REFERENCE MODEL BUG (", m.name, ") at ",
                                 CallString(i, c), ": ", bug, "; ",
                                 DecisionToString(expected), "\n");
        cmp.last_index = std::max(cmp.last_index, i);
      }
    }
    last = engine;
  }
  if (cmp.first_index.empty() && model_bug.empty()) return out;
  for (const auto& [field, index] : cmp.first_index)
    out.fields.push_back(field);
  if (!model_bug.empty()) out.fields.push_back("MODEL-BUG");
  out.report =
      absl::StrCat("seed=", seed, " spec=\"", SpecString(spec), "\"\n",
                   model_bug, cmp.details, TraceString(trace, cmp.last_index));
  return out;
}

// Runs `count` seeds from `base` and fails with a summary (and the first few
// replays) if any sequence differs.
void RunProperty(uint64_t base, int count,
                 const std::function<SequenceOutcome(uint64_t)>& run) {
  int reports = kReportsPerTest;
  if (const char* n = std::getenv("TOKENLEASE_PROPERTY_REPORTS")) {
    reports = std::atoi(n);
  }
  int failing = 0;
  int ran = 0;
  std::map<std::string, int> by_field;
  for (uint64_t seed : Seeds(base, count)) {
    ++ran;
    const SequenceOutcome o = run(seed);
    if (o.report.empty()) continue;
    ++failing;
    for (const std::string& f : o.fields) ++by_field[f];
    if (failing <= reports) ADD_FAILURE() << o.report;
  }
  std::string summary;
  for (const auto& [field, n] : by_field) {
    absl::StrAppend(&summary, " ", field, ":", n);
  }
  EXPECT_EQ(failing, 0) << failing << " of " << ran
                        << " sequences differ; sequences per field:" << summary;
}

// A bounded log (limit > max_log_entries) records each grant at the end of
// its quantum q = period / max_log_entries, "so a token counts for at most
// one quantum longer than exact: stricter, never looser" (spec.h). Fed the
// engine's own grants, the exact log with period P must admit everything
// the engine admits, and the engine must admit everything an exact log with
// period P + q admits; remaining, retry_after and reset_after lie between
// the two. With limit <= max_log_entries (q = 0) the log is exact and every
// field must match.
SequenceOutcome RunBoundedLog(const LimitSpec& spec, uint64_t seed, int calls) {
  SequenceOutcome out;
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  if (limiter == nullptr) return out;
  const Band& band = spec.bands[0];
  const int64_t P = absl::ToInt64Nanoseconds(band.period);
  const int64_t M = band.max_log_entries > 0 ? band.max_log_entries : 256;
  const int64_t q = band.limit > M ? (P + M - 1) / M : 0;
  LimitSpec slack_spec = spec;
  slack_spec.bands[0].period = absl::Nanoseconds(P + q);
  ReferenceLimiter exact(spec);
  ReferenceLimiter slack(slack_spec);
  CallGenerator gen(spec, seed * 0x9E3779B97F4A7C15ull + 1, seed % 2 == 1);
  std::vector<Call> trace;
  Decision last;
  const auto never_mismatch = [](const Decision& a, const Decision& b) {
    return (a.retry_after_ns == kNever) != (b.retry_after_ns == kNever);
  };
  for (int i = 0; i < calls; ++i) {
    const Call c = gen.Next(i == 0 ? nullptr : &last);
    trace.push_back(c);
    const Decision engine = limiter->TryAcquire(kKey, c.cost, c.now);
    last = engine;
    const Decision hi = ReferenceLimiter(exact).Call(c.now, c.cost);
    const Decision lo = ReferenceLimiter(slack).Call(c.now, c.cost);
    std::string bad;
    if (q == 0) {
      if (DecisionToString(engine) != DecisionToString(hi)) {
        bad = "differs from the exact log (limit <= max_log_entries)";
      }
    } else if (engine.allowed && !hi.allowed) {
      bad = "admitted what the exact log denies (looser than exact)";
    } else if (!engine.allowed && lo.allowed) {
      bad =
          "denied what an exact log with period + quantum admits (more "
          "than one quantum stricter)";
    } else if (engine.allowed == hi.allowed && engine.allowed == lo.allowed) {
      if (engine.remaining > hi.remaining || engine.remaining < lo.remaining) {
        bad = "remaining outside [slack, exact]";
      } else if (engine.reset_after_ns < hi.reset_after_ns ||
                 engine.reset_after_ns > lo.reset_after_ns) {
        bad = "reset_after outside [exact, slack]";
      } else if (!engine.allowed &&
                 (never_mismatch(engine, hi) || never_mismatch(engine, lo) ||
                  (engine.retry_after_ns != kNever &&
                   (engine.retry_after_ns < hi.retry_after_ns ||
                    engine.retry_after_ns > lo.retry_after_ns)))) {
        bad = "retry_after outside [exact, slack] (or kNever mismatch)";
      }
    }
    if (!bad.empty()) {
      out.fields.push_back(bad);
      out.report = absl::StrCat(
          "seed=", seed, " spec=\"", SpecString(spec), "\" quantum_ns=", q,
          "\n  ", bad, " at ", CallString(i, c),
          "\n    engine: ", DecisionToString(engine),
          "\n    exact:  ", DecisionToString(hi),
          "\n    slack:  ", DecisionToString(lo), "\n", TraceString(trace, i));
      return out;
    }
    // Both models record exactly the engine's grants (a log can record a
    // grant it would not have admitted itself). Invalid costs touch nothing.
    if (c.cost >= 0) {
      for (ReferenceLimiter* m : {&exact, &slack}) {
        if (engine.allowed) {
          m->Record(c.now, c.cost);
        } else {
          m->Touch(c.now);
        }
      }
    }
  }
  return out;
}

// A family of random specs and the first seed of each randomized check.
struct Family {
  std::string name;
  std::function<LimitSpec(uint64_t seed)> spec;
  uint64_t exact_base;  // MatchesTheReferenceModel
  uint64_t retry_base;  // RetryAfterIsTheFirstFit
  uint64_t reset_base;  // ResetAfterIsTheInitialState
  // Even seeds (no clock steps back) also check the textbook bucket.
  bool bucket_cross_check = false;
  // The engine's log may be up to one quantum stricter than exact: checked
  // between two exact logs (RunBoundedLog) instead of against one.
  bool bounded_log = false;
};

void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }

std::vector<Family> Families() {
  // One family per single-band kind, with the first seeds of its three
  // checks (exact, retry, reset) in units of 100,000; then the composites.
  struct Row {
    const char* name;
    BandKind kind;
    uint64_t exact, retry, reset;
    bool bucket_cross_check = false;
  };
  using enum BandKind;
  constexpr Row kRows[] = {
      {"TokenBucketSmooth", kSmoothBucket, 1, 11, 21, true},
      {"Gcra", kGcra, 2, 12, 22, true},
      {"TokenBucketStepwise", kStepwise, 3, 13, 23},
      {"FixedWindowAligned", kFixedAligned, 4, 14, 24},
      {"FixedWindowFirstRequest", kFixedFirstRequest, 5, 15, 25},
      {"SlidingWindowCounter", kCounter, 6, 16, 26},
      {"SlidingWindowLogExact", kLogExact, 7, 17, 27},
      {"SlidingWindowLogGranular", kLogGranular, 8, 18, 28},
      {"SlidingWindowLogBounded", kLogBounded, 10, 19, 29},
  };
  constexpr uint64_t kUnit = 100000;
  std::vector<Family> families;
  for (const Row& r : kRows) {
    const BandKind kind = r.kind;
    families.push_back(
        {r.name, [kind](uint64_t seed) { return RandomSpec(kind, seed); },
         r.exact * kUnit, r.retry * kUnit, r.reset * kUnit,
         r.bucket_cross_check,
         /*bounded_log=*/kind == kLogBounded});
  }
  families.push_back({"Composite", testing::RandomComposite, 9 * kUnit,
                      20 * kUnit, 30 * kUnit});
  return families;
}

class PropertyTest : public ::testing::TestWithParam<Family> {};

INSTANTIATE_TEST_SUITE_P(Families, PropertyTest,
                         ::testing::ValuesIn(Families()), testing::ParamName());

TEST_P(PropertyTest, MatchesTheReferenceModel) {
  const Family& f = GetParam();
  RunProperty(f.exact_base, kSequences, [&](uint64_t seed) {
    const LimitSpec spec = f.spec(seed);
    if (f.bounded_log) return RunBoundedLog(spec, seed, kCalls);
    // Odd seeds step the clock back now and then; even ones never do, and
    // then the textbook bucket must agree as well.
    const bool allow_back = seed % 2 == 1;
    return RunExact(spec, seed, kCalls, allow_back,
                    f.bucket_cross_check && !allow_back);
  });
}

// ------------------------------------------------------ minimal replays
//
// The shortest call sequences found for each discrepancy class the random
// tests report, with the expected values worked out by hand (and checked
// against the reference model). Each call is compared field by field.

// Runs `calls` through a fresh Limiter and the reference model; expects
// identical decisions and returns the engine's.
std::vector<Decision> ExpectSameAsModel(const LimitSpec& spec,
                                        const std::vector<Call>& calls) {
  std::vector<Decision> out;
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  if (limiter == nullptr) return out;
  ReferenceLimiter model(spec);
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const Decision engine = limiter->TryAcquire(kKey, c.cost, c.now);
    const Decision expected = model.Call(c.now, c.cost);
    EXPECT_EQ(DecisionToString(engine), DecisionToString(expected))
        << SpecString(spec) << "\n"
        << CallString(static_cast<int>(i), c) << "\n"
        << TraceString(calls, static_cast<int>(i));
    out.push_back(engine);
  }
  return out;
}

// A fixed window of 10 per minute and a stepwise bucket of 3 per second
// (burst 8).
LimitSpec WindowAndStepwiseBucket() {
  return testing::Composite(
      {LimitSpec::FixedWindow(10, absl::Minutes(1)),
       LimitSpec::TokenBucket(3, absl::Seconds(1), 8, Refill::kStepwise)});
}

// 2026-01-01T00:00:00.5Z: mid-window for every period that divides 1 s.
constexpr int64_t kMid = kEpoch2026 + 500 * kMs;

// A cost above a sliding counter's limit can never be admitted: retry_after
// must be kNever (the engine clamps its kNever to 0 with max(wait, 0)).
TEST(PropertyReplayTest, SlidingCounterCostAboveLimitIsNever) {
  const std::vector<Decision> d = ExpectSameAsModel(
      LimitSpec::SlidingWindowCounter(3, absl::Seconds(1)), {{kMid, 4}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].allowed);
  EXPECT_EQ(d[0].retry_after_ns, kNever);
}

// A granular log records a grant at the start of its granule, so it expires
// one period after that start: 950 ms here, not a full period.
TEST(PropertyReplayTest, GranularLogResetCountsFromGranuleStart) {
  LimitSpec spec = LimitSpec::SlidingWindowLog(3, absl::Seconds(1));
  spec.bands[0].log_granularity = absl::Milliseconds(100);
  const std::vector<Decision> d =
      ExpectSameAsModel(spec, {{kEpoch2026 + 50 * kMs, 1},
                               {kEpoch2026 + kSecond - 1, 3},
                               {kEpoch2026 + kSecond, 3}});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].reset_after_ns, 950 * kMs);
  EXPECT_FALSE(d[1].allowed);
  EXPECT_EQ(d[1].retry_after_ns, 1);
  EXPECT_TRUE(d[2].allowed);  // the grant, booked at 0 s, expired at 1 s
}

// A composite denial charges nothing, so a band that would have admitted
// reports its state as it is, not as if charged.
TEST(PropertyReplayTest, CompositeDenialReportsUnchargedRemaining) {
  // Window 10/min holds 5; stepwise bucket 3/s (burst 8) holds 3. Cost 4
  // fits the window but not the bucket: remaining = min(10 - 5, 3) = 3.
  const LimitSpec spec = WindowAndStepwiseBucket();
  const std::vector<Decision> d =
      ExpectSameAsModel(spec, {{kEpoch2026, 5}, {kEpoch2026, 4}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_FALSE(d[1].allowed);
  EXPECT_EQ(d[1].remaining, 3);
}

TEST(PropertyReplayTest, CompositeDenialReportsUnchargedReset) {
  // GCRA 10^9/s would admit 4, the weekly window never admits 4: nothing is
  // charged, the new key is still at its initial state, reset_after 0.
  const LimitSpec spec =
      testing::Composite({LimitSpec::Gcra(1000000000, absl::Seconds(1)),
                          LimitSpec::FixedWindow(1, absl::Hours(7 * 24))});
  const std::vector<Decision> d = ExpectSameAsModel(spec, {{kMid, 4}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].allowed);
  EXPECT_EQ(d[0].retry_after_ns, kNever);
  EXPECT_EQ(d[0].reset_after_ns, 0);
}

// A key is created by its first call (here cost 0) at t0; if the clock then
// steps back by 1 ns, the first grant lands in the engine's initial
// placeholder window [t0 - P, t0) instead of the aligned window containing
// it, and a request just after t0 opens a fresh window: two grants in one
// aligned window of limit 1.
TEST(PropertyReplayTest, FixedWindowFirstGrantBeforeKeyCreation) {
  const std::vector<Decision> d =
      ExpectSameAsModel(LimitSpec::FixedWindow(1, absl::Seconds(1)),
                        {{kMid, 0}, {kMid - 1, 1}, {kMid + 1, 1}});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[1].allowed);
  EXPECT_EQ(d[1].reset_after_ns, 500 * kMs + 1);  // aligned window ends at 1 s
  EXPECT_FALSE(d[2].allowed);
}

TEST(PropertyReplayTest, FirstRequestWindowFirstGrantBeforeKeyCreation) {
  // With the first-request anchor the window opens at the first grant
  // (t0 - 1 ns) and lasts one period.
  LimitSpec spec = LimitSpec::FixedWindow(1, absl::Seconds(1));
  spec.bands[0].anchor = WindowAnchor::kFirstRequest;
  const std::vector<Decision> d =
      ExpectSameAsModel(spec, {{kMid, 0}, {kMid - 1, 1}, {kMid + 1, 1}});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[1].allowed);
  EXPECT_EQ(d[1].reset_after_ns, kSecond);
  EXPECT_FALSE(d[2].allowed);
}

TEST(PropertyReplayTest, SlidingCounterFirstGrantBeforeKeyCreation) {
  // The grant at 0.5 s - 1 ns belongs to the aligned window [0 s, 1 s); at
  // 1.6 s it still weighs 0.4, so a second request must wait until 2 s.
  // The engine rolls its placeholder start (t0 - 2P) by one period and
  // keeps windows [k + 0.5 s, k + 1.5 s) from then on.
  const std::vector<Decision> d = ExpectSameAsModel(
      LimitSpec::SlidingWindowCounter(1, absl::Seconds(1)),
      {{kMid, 0}, {kMid - 1, 1}, {kEpoch2026 + 1600 * kMs, 1}});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[1].allowed);
  EXPECT_EQ(d[1].reset_after_ns, 1500 * kMs + 1);  // both windows over at 2 s
  EXPECT_FALSE(d[2].allowed);
  EXPECT_EQ(d[2].retry_after_ns, 400 * kMs);
}

// After a clock step back of 10 s, the GCRA debt is 11 s; retry_after and
// reset_after must say so, but the engine saturates the scaled debt at 2^62
// units of 1/l ns (l = 999999937 here), i.e. at about 4.61 s.
TEST(PropertyReplayTest, GcraRetryAfterLargeClockStepBack) {
  const std::vector<Decision> d =
      ExpectSameAsModel(LimitSpec::Gcra(999999937, absl::Seconds(1)),
                        {{kMid, 999999937}, {kMid - 10 * kSecond, 1}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_FALSE(d[1].allowed);
  // TAT = t0 + 1 s; ceil(TAT + T - now - B*T) = ceil(10 s + 1.000000063 ns).
  EXPECT_EQ(d[1].retry_after_ns, 10 * kSecond + 2);
  EXPECT_EQ(d[1].reset_after_ns, 11 * kSecond);
}

// A bounded log (limit 13 > max_log_entries 4) books a grant at the end of
// its quantum (250 ms), so the log is back to empty one period after that,
// not one period after the call.
TEST(PropertyReplayTest, BoundedLogResetIncludesQuantumRounding) {
  LimitSpec spec = LimitSpec::SlidingWindowLog(13, absl::Seconds(1));
  spec.bands[0].max_log_entries = 4;
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  ASSERT_NE(limiter, nullptr);
  const Decision d = limiter->TryAcquire(kKey, 13, kEpoch2026 + 100 * kMs);
  EXPECT_TRUE(d.allowed);
  // Booked at 250 ms, so it counts until 1.25 s.
  EXPECT_EQ(d.reset_after_ns, 1150 * kMs);
  EXPECT_FALSE(
      limiter->TryAcquire(kKey, 13, kEpoch2026 + 1250 * kMs - 1).allowed);
  EXPECT_TRUE(limiter->TryAcquire(kKey, 13, kEpoch2026 + 1250 * kMs).allowed);
}

// spec.h: with limit > max_log_entries "a token counts for at most one
// quantum longer than exact". With max_log_entries 2 (quantum 500 ms) three
// quantum ends can be live at once, so the oldest entry is merged into the
// next and its tokens count longer: 10 tokens granted at 0.1 s still count
// at 1.7 s (exact: until 1.1 s; promised bound: 1.6 s).
TEST(PropertyReplayTest, BoundedLogAtMostOneQuantumStricter) {
  LimitSpec spec = LimitSpec::SlidingWindowLog(13, absl::Seconds(1));
  spec.bands[0].max_log_entries = 2;
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  ASSERT_NE(limiter, nullptr);
  EXPECT_TRUE(limiter->TryAcquire(kKey, 10, kEpoch2026 + 100 * kMs).allowed);
  EXPECT_TRUE(limiter->TryAcquire(kKey, 1, kEpoch2026 + 600 * kMs).allowed);
  EXPECT_TRUE(limiter->TryAcquire(kKey, 1, kEpoch2026 + 1100 * kMs).allowed);
  // An exact log with period 1 s + 500 ms holds only the grants of 0.6 s
  // and 1.1 s at 1.7 s: 2 + 11 <= 13.
  LimitSpec slack = spec;
  slack.bands[0].period = absl::Milliseconds(1500);
  ReferenceLimiter bound(slack);
  bound.Record(kEpoch2026 + 100 * kMs, 10);
  bound.Record(kEpoch2026 + 600 * kMs, 1);
  bound.Record(kEpoch2026 + 1100 * kMs, 1);
  ASSERT_TRUE(bound.FitsAt(kEpoch2026 + 1700 * kMs, 11));
  const Decision d = limiter->TryAcquire(kKey, 11, kEpoch2026 + 1700 * kMs);
  EXPECT_TRUE(d.allowed) << DecisionToString(d);
}

// ------------------------------------------------- reference model checks

// Known answers worked out by hand, so the models are not only checked
// against the engine.
TEST(PropertyModelTest, KnownAnswers) {
  const int64_t t0 = kEpoch2026;
  {  // GCRA 3/s: T = 333333333.33 ns.
    ReferenceLimiter m(LimitSpec::Gcra(3, absl::Seconds(1)));
    Decision d = m.Call(t0, 3);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 0);
    EXPECT_EQ(d.reset_after_ns, kSecond);
    d = m.Call(t0 + 1, 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after_ns, 333333333);  // ceil(T - 1)
    EXPECT_EQ(d.reset_after_ns, kSecond - 1);
    EXPECT_FALSE(m.Call(t0 + 333333333, 1).allowed);
    d = m.Call(t0 + 333333334, 1);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 0);
    EXPECT_EQ(m.Call(t0 + 1, 4).retry_after_ns, kNever);
  }
  {  // Stepwise 3/s.
    ReferenceLimiter m(
        LimitSpec::TokenBucket(3, absl::Seconds(1), 0, Refill::kStepwise));
    Decision d = m.Call(t0, 3);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.reset_after_ns, kSecond);
    d = m.Call(t0 + kSecond / 2, 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after_ns, kSecond / 2);
    d = m.Call(t0 + kSecond, 1);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 2);
    EXPECT_EQ(d.reset_after_ns, kSecond);
  }
  {  // Fixed window 5/min at 00:00:30.
    ReferenceLimiter m(LimitSpec::FixedWindow(5, absl::Minutes(1)));
    const int64_t t = t0 + 30 * kSecond;
    Decision d = m.Call(t, 5);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 0);
    EXPECT_EQ(d.reset_after_ns, 30 * kSecond);
    d = m.Call(t, 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after_ns, 30 * kSecond);
    d = m.Call(t0 + 60 * kSecond, 1);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 4);
  }
  {  // Sliding counter 10/s: 10 at 0.5 s; at 1.25 s prev weighs 7.5.
    ReferenceLimiter m(LimitSpec::SlidingWindowCounter(10, absl::Seconds(1)));
    EXPECT_TRUE(m.Call(t0 + 500 * kMs, 10).allowed);
    const Decision d = m.Call(t0 + 1250 * kMs, 3);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.remaining, 2);
    EXPECT_EQ(d.retry_after_ns, 50 * kMs);  // 10 * (1 - e) + 3 <= 10: e=0.3
    EXPECT_EQ(d.reset_after_ns, 750 * kMs);
  }
  {  // Sliding log 3/10s: grants at 0, 1, 2 s; at 5 s cost 2 waits for 1 s.
    ReferenceLimiter m(LimitSpec::SlidingWindowLog(3, absl::Seconds(10)));
    for (int s = 0; s < 3; ++s)
      EXPECT_TRUE(m.Call(t0 + s * kSecond, 1).allowed);
    const Decision d = m.Call(t0 + 5 * kSecond, 2);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after_ns, 6 * kSecond);
    EXPECT_EQ(d.reset_after_ns, 7 * kSecond);
  }
  {  // Composite: a denial charges nothing, so an admitting band reports
     // its uncharged remaining. Window 10/min holds 5; stepwise bucket 3/s
     // burst 8 holds 3; cost 4 fits the window (would leave 1) but not the
     // bucket: remaining = min(10 - 5, 3) = 3.
    ReferenceLimiter m(WindowAndStepwiseBucket());
    EXPECT_TRUE(m.Call(t0, 5).allowed);
    const Decision d = m.Call(t0, 4);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.remaining, 3);
    EXPECT_EQ(d.retry_after_ns, kSecond);
    EXPECT_EQ(d.reset_after_ns, 60 * kSecond);
  }
}

// The textbook bucket and the GCRA model agree on non-decreasing times.
TEST(PropertyModelTest, SmoothBucketMatchesGcra) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const LimitSpec spec = RandomSpec(BandKind::kGcra, seed);
    ReferenceLimiter gcra(spec);
    ReferenceLimiter bucket(spec, true);
    CallGenerator gen(spec, seed, /*allow_back=*/false);
    Decision last;
    for (int i = 0; i < kCalls; ++i) {
      const Call c = gen.Next(i == 0 ? nullptr : &last);
      const Decision a = gcra.Call(c.now, c.cost);
      const Decision b = bucket.Call(c.now, c.cost);
      ASSERT_EQ(DecisionToString(a), DecisionToString(b))
          << "seed=" << seed << " " << SpecString(spec) << " "
          << CallString(i, c);
      last = a;
    }
  }
}

// The sliding counter's binary search assumes that, with no arrivals, a
// request that fits at t also fits at every later time; scan every ns.
TEST(PropertyModelTest, SlidingCounterAdmissionIsMonotone) {
  Rng rng(42);
  for (int round = 0; round < 200; ++round) {
    const int64_t P = rng.Uniform(1, 50) * kUs / 10;  // 100ns .. 5us
    const int64_t L = rng.Uniform(1, 20);
    const std::unique_ptr<ReferenceBand> m = MakeReferenceBand(
        {.algorithm = Algorithm::kSlidingWindowCounter,
         .limit = L,
         .period = absl::Nanoseconds(P),
         .window_offset = absl::Nanoseconds(rng.Uniform(-P, P))});
    int64_t now = kEpoch2026 + rng.Uniform(0, 10 * P);
    for (int i = 0; i < 30; ++i) {
      now += rng.Uniform(0, P);
      const int64_t c = rng.Uniform(1, L);
      if (m->Fits(now, c)) m->Charge(now, c);
    }
    const int64_t c = rng.Uniform(0, L);
    bool fitted = false;
    for (int64_t t = now; t <= now + 3 * P; ++t) {
      const bool fits = m->Fits(t, c);
      ASSERT_FALSE(fitted && !fits) << "round " << round << " t=" << t;
      fitted = fitted || fits;
    }
    EXPECT_TRUE(fitted);
  }
}

// ----------------------------------------------------- retry_after meaning

// Replays `calls[0..last]` on a fresh Limiter, then asks for `cost` at `at`.
Decision ReplayThen(const LimitSpec& spec, const std::vector<Call>& calls,
                    int last, int64_t at, int64_t cost) {
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  if (limiter == nullptr) return Decision{};
  for (int i = 0; i <= last; ++i) {
    limiter->TryAcquire(kKey, calls[i].cost, calls[i].now);
  }
  return limiter->TryAcquire(kKey, cost, at);
}

// A history to replay: kRetryCalls generated calls (odd seeds step the
// clock back) and the engine's decision on each.
struct History {
  std::vector<Call> trace;
  std::vector<Decision> decisions;
};

// False if the limiter cannot be created (already a test failure).
bool MakeHistory(const LimitSpec& spec, uint64_t seed, uint64_t salt,
                 History* h) {
  ManualClock clock;
  std::unique_ptr<Limiter> limiter = NewLimiter(spec, &clock);
  if (limiter == nullptr) return false;
  CallGenerator gen(spec, seed * 0x9E3779B97F4A7C15ull + salt, seed % 2 == 1);
  for (int i = 0; i < kRetryCalls; ++i) {
    const Call c = gen.Next(i == 0 ? nullptr : &h->decisions.back());
    h->trace.push_back(c);
    h->decisions.push_back(limiter->TryAcquire(kKey, c.cost, c.now));
  }
  return true;
}

// A random subset of kRetryChecksPerSequence of `calls` (each check replays
// the history).
std::vector<int> Subset(std::vector<int> calls, Rng pick) {
  while (static_cast<int>(calls.size()) > kRetryChecksPerSequence) {
    calls.erase(calls.begin() + pick.Uniform(0, calls.size() - 1));
  }
  return calls;
}

// The first failure of each kind in one sequence (one kind does not hide
// another), as a SequenceOutcome.
class Failures {
 public:
  // `role` names the checked call in reports ("denied", "after").
  Failures(const History& h, const char* role) : h_(h), role_(role) {}

  void Add(const std::string& kind, const std::string& what, int i,
           const Decision& got) {
    if (std::find(out_.fields.begin(), out_.fields.end(), kind) !=
        out_.fields.end()) {
      return;
    }
    out_.fields.push_back(kind);
    last_index_ = std::max(last_index_, i);
    absl::StrAppend(&details_, "  ", what, "\n    ", role_, " ",
                    CallString(i, h_.trace[i]),
                    "\n    decision: ", DecisionToString(h_.decisions[i]),
                    "\n    replayed: ", DecisionToString(got), "\n");
  }

  SequenceOutcome Outcome(const LimitSpec& spec, uint64_t seed) {
    if (!out_.fields.empty()) {
      out_.report =
          absl::StrCat("seed=", seed, " spec=\"", SpecString(spec), "\"\n",
                       details_, TraceString(h_.trace, last_index_));
    }
    return out_;
  }

 private:
  const History& h_;
  const char* role_;
  SequenceOutcome out_;
  std::string details_;
  int last_index_ = -1;
};

// For denied requests: after the same history (including the denial), the
// same request at now + retry_after is admitted and at now + retry_after - 1
// is denied; with kNever it is denied even 20 years later.
SequenceOutcome CheckRetryMeaning(const LimitSpec& spec, uint64_t seed) {
  History h;
  if (!MakeHistory(spec, seed, 7, &h)) return {};
  std::vector<int> denied;
  for (int i = 0; i < kRetryCalls; ++i) {
    if (!h.decisions[i].allowed && h.trace[i].cost >= 0) denied.push_back(i);
  }
  Failures failures(h, "denied");
  for (int i : Subset(denied, Rng(seed))) {
    const Call& c = h.trace[i];
    const Decision& d = h.decisions[i];
    if (d.retry_after_ns == kNever) {
      const Decision later =
          ReplayThen(spec, h.trace, i, c.now + 20 * 366 * kDay, c.cost);
      if (later.allowed) {
        failures.Add("kNever-but-admitted",
                     "retry_after is kNever but the request is admitted 20 "
                     "years later",
                     i, later);
      }
      continue;
    }
    if (d.retry_after_ns <= 0) {
      failures.Add("retry<=0", "denied with retry_after_ns <= 0", i, d);
      continue;
    }
    const Decision at =
        ReplayThen(spec, h.trace, i, c.now + d.retry_after_ns, c.cost);
    if (!at.allowed) {
      failures.Add("denied-at-retry",
                   absl::StrCat("not admitted at now + retry_after (now_ns=",
                                c.now + d.retry_after_ns, ")"),
                   i, at);
    }
    const Decision before =
        ReplayThen(spec, h.trace, i, c.now + d.retry_after_ns - 1, c.cost);
    if (before.allowed) {
      failures.Add(
          "admitted-before-retry",
          absl::StrCat("already admitted at now + retry_after - 1 (now_ns=",
                       c.now + d.retry_after_ns - 1, ")"),
          i, before);
    }
  }
  return failures.Outcome(spec, seed);
}

// reset_after: after the same history (including the call), at now +
// reset_after every band is back at its initial state, so a request of the
// smallest band capacity is admitted; for a single band, 1 ns earlier a
// request of its whole capacity is not (unless reset_after is 0).
SequenceOutcome CheckResetMeaning(const LimitSpec& spec, uint64_t seed) {
  History h;
  if (!MakeHistory(spec, seed, 11, &h)) return {};
  int64_t capacity = INT64_MAX;
  for (const Band& b : spec.bands) {
    const bool bucket = b.algorithm == Algorithm::kTokenBucket ||
                        b.algorithm == Algorithm::kGcra;
    capacity = std::min(capacity, bucket && b.burst > 0 ? b.burst : b.limit);
  }
  std::vector<int> valid;
  for (int i = 0; i < kRetryCalls; ++i) {
    if (h.trace[i].cost >= 0) valid.push_back(i);
  }
  Failures failures(h, "after");
  for (int i : Subset(valid, Rng(seed + 1))) {
    const Call& c = h.trace[i];
    const int64_t r = h.decisions[i].reset_after_ns;
    if (r < 0) {
      failures.Add("reset<0", "reset_after_ns < 0", i, h.decisions[i]);
      continue;
    }
    const Decision at = ReplayThen(spec, h.trace, i, c.now + r, capacity);
    if (!at.allowed) {
      failures.Add("not-reset-at-reset",
                   absl::StrCat("a request of the capacity (", capacity,
                                ") is denied at now + reset_after (now_ns=",
                                c.now + r, ")"),
                   i, at);
    }
    if (spec.bands.size() == 1 && r > 0) {
      const Decision before =
          ReplayThen(spec, h.trace, i, c.now + r - 1, capacity);
      if (before.allowed) {
        failures.Add("reset-before-reset",
                     absl::StrCat("a request of the capacity (", capacity,
                                  ") is already admitted at now + "
                                  "reset_after - 1 (now_ns=",
                                  c.now + r - 1, ")"),
                     i, before);
      }
    }
  }
  return failures.Outcome(spec, seed);
}

TEST_P(PropertyTest, RetryAfterIsTheFirstFit) {
  const Family& f = GetParam();
  RunProperty(f.retry_base, kRetrySequences, [&](uint64_t seed) {
    return CheckRetryMeaning(f.spec(seed), seed);
  });
}

TEST_P(PropertyTest, ResetAfterIsTheInitialState) {
  const Family& f = GetParam();
  RunProperty(f.reset_base, kRetrySequences, [&](uint64_t seed) {
    return CheckResetMeaning(f.spec(seed), seed);
  });
}

}  // namespace
}  // namespace tokenlease::reference
