// Limiter::UpdateSpec keeps a bounded window of compiled generations: memory
// that does not grow with the number of updates, exact conversion of GCRA
// cells written within the window, the TAT rule (rounded up to a whole ns)
// beyond it, and decisions by handle and by name racing with updates (run
// under ThreadSanitizer and AddressSanitizer too).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/compiled_spec.h"
#include "core/key_entry.h"
#include "core/limiter_core.h"
#include "gtest/gtest.h"
#include "local/band_eval.h"
#include "local/compiled_band.h"
#include "testing/specs.h"
#include "testing/wait.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using internal::CellValue;
using internal::CompiledSpec;
using internal::kRetainedGenerations;
using testing::RunOrExit;
using testing::WaitUntil;
using i128 = __int128;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = int64_t{1767225600} * kSecond;
constexpr int kGenShift = 40;

std::unique_ptr<Limiter> Make(const LimitSpec& spec, LimiterOptions o = {}) {
  auto l = Limiter::Create(spec, o);
  EXPECT_TRUE(l.ok()) << l.status();
  return std::move(*l);
}

int64_t CeilDiv(i128 a, i128 b) {
  return static_cast<int64_t>(a >= 0 ? (a + b - 1) / b : -((-a) / b));
}

// CompiledSpec objects alive now, in the whole process.
int64_t LiveGenerations() {
  return CompiledSpec::live_count.load(std::memory_order_relaxed);
}

// ------------------------------------------------- the TAT rule, exactly

internal::CompiledBand GcraBand(int64_t limit, int64_t burst, uint32_t gen) {
  return internal::CompileBand(Band{.algorithm = Algorithm::kGcra,
                                    .limit = limit,
                                    .period = absl::Seconds(1),
                                    .burst = burst},
                               absl::ZeroDuration(), gen);
}

CellValue Cell(int64_t tat, uint32_t gen, int64_t frac) {
  return CellValue{tat, (static_cast<int64_t>(gen) << kGenShift) | frac};
}

TEST(ConvertGcraCellOfUnknownGenerationTest, KeepsTheTatRoundedUpToAWholeNs) {
  const internal::CompiledBand to = GcraBand(13, 13, 40);  // T = 1e9/13 ns
  const int64_t now = kT0;
  using internal::ConvertGcraCellOfUnknownGeneration;
  // No fraction: the TAT as it is, in the new generation.
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(to, Cell(now + 5, 3, 0), now),
            Cell(now + 5, 40, 0));
  // A fraction of a ns (in whatever units): one more ns of debt.
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(to, Cell(now + 5, 3, 4), now),
            Cell(now + 6, 40, 0));
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(to, Cell(now, 3, 1), now),
            Cell(now + 1, 40, 0));
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(
                to, Cell(now + 7, 3, (int64_t{1} << 40) - 1), now),
            Cell(now + 8, 40, 0));
  // No debt: a new key's cell.
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(to, Cell(now, 3, 0), now),
            internal::InitialCell(to, now));
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(to, Cell(now - 1, 3, 6), now),
            internal::InitialCell(to, now));
  EXPECT_EQ(ConvertGcraCellOfUnknownGeneration(to, Cell(0, 3, 0), now),
            internal::InitialCell(to, now));
  // A whole-ns emission interval (l = 1) takes the same rule.
  const internal::CompiledBand whole = GcraBand(1000, 10, 41);  // T = 1 ms
  EXPECT_EQ(
      ConvertGcraCellOfUnknownGeneration(whole, Cell(now + 9, 40, 2), now),
      Cell(now + 10, 41, 0));
}

TEST(ConvertGcraCellOfUnknownGenerationTest, NeverHoldsMoreThanANewKey) {
  // Whatever the old cell was, the converted one is never fuller than a new
  // key's, and its bucket is full again at the old TAT rounded up.
  const internal::CompiledBand bands[] = {
      GcraBand(13, 13, 9), GcraBand(7, 3, 9), GcraBand(1000, 50, 9)};
  const int64_t now = kT0;
  uint64_t x = 88172645463325252ULL;  // xorshift64
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (const internal::CompiledBand& to : bands) {
    const internal::BandRequest peek{now, 0};
    const internal::BandResult fresh =
        internal::EvaluateBand(to, internal::InitialCell(to, now), peek);
    for (int i = 0; i < 10000; ++i) {
      const int64_t offset = static_cast<int64_t>(next() % (3 * kSecond)) -
                             kSecond / 2;  // -0.5 s .. 2.5 s
      const int64_t frac = i % 3 == 0 ? 0 : static_cast<int64_t>(next() % 977);
      const CellValue old = Cell(now + offset, 2, frac);
      const CellValue c =
          internal::ConvertGcraCellOfUnknownGeneration(to, old, now);
      ASSERT_EQ(internal::GcraCellGeneration(c), 9u);
      const internal::BandResult r = internal::EvaluateBand(to, c, peek);
      ASSERT_LE(r.remaining, fresh.remaining) << offset << " " << frac;
      const bool debt = offset > 0 || (offset == 0 && frac != 0);
      ASSERT_EQ(r.reset_after_ns, debt ? offset + (frac != 0 ? 1 : 0) : 0)
          << offset << " " << frac;
    }
  }
}

// Generations 2^23 - 1 .. 2^23 + 1 (a LimiterCore whose first generation
// is 2^23 - 1). A GCRA cell tagged 2^23 with no fraction holds INT64_MIN in
// its high half, which the dead mark was once told by: decisions on such a
// key then looked it up again forever. Each step's decisions run under
// RunOrExit (a bounded wait).
TEST(UpdateSpecTest, DecisionsContinueThroughGeneration2To23) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1), 10);
  ManualClock clock(absl::FromUnixNanos(kT0));
  LimiterOptions options;
  options.clock = &clock;
  constexpr uint32_t kTarget = uint32_t{1} << 23;
  internal::LimiterCore core(internal::CompileSpec(spec, kTarget - 1, nullptr),
                             options);
  // A pinned entry, as a handle holds one.
  internal::KeyEntry* pinned =
      core.registry().With("h", clock.NowNanos(), [](internal::KeyEntry* e) {
        e->pins.fetch_add(1, std::memory_order_seq_cst);
        return e;
      });
  ASSERT_NE(pinned, nullptr);
  const absl::Cleanup unpin = [pinned] {
    pinned->pins.fetch_sub(1, std::memory_order_release);
  };
  for (uint32_t g = kTarget - 1; g <= kTarget + 1; ++g) {
    SCOPED_TRACE(absl::StrCat("generation ", g));
    if (g > kTarget - 1) {
      ASSERT_TRUE(core.UpdateSpec(spec).ok());
    }
    clock.Advance(absl::Milliseconds(1));
    const int64_t now = clock.NowNanos();
    Decision by_name, by_pin, fresh;
    const std::string what = absl::StrCat("decisions at generation ", g);
    RunOrExit(
        [&] {
          by_name = core.TryAcquireGcraByName("k", 1, now);
          by_pin = core.TryAcquireGcraPinned(pinned, 1, now);
          fresh = core.TryAcquireGcraByName(absl::StrCat("new", g), 10, now);
        },
        what.c_str());
    EXPECT_TRUE(by_name.allowed);
    EXPECT_TRUE(by_pin.allowed);
    EXPECT_TRUE(fresh.allowed);
    EXPECT_EQ(fresh.remaining, 0);
    EXPECT_FALSE(core.IsRetired(pinned));
  }
}

// At the latest time a Limiter keeps, a whole-ns debt of 2^62 ns (the cap
// of a conversion) cannot wrap the TAT past 2^63 (into the dead mark, or a
// full bucket): the key stays in debt and its decisions return.
TEST(UpdateSpecTest, TheLargestDebtAtTheLatestTimeDoesNotWrap) {
  auto l = Make(LimitSpec::Gcra(1'000'000'000, absl::Seconds(1), 1000));
  ASSERT_TRUE(l->TryAcquire("k", 1000, INT64_MAX).allowed);
  ASSERT_TRUE(l->UpdateSpec(LimitSpec::Gcra(1, absl::Hours(24 * 365), 1)).ok());
  Decision d;
  RunOrExit([&] { d = l->TryAcquire("k", 1, INT64_MAX); },
            "a decision at the latest time");
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after(), absl::Hours(24 * 365));
}

// ------------------------------------------- the documented conversion

// A GCRA key computed from the documented semantics: when the spec changes,
// its debt of (TAT - now) / T_old tokens becomes the same debt at T_new,
// rounded up to a unit of 1/l_new ns, where p/l is P/L in lowest terms.
// Exact rationals: the TAT is kept as TAT * l of the rate it was written
// under.
struct Rate {
  int64_t limit;
  int64_t period_ns;
  int64_t burst;
  LimitSpec Spec() const {
    return LimitSpec::Gcra(limit, absl::Nanoseconds(period_ns), burst);
  }
  // The emission interval P/L in lowest terms, as the engine keeps it:
  // {l, p} in `limit` and `period_ns`.
  Rate Reduced() const {
    const int64_t g = std::gcd(limit, period_ns);
    return {limit / g, period_ns / g, burst};
  }
};

class ReferenceGcraKey {
 public:
  // `generation` identifies the spec in force (a new one converts).
  Decision Decide(const Rate& spec_rate, int generation, int64_t now,
                  int64_t cost) {
    const Rate r = spec_rate.Reduced();
    const i128 L = r.limit, P = r.period_ns;
    if (has_tat_ && generation != generation_) {
      const i128 d = tat_ - static_cast<i128>(now) * rate_.limit;
      if (d <= 0) {
        has_tat_ = false;
      } else {
        tat_ = static_cast<i128>(now) * L + CeilDiv(d * P, rate_.period_ns);
        rate_ = r;
        generation_ = generation;
      }
    }
    const i128 d =
        has_tat_ ? std::max<i128>(tat_ - static_cast<i128>(now) * L, 0) : 0;
    const i128 tol = static_cast<i128>(r.burst) * P;
    const i128 need = static_cast<i128>(cost) * P;
    Decision out;
    if (d + need <= tol) {
      out.allowed = true;
      if (cost > 0) {
        tat_ = static_cast<i128>(now) * L + d + need;
        has_tat_ = true;
        rate_ = r;
        generation_ = generation;
      }
      out.remaining = static_cast<int64_t>((tol - d - need) / P);
      out.retry_after_ns = 0;
      out.reset_after_ns = CeilDiv(d + need, L);
    } else {
      out.remaining = d <= tol ? static_cast<int64_t>((tol - d) / P) : 0;
      out.retry_after_ns = need > tol ? kNever : CeilDiv(d + need - tol, L);
      out.reset_after_ns = CeilDiv(d, L);
    }
    return out;
  }

 private:
  bool has_tat_ = false;
  Rate rate_{1, 1, 1};
  int generation_ = -1;
  i128 tat_ = 0;  // TAT * rate_.limit
};

// The limits under test: one GCRA band alone (the lock-free path), or with
// a fixed window that never binds (the locked path). `composite` decisions
// are compared on allowed, remaining and retry_after (the window's reset is
// its own).
struct Shape {
  std::string name;
  bool composite;
  LimitSpec Of(const Rate& r) const {
    if (!composite) return r.Spec();
    return testing::Composite(
        {r.Spec(), LimitSpec::FixedWindow(1'000'000, absl::Hours(1))});
  }
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

class UpdateSpecShapeTest : public ::testing::TestWithParam<Shape> {};

void ExpectSame(const Decision& got, const Decision& want, bool composite,
                const std::string& where) {
  EXPECT_EQ(got.allowed, want.allowed) << where;
  EXPECT_EQ(got.remaining, want.remaining) << where;
  EXPECT_EQ(got.retry_after_ns, want.retry_after_ns) << where;
  if (!composite) {
    EXPECT_EQ(got.reset_after_ns, want.reset_after_ns) << where;
  }
}

// 600 steps of decisions by handle and by name, with an update in two of
// three steps among `rates`, each decision compared with the reference.
void ExpectConversionsExact(const Shape& shape, const Rate (&rates)[4]) {
  ManualClock clock(absl::FromUnixNanos(kT0));
  auto l = Make(shape.Of(rates[0]), {.clock = &clock});
  constexpr int kKeys = 6;
  std::vector<ReferenceGcraKey> refs(kKeys);
  std::vector<Limiter::Handle> handles(kKeys);
  for (int j = 0; j < kKeys; j += 2) {
    auto h = l->Resolve(absl::StrCat("k", j));
    ASSERT_TRUE(h.ok());
    handles[j] = *h;
  }
  int generation = 0;
  int current = 0;  // index into rates
  for (int step = 0; step < 600; ++step) {
    clock.Advance(
        absl::Nanoseconds((step * 7919) % 97 * 1'000'000 + step % 13 + 1));
    if (step % 3 != 0) {
      current = (current + 1 + step % 2) % 4;
      ASSERT_TRUE(l->UpdateSpec(shape.Of(rates[current])).ok());
      ++generation;
    }
    // Key j decides every j + 1 steps: at most 6 updates apart, always
    // within the window.
    for (int j = 0; j < kKeys; ++j) {
      if ((step + j) % (j + 1) != 0) continue;
      const int64_t cost = (step + j) % 4;  // 0 .. 3
      const std::string key = absl::StrCat("k", j);
      const Decision got = j % 2 == 0 ? l->TryAcquire(handles[j], cost)
                                      : l->TryAcquire(key, cost);
      const Decision want =
          refs[j].Decide(rates[current], generation, clock.NowNanos(), cost);
      ExpectSame(got, want, shape.composite,
                 absl::StrCat("step ", step, " key ", j, " cost ", cost));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST_P(UpdateSpecShapeTest, ConversionsWithinTheWindowAreExact) {
  // Fractions of a ns: l = 7, 13, 3 and 11.
  ExpectConversionsExact(GetParam(), {{7, kSecond, 7},
                                      {13, kSecond, 5},
                                      {3, kSecond, 9},
                                      {11, 2 * kSecond, 4}});
}

TEST_P(UpdateSpecShapeTest, ConversionsOfWholeNsRatesAreExact) {
  // Whole-ns emission intervals (l = 1, no fraction): conversions rounded
  // up to whole ns, as the reference's reduced units say.
  ExpectConversionsExact(GetParam(), {{10, kSecond, 7},
                                      {4, kSecond, 5},
                                      {20, kSecond, 9},
                                      {5, 2 * kSecond, 4}});
}

// A key last written kRetainedGenerations - 1 updates ago is converted
// exactly; one written kRetainedGenerations or more updates ago keeps its
// TAT, rounded up to a whole ns, and never gets more than a new key.
TEST_P(UpdateSpecShapeTest, KeysIdleBeyondTheWindowKeepTheirTatRoundedUp) {
  const Shape& shape = GetParam();
  const Rate a{7, kSecond, 7}, b{13, kSecond, 13}, c{3, kSecond, 3};
  for (int idle : {1, kRetainedGenerations - 1, kRetainedGenerations,
                   kRetainedGenerations + 1, 3 * kRetainedGenerations}) {
    SCOPED_TRACE(absl::StrCat("idle across ", idle, " updates"));
    ManualClock clock(absl::FromUnixNanos(kT0));
    auto l = Make(shape.Of(a), {.clock = &clock});
    ReferenceGcraKey ref;
    // 3 tokens at 7/s: TAT = t0 + 3/7 s = t0 + 428571428 + 4/7 ns.
    ASSERT_TRUE(l->TryAcquire("k", 3).allowed);
    ref.Decide(a, 0, kT0, 3);
    for (int i = 1; i <= idle; ++i) {
      ASSERT_TRUE(
          l->UpdateSpec(shape.Of(i == idle ? c : (i % 2 ? b : a))).ok());
    }
    clock.Advance(absl::Milliseconds(100));
    const int64_t t1 = clock.NowNanos();
    const Decision peek = l->TryAcquire("k", 0);
    const Decision fresh = l->TryAcquire("fresh", 0);
    EXPECT_EQ(fresh.remaining, 3);
    EXPECT_LE(peek.remaining, fresh.remaining);
    if (idle < kRetainedGenerations) {
      // Exact: 2.3 tokens of debt at 3/s.
      ExpectSame(peek, ref.Decide(c, idle, t1, 0), shape.composite, "exact");
      EXPECT_EQ(peek.remaining, 0);
      if (!shape.composite) {
        EXPECT_EQ(peek.reset_after_ns, 766'666'667);
      }
      continue;
    }
    // The TAT rule: full again at t0 + 428571429 (rounded up from
    // 428571428.57), i.e. 328571429 ns after t1, whatever the rate now.
    const int64_t tat = kT0 + CeilDiv(i128{3} * kSecond, 7);
    EXPECT_EQ(tat - t1, 328'571'429);
    const i128 debt = i128{tat - t1} * c.limit;  // units of 1/3 ns
    const i128 tolerance = i128{c.burst} * kSecond;
    EXPECT_EQ(peek.remaining,
              static_cast<int64_t>((tolerance - debt) / kSecond));
    EXPECT_EQ(peek.remaining, 2);
    if (!shape.composite) {
      EXPECT_EQ(peek.reset_after_ns, tat - t1);
    }
    const Decision three = l->TryAcquire("k", 3);
    EXPECT_FALSE(three.allowed);
    EXPECT_EQ(three.retry_after_ns, CeilDiv(debt, c.limit));  // = tat - t1
    EXPECT_TRUE(l->TryAcquire("k", 2).allowed);
    EXPECT_FALSE(l->TryAcquire("k", 1).allowed);
  }
}

INSTANTIATE_TEST_SUITE_P(All, UpdateSpecShapeTest,
                         ::testing::Values(Shape{"gcra", false},
                                           Shape{"gcra_and_window", true}),
                         testing::ParamName());

// ------------------------------------------------------------ memory

// The live count once every generation no thread names is freed: frees
// what waits in the graveyard (destroyed Limiters' generations a slot
// named) with a throwaway Limiter's updates, which scan the slots. The
// tests below decide on threads of their own, so that this thread's slot
// (which may name a generation of an earlier test) stays as it is.
int64_t SettledLiveGenerations() {
  auto l = Make(LimitSpec::Gcra(1, absl::Seconds(1)));
  for (int i = 0; i <= kRetainedGenerations; ++i) {
    EXPECT_TRUE(l->UpdateSpec(LimitSpec::Gcra(1, absl::Seconds(1))).ok());
  }
  l.reset();
  return LiveGenerations();
}

TEST(UpdateSpecTest, MemoryStaysBoundedOver200000Updates) {
  const LimitSpec a = LimitSpec::Gcra(7, absl::Seconds(1), 7);
  const LimitSpec b = LimitSpec::Gcra(13, absl::Seconds(1), 5);
  const int64_t before = SettledLiveGenerations();
  ManualClock clock(absl::FromUnixNanos(kT0));
  auto l = Make(a, {.clock = &clock});
  std::thread([&] {
    ASSERT_TRUE(l->TryAcquire("k", 7).allowed);
    int64_t most = 0;
    for (int i = 1; i <= 200'000; ++i) {
      ASSERT_TRUE(l->UpdateSpec(i % 2 ? b : a).ok()) << i;
      most = std::max(most, LiveGenerations() - before);
      // spec() is a copy of the spec just put in force (nothing is kept per
      // call: copies cost the Limiter no memory).
      const LimitSpec now = l->spec();
      ASSERT_EQ(now.bands.size(), 1u) << i;
      ASSERT_EQ(now.bands[0].limit, i % 2 ? 13 : 7) << i;
      ASSERT_EQ(now.bands[0].burst, i % 2 ? 5 : 7) << i;
      if (i % 1000 == 0) {
        clock.Advance(absl::Milliseconds(1));
        l->TryAcquire("k", 1);
      }
    }
    // The window, plus the one generation this thread last decided with
    // (its slot names it until its next decision): every update frees the
    // rest of what left the window.
    EXPECT_EQ(most, kRetainedGenerations + 1);
    EXPECT_EQ(l->spec().bands[0].limit, 7);  // 200000 is even: `a`
  }).join();
  l.reset();
  EXPECT_EQ(LiveGenerations(), before);
}

TEST(UpdateSpecTest, AnIdleThreadKeepsOnlyTheGenerationItDecidedWith) {
  const LimitSpec a = LimitSpec::Gcra(7, absl::Seconds(1), 7);
  const LimitSpec b = LimitSpec::Gcra(13, absl::Seconds(1), 5);
  const int64_t before = SettledLiveGenerations();
  auto l = Make(a);           // this thread reads none of its generations below
  std::atomic<int> stage{0};  // -1: the idle thread failed to start
  std::thread idle([&] {
    auto h = l->Resolve("k");
    if (!h.ok()) {
      ADD_FAILURE() << h.status();
      stage.store(-1);
      return;
    }
    l->TryAcquire(*h, 1);  // decides with generation 0, then idles
    stage.store(1);
    // Until the main thread's 1000 updates are done (or it gave up).
    EXPECT_TRUE(WaitUntil([&] { return stage.load() == 2; }));
    EXPECT_TRUE(l->TryAcquire(*h, 0).allowed);  // and decides again
  });
  // Joins the idle thread however this test ends (an ASSERT returns early).
  absl::Cleanup join_idle = [&] {
    stage.store(2);
    if (idle.joinable()) idle.join();
  };
  ASSERT_TRUE(WaitUntil([&] { return stage.load() != 0; }));
  ASSERT_EQ(stage.load(), 1);
  for (int i = 1; i <= 1000; ++i) {
    ASSERT_TRUE(l->UpdateSpec(i % 2 ? b : a).ok());
    // The window and generation 0.
    ASSERT_EQ(LiveGenerations() - before,
              std::min(i + 1, kRetainedGenerations + 1))
        << i;
  }
  stage.store(2);
  idle.join();  // it moved to the current generation, then exited
  ASSERT_TRUE(l->UpdateSpec(a).ok());
  EXPECT_EQ(LiveGenerations() - before, kRetainedGenerations);
  l.reset();
  EXPECT_EQ(LiveGenerations(), before);
}

TEST(UpdateSpecTest, AThreadAlternatingBetweenLimitersKeepsOneGenerationEach) {
  // Two Limiters decided in turn by one thread, each updated in turn: each
  // keeps its window and the one generation this thread decided with, and
  // each decision is the documented one.
  const int64_t before = SettledLiveGenerations();
  ManualClock clock(absl::FromUnixNanos(kT0));
  auto a = Make(LimitSpec::Gcra(7, absl::Seconds(1), 7), {.clock = &clock});
  auto b = Make(LimitSpec::Gcra(13, absl::Seconds(1), 5), {.clock = &clock});
  std::thread([&] {
    auto ha = a->Resolve("k");
    auto hb = b->Resolve("k");
    ASSERT_TRUE(ha.ok() && hb.ok());
    ReferenceGcraKey ref_a, ref_b;
    for (int i = 1; i <= 2000; ++i) {
      const Rate ra{7 + i % 2 * 4, kSecond, 7}, rb{13 - i % 2 * 6, kSecond, 5};
      ASSERT_TRUE(a->UpdateSpec(ra.Spec()).ok());
      ASSERT_TRUE(b->UpdateSpec(rb.Spec()).ok());
      clock.Advance(absl::Milliseconds(37));
      ExpectSame(a->TryAcquire(*ha, i % 3),
                 ref_a.Decide(ra, i, clock.NowNanos(), i % 3), false,
                 absl::StrCat("a ", i));
      ExpectSame(b->TryAcquire(*hb, i % 4),
                 ref_b.Decide(rb, i, clock.NowNanos(), i % 4), false,
                 absl::StrCat("b ", i));
      if (::testing::Test::HasFailure()) return;
      ASSERT_LE(LiveGenerations() - before, 2 * (kRetainedGenerations + 1));
    }
  }).join();
  a.reset();
  b.reset();
  EXPECT_EQ(LiveGenerations(), before);
}

TEST(UpdateSpecTest, LimitersSharingAHazardWayKeepTheBound) {
  // Nine Limiters, more than the ways a slot has, so some share one: one
  // thread decides on each in turn (every decision announces again) while
  // each is updated; each keeps at most its window and the generation the
  // thread decided with.
  constexpr int kLimiters = 2 * internal::kSpecHazardWays + 1;
  const int64_t before = SettledLiveGenerations();
  const LimitSpec a = LimitSpec::Gcra(7, absl::Seconds(1), 7);
  const LimitSpec b = LimitSpec::Gcra(13, absl::Seconds(1), 5);
  std::vector<std::unique_ptr<Limiter>> limiters;
  for (int i = 0; i < kLimiters; ++i) limiters.push_back(Make(a));
  std::thread([&] {
    for (int round = 1; round <= 200; ++round) {
      for (std::unique_ptr<Limiter>& l : limiters) {
        ASSERT_TRUE(l->UpdateSpec(round % 2 ? b : a).ok());
        l->TryAcquire("k", 1);
      }
      ASSERT_LE(LiveGenerations() - before,
                kLimiters * (kRetainedGenerations + 1))
          << round;
    }
  }).join();
  // The thread exited: only the windows are left.
  ASSERT_TRUE(limiters[0]->UpdateSpec(a).ok());
  EXPECT_LE(LiveGenerations() - before, kLimiters * kRetainedGenerations);
  limiters.clear();
  EXPECT_EQ(LiveGenerations(), before);
}

// Decides on a Limiter when its thread exits. Constructed before the
// thread's first decision, so it is destroyed after every thread_local
// constructed later (such as a slot's release object would be).
struct DecideAtThreadExit {
  Limiter* limiter = nullptr;
  ~DecideAtThreadExit() {
    if (limiter != nullptr) limiter->TryAcquire("at-exit", 1);
  }
};
thread_local DecideAtThreadExit t_decide_at_exit;

TEST(UpdateSpecTest, ADecisionInAThreadExitDestructorGivesItsSlotBack) {
  const int64_t before = SettledLiveGenerations();
  const LimitSpec a = LimitSpec::Gcra(7, absl::Seconds(1), 7);
  const LimitSpec b = LimitSpec::Gcra(13, absl::Seconds(1), 5);
  auto l = Make(a);
  // Threads whose last decision runs in a thread_local destructor: each
  // announces a generation then, and its exit must still release it, or
  // the generations they named would pile up over the updates below.
  for (int t = 0; t < 50; ++t) {
    ASSERT_TRUE(l->UpdateSpec(t % 2 ? a : b).ok());
    std::thread([&] {
      t_decide_at_exit.limiter = l.get();  // constructed first
      l->TryAcquire("k", 1);               // then the slot is set up
    }).join();
  }
  for (int i = 0; i < kRetainedGenerations + 1; ++i) {
    ASSERT_TRUE(l->UpdateSpec(i % 2 ? a : b).ok());
  }
  // Only the window: no exited thread names an older generation.
  EXPECT_EQ(LiveGenerations() - before, kRetainedGenerations);
  l.reset();
  EXPECT_EQ(LiveGenerations(), before);
}

TEST(UpdateSpecTest, SpecCopiesAreOfTheSpecInForceWhenCalled) {
  // spec() returns a copy: one taken before an update keeps the old spec,
  // and each call after an update sees the new one (also long after it
  // left the retained window of generations).
  auto l = Make(LimitSpec::Gcra(10, absl::Seconds(1)));
  const LimitSpec first = l->spec();
  std::vector<LimitSpec> seen;
  for (int i = 1; i <= 3 * kRetainedGenerations; ++i) {
    ASSERT_TRUE(l->UpdateSpec(LimitSpec::Gcra(10 + i, absl::Seconds(1))).ok());
    seen.push_back(l->spec());
  }
  EXPECT_EQ(first.bands[0].limit, 10);
  for (int i = 0; i < static_cast<int>(seen.size()); ++i) {
    ASSERT_EQ(seen[i].bands.size(), 1u);
    EXPECT_EQ(seen[i].bands[0].algorithm, Algorithm::kGcra);
    EXPECT_EQ(seen[i].bands[0].limit, 11 + i);
    EXPECT_EQ(seen[i].bands[0].period, absl::Seconds(1));
  }
  // Back to the first spec: equal to the first copy.
  ASSERT_TRUE(l->UpdateSpec(LimitSpec::Gcra(10, absl::Seconds(1))).ok());
  const LimitSpec again = l->spec();
  EXPECT_EQ(DescribeSpec(again), DescribeSpec(first));
  EXPECT_EQ(again.bands[0].limit, 10);
  EXPECT_EQ(again.max_borrow, first.max_borrow);
}

// ------------------------------------------------------- concurrency

class UpdateSpecRaceTest : public ::testing::TestWithParam<Shape> {};

// Decisions by handle and by name (and Resolve, Reserve, EvictIdle, spec())
// while another thread updates the spec: under the sanitizers, no
// generation is used after it is freed and nothing races.
TEST_P(UpdateSpecRaceTest, DecisionsRaceWithUpdates) {
  const Shape& shape = GetParam();
  const Rate fast{1000, kSecond, 50}, slow{700, kSecond, 50};
  const int64_t before = SettledLiveGenerations();
  auto l = Make(shape.Of(fast));
  constexpr int kDeciders = 3;
  constexpr int kKeys = 64;
  constexpr int kUpdates = 4000;
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> decisions{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kDeciders; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Limiter::Handle> handles;
      for (int k = t; k < kKeys; k += 4) {
        auto h = l->Resolve(absl::StrCat("k", k));
        ASSERT_TRUE(h.ok()) << h.status();
        handles.push_back(*h);
      }
      int64_t n = 0, ok = 0;
      for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        Decision d;
        if (i % 2 == 0) {
          d = l->TryAcquire(handles[i / 2 % handles.size()], 1);
        } else if (i % 64 == 1 && !shape.composite) {  // buckets only
          const Reservation r = l->Reserve(
              absl::StrCat("k", (i * 7 + t) % kKeys), 1, absl::Milliseconds(1));
          ASSERT_EQ(r.granted, r.decision.allowed);
          d = r.decision;
        } else {
          d = l->TryAcquire(absl::StrCat("k", (i * 7 + t) % kKeys), 1 + i % 2);
        }
        ASSERT_NE(d.source, DecisionSource::kInvalidArgument);
        ASSERT_NE(d.source, DecisionSource::kKeyLimit);
        ok += d.allowed ? 1 : 0;
        // Started once it has decided: the updates race real decisions
        // even when this thread starts late on a loaded machine.
        if (++n == 1) started.fetch_add(1);
        if (i % 256 == 3) {
          const int64_t limit = l->spec().bands[0].limit;
          ASSERT_TRUE(limit == fast.limit || limit == slow.limit) << limit;
        }
      }
      decisions.fetch_add(n);
      admitted.fetch_add(ok);
    });
  }
  threads.emplace_back([&] {
    // Waits for every decider's first decision; bounded for a decider
    // that failed before it (its assertion reports why).
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (started.load() < kDeciders && absl::Now() < deadline) {
      std::this_thread::yield();
    }
    for (int i = 1; i <= kUpdates; ++i) {
      if (!l->UpdateSpec(shape.Of(i % 2 ? slow : fast)).ok()) {
        ADD_FAILURE() << "update " << i;
        break;
      }
      if (i % 64 == 0) l->EvictIdle();
      if (i % 8 == 0) std::this_thread::yield();
    }
    stop.store(true);
  });
  for (std::thread& th : threads) th.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  EXPECT_GT(decisions.load(), 0);
  EXPECT_GT(admitted.load(), 0);
  // Per key at most two bursts (a TAT kept across a rate change can leave
  // the debt short by the rates' ratio) plus the faster rate.
  EXPECT_LE(admitted.load(),
            static_cast<int64_t>(kKeys * (2 * 50 + 1000 * seconds)) + kKeys);
  // The deciding threads have exited (their slots name nothing): the next
  // update frees everything that left the window.
  ASSERT_TRUE(l->UpdateSpec(shape.Of(fast)).ok());
  EXPECT_EQ(LiveGenerations() - before, kRetainedGenerations);
  l.reset();
  EXPECT_EQ(LiveGenerations(), before);
}

INSTANTIATE_TEST_SUITE_P(All, UpdateSpecRaceTest,
                         ::testing::Values(Shape{"gcra", false},
                                           Shape{"gcra_and_window", true}),
                         testing::ParamName());

}  // namespace
}  // namespace tokenlease
