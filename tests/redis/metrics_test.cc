// Metrics (docs/metrics.md) against a real redis-server: known runs of the
// leased and direct modes, with every decision's source and outcome tallied
// by the test and compared exactly with SharedLimitStats::decisions and
// with the Prometheus text (parsed by our strict checker,
// testing/prometheus_check.h); the lease, token, gauge and connection
// counters of those runs; the stats callbacks; counting from many threads.
// Leased limiters run on a ManualClock that stands still unless a test
// moves it: leases never expire and refusals stay cached, so each run's
// sources are fixed by what the test does.
#include "tokenlease/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "testing/prometheus_check.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using testing::kWaitBound;
using testing::ParsePrometheusText;
using testing::PromExposition;
using testing::WaitUntil;

// The decisions a test saw, by source and outcome.
struct Tally {
  DecisionCounts counts;
  Decision Add(const Decision& d) {
    (d.allowed ? counts.admitted : counts.denied)[static_cast<int>(d.source)]++;
    return d;
  }
};

void ExpectSameCounts(const DecisionCounts& got, const DecisionCounts& want) {
  for (int s = 0; s < kDecisionSources; ++s) {
    const char* name = DecisionSourceName(static_cast<DecisionSource>(s));
    EXPECT_EQ(got.admitted[s], want.admitted[s]) << "admitted, " << name;
    EXPECT_EQ(got.denied[s], want.denied[s]) << "denied, " << name;
  }
}

// Every decision cell of `limit` in the text equals `want` (a cell with no
// series must be 0).
void ExpectTextCounts(const PromExposition& p, const std::string& limit,
                      const DecisionCounts& want) {
  for (int s = 0; s < kDecisionSources; ++s) {
    const char* name = DecisionSourceName(static_cast<DecisionSource>(s));
    for (bool admitted : {true, false}) {
      const std::optional<double> v =
          p.Value("tokenlease_decisions_total",
                  {{"limit", limit},
                   {"source", name},
                   {"result", admitted ? "admitted" : "denied"}});
      const uint64_t w = admitted ? want.admitted[s] : want.denied[s];
      EXPECT_EQ(v.value_or(0), static_cast<double>(w))
          << limit << ", " << name << (admitted ? ", admitted" : ", denied");
    }
  }
}

// The value of `name`{limit=`limit`}, or -1.
double Series(const PromExposition& p, const std::string& name,
              const std::string& limit) {
  return p.Value(name, {{"limit", limit}}).value_or(-1);
}

class MetricsTest : public tokenlease::testing::RedisTest {
 protected:
  LeasedLimiterOptions LeasedOptions(const std::string& name) {
    LeasedLimiterOptions o;
    o.connection = NewConnection();
    o.key_prefix = absl::StrCat(prefix(), name, ":");
    o.clock = &clock_;
    return o;
  }
  std::unique_ptr<LeasedLimiter> MakeLeased(const LimitSpec& spec,
                                            const LeasedLimiterOptions& o) {
    auto limiter = LeasedLimiter::Create(spec, o);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }
  DirectLimiterOptions DirectOptions(const std::string& name) {
    DirectLimiterOptions o;
    o.connection = NewConnection();
    o.key_prefix = absl::StrCat(prefix(), name, ":");
    o.timeout = kWaitBound;
    return o;
  }
  std::unique_ptr<DirectLimiter> MakeDirect(const LimitSpec& spec,
                                            const DirectLimiterOptions& o) {
    auto limiter = DirectLimiter::Create(spec, o);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }
  // A list where the key's first band state should be: every call for it
  // fails with WRONGTYPE, so its failure mode decides.
  void BreakKey(const std::string& key_prefix, const std::string& key) {
    client().Run({"RPUSH", absl::StrCat("{", key_prefix, key, "}:b0"), "x"});
  }
  static void Sync(LeasedLimiter& l) {
    const absl::Status s = l.Sync(kWaitBound);
    ASSERT_TRUE(s.ok()) << s;
  }

  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
};

// A run that makes every source of a leased limit in a healthy Redis:
// invalid arguments, local credit, leases, a refusal, the key limit.
TEST_F(MetricsTest, LeasedCountsAKnownRunAndTheTextSaysTheSame) {
  LeasedLimiterOptions o = LeasedOptions("api");
  o.max_keys = 2;
  // 100 an hour, burst 100: A (local credit) = 25, max lease 10; nothing
  // refills during the test.
  auto limiter = MakeLeased(LimitSpec::TokenBucket(100, absl::Hours(1)), o);
  ASSERT_NE(limiter, nullptr);
  Tally t;
  EXPECT_EQ(t.Add(limiter->TryAcquire("a", -1)).source,
            DecisionSource::kInvalidArgument);
  EXPECT_EQ(t.Add(limiter->TryAcquire(std::string(2000, 'k'))).source,
            DecisionSource::kInvalidArgument);
  // A cold key decides from its credit; it asks for a lease only once it
  // spent more than half of it.
  for (int i = 0; i < 10; ++i) {
    const Decision d = t.Add(limiter->TryAcquire("a"));
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.source, DecisionSource::kLocalCredit);
  }
  Sync(*limiter);  // the 10 are charged
  // "b" through a handle until it is denied with Redis's refusal cached:
  // the limit is spent.
  auto b = limiter->Resolve("b");
  ASSERT_TRUE(b.ok()) << b.status();
  bool refused = false;
  int b_admitted = 0;
  for (int round = 0; round < 200 && !refused; ++round) {
    for (int i = 0; i < 10 && !refused; ++i) {
      const Decision d = t.Add(limiter->TryAcquire(*b));
      b_admitted += d.allowed;
      refused = !d.allowed && limiter->Inspect("b")->denied;
      if (refused) {
        EXPECT_EQ(d.source, DecisionSource::kLease);
      }
    }
    Sync(*limiter);
  }
  ASSERT_TRUE(refused);
  // max_keys is 2: a third key is denied.
  EXPECT_EQ(t.Add(limiter->TryAcquire("c")).source, DecisionSource::kKeyLimit);
  Sync(*limiter);

  const SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.mode, LimiterMode::kLeased);
  ExpectSameCounts(s.decisions, t.counts);
  // A healthy Redis: no errors.
  EXPECT_EQ(s.redis_errors, 0u);
  EXPECT_EQ(s.key_errors, 0u);
  // The key's limit held, within the accuracy bound of one instance: 100,
  // plus A = 25 admitted from credit before Redis counted them.
  EXPECT_GE(b_admitted, 100);
  EXPECT_LE(b_admitted, 125);
  EXPECT_GE(t.counts.Admitted(DecisionSource::kLease), 1u);
  EXPECT_EQ(s.decisions_per_call,
            static_cast<double>(s.decisions.Total()) / s.redis_calls);
  EXPECT_GE(s.lease.leases_granted, 1u);
  EXPECT_LE(s.lease.leases_granted, s.lease.lease_requests);
  EXPECT_GE(s.lease.denied_by_redis, 1u);
  EXPECT_EQ(s.lease.leases_expired, 0u);  // the clock stood still
  EXPECT_GE(s.lease.tokens_charged, 10u);
  // Gauges: the balances Inspect sees, and "b" near (at) its limit.
  const int64_t held = std::max<int64_t>(0, limiter->Inspect("a")->balance) +
                       std::max<int64_t>(0, limiter->Inspect("b")->balance);
  EXPECT_EQ(s.lease.held_tokens, held);
  EXPECT_EQ(
      s.lease.overshoot_tokens,
      s.lease.held_tokens + s.lease.credit_tokens + s.lease.uncharged_tokens);
  EXPECT_EQ(s.lease.uncharged_tokens, 0);  // Sync charged everything
  EXPECT_EQ(s.lease.near_limit_keys, 1u);
  EXPECT_EQ(s.keys, 2u);
  // The connection: healthy, and one round trip per reply.
  EXPECT_EQ(s.redis.health, RedisHealth::kHealthy);
  EXPECT_GE(s.redis.healthy, 1u);
  EXPECT_EQ(s.redis.round_trip.Count(), s.redis.replies + s.redis.late_replies);
  EXPECT_GT(s.redis.round_trip.sum_nanos, 0u);

  PrometheusWriter w;
  ASSERT_TRUE(w.Add("api", s).ok());
  const std::string text = w.Text();
  absl::StatusOr<PromExposition> p = ParsePrometheusText(text);
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;
  ExpectTextCounts(*p, "api", t.counts);
  const std::string api = "api";
  EXPECT_EQ(Series(*p, "tokenlease_lease_requests_total", api),
            s.lease.lease_requests);
  EXPECT_EQ(Series(*p, "tokenlease_leases_granted_total", api),
            s.lease.leases_granted);
  EXPECT_EQ(Series(*p, "tokenlease_tokens_granted_total", api),
            s.lease.tokens_granted);
  EXPECT_EQ(Series(*p, "tokenlease_lease_refusals_total", api),
            s.lease.denied_by_redis);
  EXPECT_EQ(Series(*p, "tokenlease_charges_total", api), s.lease.charges);
  EXPECT_EQ(Series(*p, "tokenlease_tokens_charged_total", api),
            s.lease.tokens_charged);
  EXPECT_EQ(Series(*p, "tokenlease_redis_calls_total", api), s.redis_calls);
  EXPECT_EQ(Series(*p, "tokenlease_redis_errors_total", api), 0);
  EXPECT_EQ(Series(*p, "tokenlease_redis_key_errors_total", api), 0);
  EXPECT_EQ(Series(*p, "tokenlease_decisions_per_redis_call", api),
            s.decisions_per_call);
  EXPECT_EQ(Series(*p, "tokenlease_keys", api), 2);
  EXPECT_EQ(Series(*p, "tokenlease_near_limit_keys", api), 1);
  EXPECT_EQ(Series(*p, "tokenlease_held_tokens", api), held);
  EXPECT_EQ(Series(*p, "tokenlease_overshoot_tokens", api),
            s.lease.overshoot_tokens);
  EXPECT_EQ(Series(*p, "tokenlease_redis_commands_total", api),
            s.redis.commands_sent);
  EXPECT_EQ(Series(*p, "tokenlease_redis_round_trip_seconds_count", api),
            s.redis.replies + s.redis.late_replies);
  EXPECT_EQ(p->Value("tokenlease_redis_health",
                     {{"limit", api}, {"state", "healthy"}}),
            1);
  EXPECT_EQ(p->Value("tokenlease_redis_health_transitions_total",
                     {{"limit", api}, {"to", "healthy"}}),
            s.redis.healthy);
}

// The failure modes and shadow mode, each on its own limit: a key whose
// Redis state is a list (WRONGTYPE) leaves the mode to decide.
TEST_F(MetricsTest, LeasedFailureModesAndShadowAreCountedBySource) {
  const LimitSpec spec = LimitSpec::TokenBucket(3, absl::Hours(1));
  struct Run {
    std::string name;
    FailureMode mode;
    std::unique_ptr<LeasedLimiter> limiter;
    Tally tally;
  };
  std::vector<Run> runs;
  for (auto [name, mode] : {std::pair{"open", FailureMode::kFailOpen},
                            std::pair{"local", FailureMode::kFailLocal},
                            std::pair{"closed", FailureMode::kFailClosed}}) {
    LeasedLimiterOptions o = LeasedOptions(name);
    o.failure_mode = mode;
    o.lease.cold_key_policy = ColdKeyPolicy::kDeny;
    BreakKey(o.key_prefix, "w");
    runs.push_back(Run{name, mode, MakeLeased(spec, o), {}});
    ASSERT_NE(runs.back().limiter, nullptr);
  }
  for (Run& r : runs) {
    // The cold key's first decision asks for the lease that fails.
    const Decision first = r.tally.Add(r.limiter->TryAcquire("w"));
    EXPECT_EQ(first.source, DecisionSource::kLease);
    Sync(*r.limiter);
    for (int i = 0; i < 5; ++i) r.tally.Add(r.limiter->TryAcquire("w"));
  }
  const DecisionCounts& open = runs[0].tally.counts;
  EXPECT_EQ(open.Admitted(DecisionSource::kFailOpen), 5u);
  const DecisionCounts& local = runs[1].tally.counts;
  EXPECT_EQ(local.Admitted(DecisionSource::kFallback), 3u);  // the share
  EXPECT_EQ(local.Denied(DecisionSource::kFallback), 2u);
  // fail_closed: the first decision was the lease's (it asked for the
  // lease that failed), the others fail_closed's.
  const DecisionCounts& closed = runs[2].tally.counts;
  EXPECT_EQ(closed.Denied(DecisionSource::kLease), 1u);
  EXPECT_EQ(closed.Denied(DecisionSource::kFailClosed), 5u);

  // Shadow mode: admits what it would deny, on a healthy key.
  LeasedLimiterOptions so = LeasedOptions("shadow");
  so.shadow = true;
  so.lease.cold_key_policy = ColdKeyPolicy::kDeny;
  auto shadow = MakeLeased(spec, so);
  ASSERT_NE(shadow, nullptr);
  Tally st;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(st.Add(shadow->TryAcquire("s")).allowed);
    }
    Sync(*shadow);
    if (shadow->Inspect("s")->denied) break;
  }
  EXPECT_GE(st.counts.Admitted(DecisionSource::kShadow), 1u);
  EXPECT_EQ(st.counts.TotalDenied(), 0u);
  EXPECT_LE(st.counts.Admitted(DecisionSource::kLease), 3u);

  PrometheusWriter w;
  for (Run& r : runs) {
    const SharedLimitStats s = r.limiter->stats();
    ExpectSameCounts(s.decisions, r.tally.counts);
    EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFailOpen),
              r.mode == FailureMode::kFailOpen ? 5u : 0u);
    EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFallback),
              r.mode == FailureMode::kFailLocal ? 3u : 0u);
    EXPECT_EQ(s.decisions.Denied(DecisionSource::kFallback),
              r.mode == FailureMode::kFailLocal ? 2u : 0u);
    EXPECT_EQ(s.decisions.Denied(DecisionSource::kFailClosed),
              r.mode == FailureMode::kFailClosed ? 5u : 0u);
    EXPECT_GE(s.redis_errors, 1u);
    // WRONGTYPE: errors for the key, counted in leased mode too.
    EXPECT_GE(s.key_errors, 1u);
    EXPECT_LE(s.key_errors, s.redis_errors);
    ASSERT_TRUE(w.Add(r.name, s).ok());
  }
  const SharedLimitStats ss = shadow->stats();
  ExpectSameCounts(ss.decisions, st.counts);
  EXPECT_EQ(ss.decisions.Admitted(DecisionSource::kShadow),
            st.counts.Admitted(DecisionSource::kShadow));
  EXPECT_EQ(ss.redis_errors, 0u);
  ASSERT_TRUE(w.Add("shadow", ss).ok());

  const std::string text = w.Text();
  absl::StatusOr<PromExposition> p = ParsePrometheusText(text);
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;
  for (Run& r : runs) ExpectTextCounts(*p, r.name, r.tally.counts);
  ExpectTextCounts(*p, "shadow", st.counts);
  // fail_closed's denials and shadow mode's admissions are decision series
  // (they had families of their own before).
  EXPECT_EQ(p->Value("tokenlease_decisions_total", {{"limit", "closed"},
                                                    {"source", "fail_closed"},
                                                    {"result", "denied"}}),
            5);
  EXPECT_EQ(p->Value("tokenlease_decisions_total", {{"limit", "shadow"},
                                                    {"source", "shadow"},
                                                    {"result", "admitted"}}),
            ss.decisions.Admitted(DecisionSource::kShadow));
  EXPECT_EQ(p->Family("tokenlease_fail_closed_denials_total"), nullptr);
  EXPECT_EQ(p->Family("tokenlease_shadow_denials_total"), nullptr);
  EXPECT_EQ(p->Family("tokenlease_redis_call_errors_total"), nullptr);
  for (Run& r : runs) {
    const SharedLimitStats s = r.limiter->stats();
    EXPECT_GE(Series(*p, "tokenlease_redis_errors_total", r.name), 1) << r.name;
    EXPECT_GE(Series(*p, "tokenlease_redis_key_errors_total", r.name), 1)
        << r.name;
    EXPECT_LE(Series(*p, "tokenlease_redis_key_errors_total", r.name),
              Series(*p, "tokenlease_redis_errors_total", r.name))
        << r.name;
    // Counters only grow: the snapshot written is at most the one now.
    EXPECT_LE(Series(*p, "tokenlease_redis_errors_total", r.name),
              s.redis_errors)
        << r.name;
  }
  EXPECT_EQ(Series(*p, "tokenlease_redis_errors_total", "shadow"), 0);
}

// Direct mode: Redis's decisions, the failure modes' (a WRONGTYPE key;
// fail_closed also by default), and shadow mode's.
TEST_F(MetricsTest, DirectCountsAKnownRunAndTheTextSaysTheSame) {
  const LimitSpec spec = LimitSpec::TokenBucket(3, absl::Hours(1));
  auto exact = MakeDirect(spec, DirectOptions("exact"));
  ASSERT_NE(exact, nullptr);
  Tally te;
  for (int i = 0; i < 5; ++i) te.Add(exact->TryAcquire("k"));
  EXPECT_EQ(te.counts.Admitted(DecisionSource::kDirect), 3u);
  EXPECT_EQ(te.counts.Denied(DecisionSource::kDirect), 2u);
  // An error is decided by the failure mode (kFailClosed by default), and
  // counted as an error for the key as well.
  BreakKey(DirectOptions("exact").key_prefix, "broken");
  EXPECT_EQ(te.Add(exact->TryAcquire("broken")).source,
            DecisionSource::kFailClosed);

  struct Run {
    std::string name;
    FailureMode mode;
    std::unique_ptr<DirectLimiter> limiter;
    Tally tally;
  };
  std::vector<Run> runs;
  for (auto [name, mode] : {std::pair{"d-open", FailureMode::kFailOpen},
                            std::pair{"d-local", FailureMode::kFailLocal},
                            std::pair{"d-closed", FailureMode::kFailClosed}}) {
    DirectLimiterOptions o = DirectOptions(name);
    o.failure_mode = mode;
    BreakKey(o.key_prefix, "w");
    runs.push_back(Run{name, mode, MakeDirect(spec, o), {}});
    ASSERT_NE(runs.back().limiter, nullptr);
    for (int i = 0; i < 5; ++i) {
      runs.back().tally.Add(runs.back().limiter->TryAcquire("w"));
    }
  }
  EXPECT_EQ(runs[0].tally.counts.Admitted(DecisionSource::kFailOpen), 5u);
  EXPECT_EQ(runs[1].tally.counts.Admitted(DecisionSource::kFallback), 3u);
  EXPECT_EQ(runs[1].tally.counts.Denied(DecisionSource::kFallback), 2u);
  EXPECT_EQ(runs[2].tally.counts.Denied(DecisionSource::kFailClosed), 5u);
  EXPECT_EQ(runs[2].tally.counts.Denied(DecisionSource::kDirect), 0u);

  // Shadow mode: Redis's denials admitted (and charged nowhere).
  DirectLimiterOptions so = DirectOptions("d-shadow");
  so.shadow = true;
  auto shadow = MakeDirect(spec, so);
  ASSERT_NE(shadow, nullptr);
  Tally ts;
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(ts.Add(shadow->TryAcquire("k")).allowed) << i;
  }
  EXPECT_EQ(ts.counts.Admitted(DecisionSource::kDirect), 3u);
  EXPECT_EQ(ts.counts.Admitted(DecisionSource::kShadow), 2u);

  PrometheusWriter w;
  const SharedLimitStats se = exact->stats();
  EXPECT_EQ(se.mode, LimiterMode::kDirect);
  ExpectSameCounts(se.decisions, te.counts);
  EXPECT_EQ(se.decisions.Denied(DecisionSource::kFailClosed), 1u);
  EXPECT_EQ(se.redis_calls, 6u);
  EXPECT_EQ(se.redis_errors, 1u);
  EXPECT_EQ(se.key_errors, 1u);
  EXPECT_EQ(se.decisions_per_call, 6.0 / 6.0);
  EXPECT_EQ(se.redis.round_trip.Count(),
            se.redis.replies + se.redis.late_replies);
  ASSERT_TRUE(w.Add("exact", se).ok());
  for (Run& r : runs) {
    const SharedLimitStats s = r.limiter->stats();
    ExpectSameCounts(s.decisions, r.tally.counts);
    EXPECT_EQ(s.redis_calls, 5u);
    EXPECT_EQ(s.redis_errors, 5u);
    EXPECT_EQ(s.key_errors, 5u);
    EXPECT_EQ(s.decisions.Denied(DecisionSource::kFailClosed),
              r.mode == FailureMode::kFailClosed ? 5u : 0u);
    ASSERT_TRUE(w.Add(r.name, s).ok());
  }
  const SharedLimitStats sh = shadow->stats();
  ExpectSameCounts(sh.decisions, ts.counts);
  EXPECT_EQ(sh.redis_calls, 5u);
  EXPECT_EQ(sh.redis_errors, 0u);
  ASSERT_TRUE(w.Add("d-shadow", sh).ok());
  const std::string text = w.Text();
  absl::StatusOr<PromExposition> p = ParsePrometheusText(text);
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;
  ExpectTextCounts(*p, "exact", te.counts);
  for (Run& r : runs) ExpectTextCounts(*p, r.name, r.tally.counts);
  ExpectTextCounts(*p, "d-shadow", ts.counts);
  EXPECT_EQ(Series(*p, "tokenlease_redis_calls_total", "exact"), 6);
  EXPECT_EQ(Series(*p, "tokenlease_redis_errors_total", "exact"), 1);
  EXPECT_EQ(Series(*p, "tokenlease_redis_key_errors_total", "exact"), 1);
  EXPECT_EQ(Series(*p, "tokenlease_redis_key_errors_total", "d-open"), 5);
  EXPECT_EQ(Series(*p, "tokenlease_redis_errors_total", "d-shadow"), 0);
  EXPECT_EQ(p->Value("tokenlease_decisions_total", {{"limit", "d-closed"},
                                                    {"source", "fail_closed"},
                                                    {"result", "denied"}}),
            5);
  EXPECT_EQ(p->Family("tokenlease_fail_closed_denials_total"), nullptr);
  EXPECT_EQ(p->Family("tokenlease_redis_call_errors_total"), nullptr);
  EXPECT_EQ(Series(*p, "tokenlease_redis_round_trip_seconds_count", "exact"),
            se.redis.replies + se.redis.late_replies);
}

// The leased callback runs on the reconciler's steps, by the limiter's
// clock; the direct one on the client thread, by the steady clock.
TEST_F(MetricsTest, StatsCallbacksRunEveryInterval) {
  std::mutex mu;
  std::vector<SharedLimitStats> leased_calls;
  LeasedLimiterOptions o = LeasedOptions("cb");
  o.stats_interval = absl::Milliseconds(100);
  o.stats_callback = [&](const SharedLimitStats& s) {
    std::lock_guard<std::mutex> lock(mu);
    leased_calls.push_back(s);
  };
  auto leased = MakeLeased(LimitSpec::TokenBucket(100, absl::Hours(1)), o);
  ASSERT_NE(leased, nullptr);
  for (int i = 0; i < 3; ++i) leased->TryAcquire("k");
  Sync(*leased);  // steps ran; the clock has not moved
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(leased_calls.empty());
  }
  clock_.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !leased_calls.empty();
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(leased_calls.front().mode, LimiterMode::kLeased);
    EXPECT_EQ(leased_calls.front().decisions.Total(), 3u);
  }
  // The next one waits for the next interval.
  Sync(*leased);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(leased_calls.size(), 1u);
  }
  clock_.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return leased_calls.size() == 2;
  }));

  std::atomic<int> direct_calls{0};
  std::atomic<uint64_t> last_total{0};
  std::atomic<bool> direct_mode{true};
  DirectLimiterOptions d = DirectOptions("dcb");
  d.stats_interval = absl::Milliseconds(5);
  d.stats_callback = [&](const SharedLimitStats& s) {
    // relaxed: the test reads them after WaitUntil's own synchronisation.
    last_total.store(s.decisions.Total(), std::memory_order_relaxed);
    if (s.mode != LimiterMode::kDirect) {
      direct_mode.store(false, std::memory_order_relaxed);
    }
    direct_calls.fetch_add(1, std::memory_order_relaxed);
  };
  auto direct = MakeDirect(LimitSpec::TokenBucket(100, absl::Hours(1)), d);
  ASSERT_NE(direct, nullptr);
  ASSERT_EQ(direct->TryAcquire("k").source, DecisionSource::kDirect);
  ASSERT_EQ(direct->TryAcquire("k").source, DecisionSource::kDirect);
  const int before = direct_calls.load(std::memory_order_relaxed);
  ASSERT_TRUE(WaitUntil([&] {
    return direct_calls.load(std::memory_order_relaxed) >= before + 2;
  }));
  EXPECT_EQ(last_total.load(std::memory_order_relaxed), 2u);
  EXPECT_TRUE(direct_mode.load(std::memory_order_relaxed));
  direct.reset();  // stops the timer: no call after this
  const int after = direct_calls.load(std::memory_order_relaxed);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(direct_calls.load(std::memory_order_relaxed), after);
}

TEST_F(MetricsTest, OptionsAreValidated) {
  LeasedLimiterOptions o;
  o.near_limit_fraction = 0;
  EXPECT_THAT(o.Validate().message(), HasSubstr("near_limit_fraction"));
  o.near_limit_fraction = 1.5;
  EXPECT_THAT(o.Validate().message(), HasSubstr("near_limit_fraction"));
  o.near_limit_fraction = 1;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.stats_interval = absl::ZeroDuration();
  EXPECT_THAT(o.Validate().message(), HasSubstr("stats_interval"));
  DirectLimiterOptions d;
  d.stats_interval = absl::Hours(2);
  EXPECT_THAT(d.Validate().message(), HasSubstr("stats_interval"));
}

// Threads that decide through their own handles and by name, while another
// reads stats(); a second wave of threads takes the first's counter arrays
// over. Every decision is counted once.
TEST_F(MetricsTest, CountsDecisionsOfManyThreadsExactly) {
  LeasedLimiterOptions o = LeasedOptions("threads");
  auto limiter =
      MakeLeased(LimitSpec::TokenBucket(1'000'000'000, absl::Seconds(1)), o);
  ASSERT_NE(limiter, nullptr);
  auto handle = limiter->Resolve("hot");
  ASSERT_TRUE(handle.ok());
  constexpr int kThreads = 3;
  constexpr int kPerThread = 4000;
  std::mutex mu;
  Tally total;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      const uint64_t n = limiter->stats().decisions.Total();
      EXPECT_GE(n, last);
      last = n;
    }
  });
  for (int wave = 0; wave < 2; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        LeasedLimiter::Handle mine = *handle;  // each thread its own copy
        Tally local;
        for (int i = 0; i < kPerThread; ++i) {
          local.Add(i % 3 == 0
                        ? limiter->TryAcquire(absl::StrCat("k", t, ":", i % 50))
                        : limiter->TryAcquire(mine));
        }
        std::lock_guard<std::mutex> lock(mu);
        for (int s = 0; s < kDecisionSources; ++s) {
          total.counts.admitted[s] += local.counts.admitted[s];
          total.counts.denied[s] += local.counts.denied[s];
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  done.store(true, std::memory_order_release);
  reader.join();
  const SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.decisions.Total(), 2u * kThreads * kPerThread);
  ExpectSameCounts(s.decisions, total.counts);
}

// A limiter's counts are its own: one made after another was destroyed
// (which may reuse its counter cells) starts at zero.
TEST_F(MetricsTest, ANewLimiterStartsFromZero) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Hours(1));
  {
    auto first = MakeLeased(spec, LeasedOptions("first"));
    ASSERT_NE(first, nullptr);
    for (int i = 0; i < 5; ++i) first->TryAcquire("k");
    EXPECT_EQ(first->stats().decisions.Total(), 5u);
  }
  auto second = MakeLeased(spec, LeasedOptions("second"));
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->stats().decisions.Total(), 0u);
  second->TryAcquire("k");
  EXPECT_EQ(second->stats().decisions.Total(), 1u);
}

}  // namespace
}  // namespace tokenlease
