// The contract every mode keeps (docs/design.md, "The contract"), checked
// where it needs no Redis: the options' shared fields and defaults, the
// decision type of every TryAcquire, validation errors naming the struct the
// user filled, and in the local Limiter the parts that are new to it (stats,
// shadow mode, Reserve's denial of bad input, its Prometheus series, the
// guard). The Redis modes' side is tests/redis/contract_redis_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <concepts>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;

// --- The same fields, types and defaults in every mode ---------------------

static_assert(std::is_base_of_v<LimiterOptions, SharedLimitOptions>);
static_assert(std::is_base_of_v<SharedLimitOptions, DirectLimiterOptions>);
static_assert(std::is_base_of_v<SharedLimitOptions, LeasedLimiterOptions>);
static_assert(std::is_base_of_v<LimiterStats, SharedLimitStats>);

template <typename L>
using ByName = decltype(std::declval<L&>().TryAcquire(std::string_view()));
static_assert(std::same_as<ByName<Limiter>, Decision>);
static_assert(std::same_as<ByName<DirectLimiter>, Decision>);
static_assert(std::same_as<ByName<LeasedLimiter>, Decision>);
static_assert(DecidesByName<Limiter> && DecidesByName<DirectLimiter> &&
              DecidesByName<LeasedLimiter>);
static_assert(std::same_as<decltype(std::declval<Limiter&>().Reserve(
                               "", 1, absl::ZeroDuration())),
                           Reservation>);
static_assert(std::same_as<decltype(std::declval<DirectLimiter&>().Reserve(
                               "", 1, absl::ZeroDuration())),
                           Reservation>);
static_assert(
    std::same_as<decltype(std::declval<Limiter&>().stats()), LimiterStats>);
static_assert(std::same_as<decltype(std::declval<DirectLimiter&>().stats()),
                           SharedLimitStats>);
static_assert(std::same_as<decltype(std::declval<LeasedLimiter&>().stats()),
                           SharedLimitStats>);

TEST(ContractTest, EveryModeHasTheSameDefaults) {
  const LimiterOptions local;
  const DirectLimiterOptions direct;
  const LeasedLimiterOptions leased;
  for (const LimiterOptions* o :
       {static_cast<const LimiterOptions*>(&direct),
        static_cast<const LimiterOptions*>(&leased)}) {
    EXPECT_EQ(o->max_keys, local.max_keys);
    EXPECT_EQ(o->shards, local.shards);
    EXPECT_EQ(o->max_key_bytes, local.max_key_bytes);
    EXPECT_EQ(o->shadow, local.shadow);
    EXPECT_EQ(o->clock, local.clock);
  }
  EXPECT_EQ(direct.failure_mode, FailureMode::kFailClosed);
  EXPECT_EQ(leased.failure_mode, FailureMode::kFailClosed);
  EXPECT_EQ(direct.key_prefix, leased.key_prefix);
  EXPECT_EQ(direct.fallback_instances, leased.fallback_instances);
  EXPECT_EQ(direct.announce_ttl, leased.announce_ttl);
  EXPECT_EQ(direct.outage_usage, leased.outage_usage);
  EXPECT_EQ(direct.start_empty, leased.start_empty);
  EXPECT_EQ(direct.stats_interval, leased.stats_interval);
}

TEST(ContractTest, ValidationNamesTheStructTheUserFilled) {
  LimiterOptions local;
  local.max_keys = 0;
  EXPECT_THAT(local.Validate().message(), HasSubstr("LimiterOptions.max_keys"));
  DirectLimiterOptions direct;
  direct.max_keys = 0;
  EXPECT_THAT(direct.Validate().message(),
              HasSubstr("DirectLimiterOptions.max_keys is 0"));
  LeasedLimiterOptions leased;
  leased.key_prefix = "{bad";
  EXPECT_THAT(leased.Validate().message(),
              HasSubstr("LeasedLimiterOptions.key_prefix"));
  leased.key_prefix = "ok:";
  leased.fallback_instances = 0;
  EXPECT_THAT(leased.Validate().message(),
              HasSubstr("LeasedLimiterOptions.fallback_instances is 0"));
  SharedLimitOptions shared;
  shared.announce_ttl = absl::Milliseconds(1);
  EXPECT_THAT(shared.Validate().message(),
              HasSubstr("SharedLimitOptions.announce_ttl"));
}

// Direct mode refuses what it cannot do, before connecting: kCharge keeps
// outage usage, which a direct limiter does not hold.
TEST(ContractTest, DirectModeRefusesOutageCharges) {
  DirectLimiterOptions o;
  o.outage_usage = OutageUsage::kCharge;
  auto limiter =
      DirectLimiter::Create(LimitSpec::TokenBucket(10, absl::Seconds(1)), o);
  ASSERT_FALSE(limiter.ok());
  EXPECT_EQ(limiter.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(limiter.status().message(),
              HasSubstr("DirectLimiterOptions.outage_usage is kCharge"));
}

// --- The local Limiter's part of the contract --------------------------------

std::unique_ptr<Limiter> MakeLocal(LimitSpec spec, LimiterOptions o = {}) {
  auto limiter = Limiter::Create(std::move(spec), o);
  EXPECT_TRUE(limiter.ok()) << limiter.status();
  return limiter.ok() ? *std::move(limiter) : nullptr;
}

TEST(ContractTest, LocalStatsCountEveryDecisionBySource) {
  ManualClock clock;
  auto limiter =
      MakeLocal(LimitSpec::TokenBucket(5, absl::Seconds(1)), {.clock = &clock});
  ASSERT_NE(limiter, nullptr);
  constexpr int kThreads = 4;
  constexpr int kEach = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        limiter->TryAcquire(absl::StrCat("k", t));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  limiter->TryAcquire("k0", -1);  // bad input is counted too
  const LimiterStats s = limiter->stats();
  EXPECT_EQ(s.mode, LimiterMode::kLocal);
  EXPECT_EQ(s.keys, uint64_t{kThreads});
  // The clock stands still: each key admits its burst, then denies.
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kLocal),
            uint64_t{5 * kThreads});
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kLocal),
            uint64_t{(kEach - 5) * kThreads});
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kInvalidArgument), 1u);
  EXPECT_EQ(s.decisions.Total(), uint64_t{kThreads * kEach + 1});
}

TEST(ContractTest, LocalShadowModeAdmitsDenialsAndCountsThem) {
  ManualClock clock;
  auto limiter = MakeLocal(LimitSpec::TokenBucket(2, absl::Seconds(1)),
                           {.clock = &clock, .shadow = true});
  ASSERT_NE(limiter, nullptr);
  for (int i = 0; i < 2; ++i) {
    const Decision d = limiter->TryAcquire("k");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.source, DecisionSource::kLocal);
  }
  const Decision shadowed = limiter->TryAcquire("k");
  EXPECT_TRUE(shadowed.allowed);
  EXPECT_EQ(shadowed.source, DecisionSource::kShadow);
  EXPECT_EQ(shadowed.retry_after_ns, 0);
  // Nothing was charged by the shadowed request: the bucket is still empty
  // (cost 0 reports it), and a handle sees the same.
  EXPECT_EQ(limiter->TryAcquire("k", 0).remaining, 0);
  auto h = limiter->Resolve("k");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(limiter->TryAcquire(*h).source, DecisionSource::kShadow);
  // Bad input is still denied.
  const Decision bad = limiter->TryAcquire("k", -1);
  EXPECT_FALSE(bad.allowed);
  EXPECT_EQ(bad.source, DecisionSource::kInvalidArgument);
  // A shadowed reservation is a grant without a wait.
  const Reservation r = limiter->Reserve("k", 1, absl::Seconds(10));
  EXPECT_TRUE(r.granted);
  EXPECT_EQ(r.decision.source, DecisionSource::kShadow);
  EXPECT_EQ(r.wait_ns, 0);
  const LimiterStats s = limiter->stats();
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kShadow), 3u);
  // The two requests the bucket held, and the cost-0 look (admitted).
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kLocal), 3u);
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kInvalidArgument), 1u);
}

TEST(ContractTest, LocalReserveDeniesBadInputAsADecision) {
  auto window = MakeLocal(LimitSpec::FixedWindow(5, absl::Seconds(1)));
  ASSERT_NE(window, nullptr);
  const Reservation cannot_borrow = window->Reserve("k", 1, absl::Seconds(1));
  EXPECT_FALSE(cannot_borrow.granted);
  EXPECT_EQ(cannot_borrow.decision.source, DecisionSource::kInvalidArgument);
  EXPECT_EQ(cannot_borrow.decision.retry_after_ns, kNever);
  auto bucket = MakeLocal(LimitSpec::TokenBucket(5, absl::Seconds(1)));
  ASSERT_NE(bucket, nullptr);
  EXPECT_EQ(bucket->Reserve("k", -1, absl::Seconds(1)).decision.source,
            DecisionSource::kInvalidArgument);
  EXPECT_EQ(bucket->Reserve("k", 1, absl::Seconds(-1)).decision.source,
            DecisionSource::kInvalidArgument);
  EXPECT_EQ(bucket->Reserve(std::string(2000, 'k'), 1, absl::Seconds(1))
                .decision.source,
            DecisionSource::kInvalidArgument);
  // Nothing was charged and no key was stored by the refusals.
  EXPECT_EQ(bucket->key_count(), 0);
  EXPECT_TRUE(bucket->Reserve("k", 1, absl::Seconds(1)).granted);
}

TEST(ContractTest, LocalSpecIsACopyOfTheSpecInForce) {
  auto limiter = MakeLocal(LimitSpec::TokenBucket(5, absl::Seconds(1)));
  ASSERT_NE(limiter, nullptr);
  const LimitSpec before = limiter->spec();
  ASSERT_TRUE(
      limiter->UpdateSpec(LimitSpec::TokenBucket(7, absl::Seconds(1))).ok());
  EXPECT_EQ(before.bands[0].limit, 5);  // the copy did not change
  EXPECT_EQ(limiter->spec().bands[0].limit, 7);
}

TEST(ContractTest, LocalLimitersExportTheirSeries) {
  ManualClock clock;
  auto limiter =
      MakeLocal(LimitSpec::TokenBucket(1, absl::Seconds(1)), {.clock = &clock});
  ASSERT_NE(limiter, nullptr);
  limiter->TryAcquire("a");
  limiter->TryAcquire("a");
  PrometheusWriter w;
  ASSERT_TRUE(w.Add("local", limiter->stats()).ok());
  EXPECT_EQ(w.Add("local", limiter->stats()).code(),
            absl::StatusCode::kAlreadyExists);
  const std::string text = w.Text();
  EXPECT_THAT(text, HasSubstr("tokenlease_decisions_total{limit=\"local\","
                              "source=\"local\",result=\"admitted\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tokenlease_decisions_total{limit=\"local\","
                              "source=\"local\",result=\"denied\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tokenlease_keys{limit=\"local\"} 1\n"));
  // Series of the Redis modes are not written for a local limiter.
  EXPECT_FALSE(absl::StrContains(text, "source=\"lease\""));
  EXPECT_FALSE(absl::StrContains(text, "tokenlease_redis_"));
}

// --- The guard, for any mode ------------------------------------------------

// A limiter of no mode of ours that decides by name: the guard takes it.
struct ScriptedLimiter {
  Decision next;
  Decision TryAcquire(std::string_view, int64_t) { return next; }
};

TEST(ContractTest, TheGuardMapsEverySourceToAStatusThatSaysWhatToDo) {
  ScriptedLimiter l;
  int calls = 0;
  auto run = [&] { return RateLimited(l, "user:1", [&] { ++calls; }); };
  l.next.allowed = true;
  EXPECT_TRUE(run().ok());
  EXPECT_EQ(calls, 1);

  l.next = Decision{};
  l.next.source = DecisionSource::kFailClosed;
  l.next.retry_after_ns = 250'000'000;
  absl::Status s = run();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("'user:1'"));
  EXPECT_THAT(s.message(), HasSubstr("retry after 250ms"));

  l.next.source = DecisionSource::kInvalidArgument;
  EXPECT_EQ(run().code(), absl::StatusCode::kInvalidArgument);
  l.next.source = DecisionSource::kKeyLimit;
  s = run();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("max_keys"));
  l.next.source = DecisionSource::kDirect;
  l.next.retry_after_ns = kNever;
  EXPECT_THAT(run().message(), HasSubstr("can ever admit"));
  EXPECT_EQ(calls, 1);  // fn ran only when admitted
}

}  // namespace
}  // namespace tokenlease
