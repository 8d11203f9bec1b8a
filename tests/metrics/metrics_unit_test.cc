// Metrics without a Redis server: the latency histogram's buckets, the
// strict Prometheus text checker (testing/prometheus_check.h) on texts that
// break each rule, the PrometheusWriter's output under that checker, and
// the per-thread decision counters (src/core/decision_counts.h) under
// threads that count, exit, and hand their arrays on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/decision_counts.h"
#include "testing/prometheus_check.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"
#include "tokenlease/metrics.h"
#include "tokenlease/shared_limit.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using testing::ParsePrometheusText;
using testing::PromExposition;

TEST(LatencyHistogramTest, BucketsAreLogSpacedFromTenMicroseconds) {
  using H = LatencyHistogram;
  EXPECT_EQ(H::BucketOf(-5), 0);
  EXPECT_EQ(H::BucketOf(0), 0);
  EXPECT_EQ(H::BucketOf(10'000), 0);
  EXPECT_EQ(H::BucketOf(10'001), 1);
  EXPECT_EQ(H::BucketOf(20'000), 1);
  EXPECT_EQ(H::BucketOf(20'001), 2);
  EXPECT_EQ(H::BucketOf(40'000), 2);
  for (int i = 1; i < H::kBuckets; ++i) {
    EXPECT_EQ(H::BucketOf(H::BoundNanos(i)), i) << i;
    EXPECT_EQ(H::BucketOf(H::BoundNanos(i - 1) + 1), i) << i;
  }
  EXPECT_EQ(H::BoundNanos(H::kBuckets - 1), 10'485'760'000);
  EXPECT_EQ(H::BucketOf(H::BoundNanos(H::kBuckets - 1) + 1), H::kBuckets);
  EXPECT_EQ(H::BucketOf(INT64_MAX), H::kBuckets);
}

TEST(LatencyHistogramTest, QuantileBoundIsTheBucketOfTheRank) {
  LatencyHistogram h;
  EXPECT_EQ(h.QuantileBound(0.5), absl::ZeroDuration());
  h.buckets[3] = 98;  // <= 80 us
  h.buckets[6] = 1;   // <= 640 us
  h.buckets[LatencyHistogram::kBuckets] = 1;
  EXPECT_EQ(h.QuantileBound(0.5), absl::Microseconds(80));
  EXPECT_EQ(h.QuantileBound(0.98), absl::Microseconds(80));
  EXPECT_EQ(h.QuantileBound(0.99), absl::Microseconds(640));
  EXPECT_EQ(h.QuantileBound(1.0), absl::InfiniteDuration());
}

// --- The checker
// ---------------------------------------------------------------

constexpr char kGood[] =
    "# HELP a_total A counter.\n"
    "# TYPE a_total counter\n"
    "a_total{limit=\"x\",source=\"lease\"} 3\n"
    "a_total{limit=\"y\\\"\\\\\\n\"} 0\n"
    "# a plain comment\n"
    "# HELP g A gauge with \\\\ and \\n.\n"
    "# TYPE g gauge\n"
    "g -1.5e-3\n"
    "# HELP h_seconds A histogram.\n"
    "# TYPE h_seconds histogram\n"
    "h_seconds_bucket{le=\"0.1\"} 1\n"
    "h_seconds_bucket{le=\"1\"} 3\n"
    "h_seconds_bucket{le=\"+Inf\"} 4\n"
    "h_seconds_sum 7.25\n"
    "h_seconds_count 4\n";

TEST(PrometheusCheckTest, AcceptsAWellFormedText) {
  absl::StatusOr<PromExposition> p = ParsePrometheusText(kGood);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->families.size(), 3u);
  EXPECT_EQ(p->Value("a_total", {{"limit", "x"}, {"source", "lease"}}), 3);
  EXPECT_EQ(p->Value("a_total", {{"limit", "y\"\\\n"}}), 0);
  EXPECT_EQ(p->Value("g", {}), -0.0015);
  EXPECT_EQ(p->Family("g")->help, "A gauge with \\ and \n.");
  EXPECT_EQ(p->Value("h_seconds_count", {}), 4);
}

struct BadText {
  const char* name;
  std::string text;
  const char* error;
};

class PrometheusCheckRejects : public ::testing::TestWithParam<BadText> {};

TEST_P(PrometheusCheckRejects, TextThatBreaksARule) {
  absl::StatusOr<PromExposition> p = ParsePrometheusText(GetParam().text);
  ASSERT_FALSE(p.ok()) << GetParam().text;
  EXPECT_THAT(p.status().message(), HasSubstr(GetParam().error));
}

const std::string kCounterHead = "# HELP c_total C.\n# TYPE c_total counter\n";
const std::string kHistHead = "# HELP h H.\n# TYPE h histogram\n";

INSTANTIATE_TEST_SUITE_P(
    Rules, PrometheusCheckRejects,
    ::testing::Values(
        BadText{"no_final_newline", kCounterHead + "c_total 1", "newline"},
        BadText{"empty_line", kCounterHead + "\nc_total 1\n", "empty line"},
        BadText{"carriage_return", kCounterHead + "c_total 1\r\n",
                "carriage return"},
        BadText{"bad_name", "# HELP 1x X.\n# TYPE 1x gauge\n", "metric name"},
        BadText{"sample_before_type", "# HELP g G.\ng 1\n# TYPE g gauge\n",
                "no family declared"},
        BadText{"no_help", "# TYPE g gauge\ng 1\n", "before its HELP"},
        BadText{"type_twice", "# HELP g G.\n# TYPE g gauge\n# TYPE g gauge\n",
                "second TYPE"},
        BadText{"unknown_type", "# HELP g G.\n# TYPE g meter\n",
                "unknown type"},
        BadText{"counter_without_total", "# HELP c C.\n# TYPE c counter\n",
                "_total"},
        BadText{"negative_counter", kCounterHead + "c_total -1\n", "counter"},
        BadText{"bad_value", kCounterHead + "c_total one\n", "bad value"},
        BadText{"timestamp", kCounterHead + "c_total 1 1700000000\n",
                "timestamp"},
        BadText{"two_spaces", kCounterHead + "c_total  1\n", "extra field"},
        BadText{"bad_label_name", kCounterHead + "c_total{1a=\"x\"} 1\n",
                "label name"},
        BadText{"reserved_label", kCounterHead + "c_total{__x=\"x\"} 1\n",
                "label name"},
        BadText{"bad_escape", kCounterHead + "c_total{a=\"\\t\"} 1\n",
                "bad escape"},
        BadText{"not_utf8", kCounterHead + "c_total{a=\"\xff\"} 1\n", "UTF-8"},
        BadText{"label_twice", kCounterHead + "c_total{a=\"1\",a=\"2\"} 1\n",
                "twice"},
        BadText{"trailing_comma", kCounterHead + "c_total{a=\"1\",} 1\n",
                "trailing comma"},
        BadText{"duplicate_series",
                kCounterHead + "c_total{a=\"1\"} 1\nc_total{a=\"1\"} 2\n",
                "twice"},
        BadText{"family_comes_back",
                kCounterHead + "c_total 1\n# HELP g G.\n# TYPE g gauge\ng 1\n" +
                    "c_total{a=\"2\"} 1\n",
                "contiguous"},
        BadText{"not_cumulative",
                kHistHead + "h_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 2\n" +
                    "h_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 3\n",
                "cumulative"},
        BadText{"le_not_increasing",
                kHistHead + "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 2\n" +
                    "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
                "after"},
        BadText{"no_inf_bucket",
                kHistHead + "h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
                "+Inf"},
        BadText{"inf_is_not_count",
                kHistHead + "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
                "_count"},
        BadText{"no_sum", kHistHead + "h_bucket{le=\"+Inf\"} 2\nh_count 2\n",
                "_sum"},
        BadText{"bucket_without_le", kHistHead + "h_bucket 2\n", "without le"},
        BadText{"le_on_count",
                kHistHead + "h_bucket{le=\"+Inf\"} 2\nh_sum 1\n" +
                    "h_count{le=\"1\"} 2\n",
                "not a bucket"}),
    [](const ::testing::TestParamInfo<BadText>& info) {
      return std::string(info.param.name);
    });

// --- The writer --------------------------------------------------------------

SharedLimitStats SomeLeasedStats() {
  SharedLimitStats s;
  s.mode = LimiterMode::kLeased;
  s.decisions.admitted[static_cast<int>(DecisionSource::kLease)] = 1000;
  s.decisions.admitted[static_cast<int>(DecisionSource::kLocalCredit)] = 25;
  s.decisions.denied[static_cast<int>(DecisionSource::kLease)] = 7;
  s.decisions.denied[static_cast<int>(DecisionSource::kFailClosed)] = 9;
  // A cell no leased limiter produces appears too once it is not zero.
  s.decisions.denied[static_cast<int>(DecisionSource::kDirect)] = 1;
  s.keys = 17;
  s.lease.lease_requests = 12;
  s.lease.leases_granted = 11;
  s.lease.tokens_granted = 1100;
  s.lease.leases_expired = 3;
  s.lease.tokens_expired = 40;
  s.redis_calls = 10;
  s.decisions_per_call = 103.3;
  s.redis_errors = 6;
  s.key_errors = 2;
  s.lease.held_tokens = 60;
  s.lease.credit_tokens = 5;
  s.lease.uncharged_tokens = 2;
  s.lease.overshoot_tokens = 67;
  s.lease.near_limit_keys = 1;
  s.redis.commands_sent = 10;
  s.redis.healthy = 1;
  s.redis.health = RedisHealth::kHealthy;
  s.redis.state_since_us = 1'700'000'000'123'456;
  s.redis.round_trip.buckets[2] = 8;
  s.redis.round_trip.buckets[5] = 2;
  s.redis.round_trip.sum_nanos = 8 * 35'000 + 2 * 300'000;
  return s;
}

TEST(PrometheusWriterTest, WritesEverySeriesOnceUnderTheStrictChecker) {
  PrometheusWriter w;
  const SharedLimitStats lease = SomeLeasedStats();
  ASSERT_TRUE(w.Add("api", lease).ok());
  SharedLimitStats direct;
  direct.mode = LimiterMode::kDirect;
  direct.decisions.admitted[static_cast<int>(DecisionSource::kDirect)] = 4;
  direct.redis_calls = 4;
  direct.redis_errors = 3;
  direct.key_errors = 1;
  direct.redis.round_trip.buckets[LatencyHistogram::kBuckets] = 1;
  ASSERT_TRUE(w.Add("sms", direct).ok());
  // A second limiter on api's connection: no second copy of its series.
  SharedLimitStats shadow = lease;
  shadow.keys = 0;
  ASSERT_TRUE(w.Add("api-shadow", shadow, /*with_connection=*/false).ok());
  // A local limiter: decisions and keys only.
  LimiterStats local;
  local.decisions.admitted[static_cast<int>(DecisionSource::kLocal)] = 8;
  local.decisions.admitted[static_cast<int>(DecisionSource::kShadow)] = 2;
  local.keys = 5;
  ASSERT_TRUE(w.Add("login", local).ok());
  const std::string text = w.Text();
  absl::StatusOr<PromExposition> p = ParsePrometheusText(text);
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;

  auto v = [&](const char* name, testing::PromLabels labels) {
    return p->Value(name, labels).value_or(-1);
  };
  EXPECT_EQ(v("tokenlease_decisions_total",
              {{"limit", "api"}, {"source", "lease"}, {"result", "admitted"}}),
            1000);
  EXPECT_EQ(
      v("tokenlease_decisions_total",
        {{"limit", "api"}, {"source", "local_credit"}, {"result", "admitted"}}),
      25);
  EXPECT_EQ(v("tokenlease_decisions_total",
              {{"limit", "api"}, {"source", "direct"}, {"result", "denied"}}),
            1);
  // The series a mode produces exist at zero; others do not.
  EXPECT_EQ(
      v("tokenlease_decisions_total",
        {{"limit", "api"}, {"source", "key_limit"}, {"result", "denied"}}),
      0);
  EXPECT_FALSE(
      p->Value("tokenlease_decisions_total",
               {{"limit", "sms"}, {"source", "lease"}, {"result", "admitted"}})
          .has_value());
  EXPECT_EQ(v("tokenlease_decisions_total",
              {{"limit", "sms"}, {"source", "direct"}, {"result", "admitted"}}),
            4);
  // Redis could not decide: denials by fail_closed (no family of their
  // own any more), at zero from the start in both Redis modes.
  EXPECT_EQ(
      v("tokenlease_decisions_total",
        {{"limit", "api"}, {"source", "fail_closed"}, {"result", "denied"}}),
      9);
  EXPECT_EQ(
      v("tokenlease_decisions_total",
        {{"limit", "sms"}, {"source", "fail_closed"}, {"result", "denied"}}),
      0);
  for (const char* limit : {"api", "sms", "login"}) {
    EXPECT_EQ(
        v("tokenlease_decisions_total",
          {{"limit", limit}, {"source", "shadow"}, {"result", "admitted"}}),
        limit == std::string("login") ? 2 : 0)
        << limit;
  }
  for (const char* gone : {"tokenlease_fail_closed_denials_total",
                           "tokenlease_shadow_denials_total",
                           "tokenlease_redis_call_errors_total"}) {
    EXPECT_EQ(p->Family(gone), nullptr) << gone;
  }
  // Errors, with those for the key apart, in both Redis modes.
  EXPECT_EQ(v("tokenlease_redis_errors_total", {{"limit", "api"}}), 6);
  EXPECT_EQ(v("tokenlease_redis_key_errors_total", {{"limit", "api"}}), 2);
  EXPECT_EQ(v("tokenlease_redis_errors_total", {{"limit", "sms"}}), 3);
  EXPECT_EQ(v("tokenlease_redis_key_errors_total", {{"limit", "sms"}}), 1);
  // Leased mode's own series are its own.
  EXPECT_EQ(v("tokenlease_lease_requests_total", {{"limit", "api"}}), 12);
  EXPECT_FALSE(p->Value("tokenlease_lease_requests_total", {{"limit", "sms"}})
                   .has_value());
  // Keys, in every mode.
  EXPECT_EQ(v("tokenlease_keys", {{"limit", "api"}}), 17);
  EXPECT_EQ(v("tokenlease_keys", {{"limit", "sms"}}), 0);
  EXPECT_EQ(v("tokenlease_keys", {{"limit", "login"}}), 5);
  // The local limiter: its decisions (kLocal at zero from the start too)
  // and no Redis series.
  EXPECT_EQ(
      v("tokenlease_decisions_total",
        {{"limit", "login"}, {"source", "local"}, {"result", "admitted"}}),
      8);
  EXPECT_EQ(v("tokenlease_decisions_total",
              {{"limit", "login"}, {"source", "local"}, {"result", "denied"}}),
            0);
  EXPECT_FALSE(
      p->Value("tokenlease_decisions_total", {{"limit", "login"},
                                              {"source", "fail_closed"},
                                              {"result", "denied"}})
          .has_value());
  EXPECT_FALSE(p->Value("tokenlease_redis_calls_total", {{"limit", "login"}})
                   .has_value());
  EXPECT_FALSE(p->Value("tokenlease_redis_commands_total", {{"limit", "login"}})
                   .has_value());
  EXPECT_EQ(v("tokenlease_leases_expired_total", {{"limit", "api"}}), 3);
  EXPECT_EQ(v("tokenlease_tokens_expired_total", {{"limit", "api"}}), 40);
  EXPECT_EQ(v("tokenlease_overshoot_tokens", {{"limit", "api"}}), 67);
  EXPECT_EQ(v("tokenlease_decisions_per_redis_call", {{"limit", "api"}}),
            103.3);
  EXPECT_EQ(
      v("tokenlease_redis_health", {{"limit", "api"}, {"state", "healthy"}}),
      1);
  EXPECT_EQ(v("tokenlease_redis_health", {{"limit", "api"}, {"state", "down"}}),
            0);
  EXPECT_EQ(
      v("tokenlease_redis_state_since_timestamp_seconds", {{"limit", "api"}}),
      1'700'000'000.123456);
  // The histogram, cumulative, in seconds.
  EXPECT_EQ(v("tokenlease_redis_round_trip_seconds_bucket",
              {{"limit", "api"}, {"le", "2e-05"}}),
            0);
  EXPECT_EQ(v("tokenlease_redis_round_trip_seconds_bucket",
              {{"limit", "api"}, {"le", "4e-05"}}),
            8);
  EXPECT_EQ(v("tokenlease_redis_round_trip_seconds_bucket",
              {{"limit", "api"}, {"le", "0.00032"}}),
            10);
  EXPECT_EQ(v("tokenlease_redis_round_trip_seconds_count", {{"limit", "api"}}),
            10);
  EXPECT_DOUBLE_EQ(
      v("tokenlease_redis_round_trip_seconds_sum", {{"limit", "api"}}),
      0.00088);
  EXPECT_EQ(v("tokenlease_redis_round_trip_seconds_bucket",
              {{"limit", "sms"}, {"le", "+Inf"}}),
            1);
  EXPECT_FALSE(
      p->Value("tokenlease_redis_commands_total", {{"limit", "api-shadow"}})
          .has_value());
  EXPECT_EQ(v("tokenlease_keys", {{"limit", "api-shadow"}}), 0);
  // Every counter family ends in _total, and every family has a HELP.
  for (const testing::PromFamily& f : p->families) {
    EXPECT_TRUE(f.name.starts_with("tokenlease_")) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
}

TEST(PrometheusWriterTest, EscapesLimitNamesAndReplacesInvalidUtf8) {
  PrometheusWriter w;
  const std::string odd = "a\"b\\c\nd é";
  SharedLimitStats direct;
  direct.mode = LimiterMode::kDirect;
  ASSERT_TRUE(w.Add(odd, direct).ok());
  ASSERT_TRUE(w.Add("bad\xff\xc3(", direct).ok());
  absl::StatusOr<PromExposition> p = ParsePrometheusText(w.Text());
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << w.Text();
  EXPECT_TRUE(p->Value("tokenlease_redis_calls_total", {{"limit", odd}}));
  EXPECT_TRUE(p->Value("tokenlease_redis_calls_total",
                       {{"limit", "bad\xEF\xBF\xBD\xEF\xBF\xBD("}}));
}

TEST(PrometheusWriterTest, RefusesARepeatedOrEmptyName) {
  PrometheusWriter w;
  SharedLimitStats direct, leased;
  direct.mode = LimiterMode::kDirect;
  leased.mode = LimiterMode::kLeased;
  EXPECT_TRUE(w.Add("x", direct).ok());
  EXPECT_EQ(w.Add("x", leased).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(w.Add("x", LimiterStats{}).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(w.Add("", leased).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Add("", LimiterStats{}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParsePrometheusText(w.Text()).ok());
  EXPECT_EQ(PrometheusWriter().Text(), "");
}

// --- Per-thread decision counters
// ---------------------------------------------

using internal::AcquireDecisionCells;
using internal::CountDecision;
using internal::DecisionCell;
using internal::ReleaseDecisionCells;
using internal::SumDecisionCells;

// Threads count into two limiters' ranges while another sums them; threads
// exit and new ones take their arrays over. Every count is kept.
TEST(DecisionCountsTest, ThreadsCountExactlyAndHandTheirArraysOn) {
  const uint32_t a = AcquireDecisionCells();
  const uint32_t b = AcquireDecisionCells();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      const uint64_t now = SumDecisionCells(a).Total();
      EXPECT_GE(now, last);  // each cell only grows
      last = now;
    }
  });
  for (int wave = 0; wave < 3; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          CountDecision(DecisionCell(a, true, DecisionSource::kLease));
          if (i % 4 == t) {
            CountDecision(DecisionCell(b, false, DecisionSource::kShadow));
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  done.store(true, std::memory_order_release);
  reader.join();
  const DecisionCounts ca = SumDecisionCells(a);
  EXPECT_EQ(ca.Admitted(DecisionSource::kLease), 3u * kThreads * kPerThread);
  EXPECT_EQ(ca.Total(), 3u * kThreads * kPerThread);
  const DecisionCounts cb = SumDecisionCells(b);
  EXPECT_EQ(cb.Denied(DecisionSource::kShadow), 3u * kThreads * kPerThread / 4);
  EXPECT_EQ(cb.Total(), cb.Denied(DecisionSource::kShadow));
  // A released range starts again from zero for its next owner.
  ReleaseDecisionCells(a);
  const uint32_t c = AcquireDecisionCells();
  EXPECT_EQ(c, a);
  EXPECT_EQ(SumDecisionCells(c).Total(), 0u);
  CountDecision(DecisionCell(c, false, DecisionSource::kKeyLimit));
  EXPECT_EQ(SumDecisionCells(c).Denied(DecisionSource::kKeyLimit), 1u);
  ReleaseDecisionCells(b);
  ReleaseDecisionCells(c);
}

// A limiter's range of cells (DecisionCounter): counts from any thread,
// and starts from zero for the next limiter when the range is reused.
TEST(DecisionCountsTest, ACounterOwnsItsRangeFromConstructionToDestruction) {
  Decision admitted;
  admitted.allowed = true;
  admitted.source = DecisionSource::kDirect;
  Decision denied;
  denied.source = DecisionSource::kFailClosed;
  uint32_t base = 0;
  {
    internal::DecisionCounter counter;
    base = counter.base();
    std::thread([&] {
      for (int i = 0; i < 10; ++i) counter.Count(admitted);
    }).join();
    counter.Count(denied);
    const DecisionCounts c = counter.Sum();
    EXPECT_EQ(c.Admitted(DecisionSource::kDirect), 10u);
    EXPECT_EQ(c.Denied(DecisionSource::kFailClosed), 1u);
    EXPECT_EQ(c.Total(), 11u);
  }
  internal::DecisionCounter next;
  EXPECT_EQ(next.base(), base);  // the range released, taken again
  EXPECT_EQ(next.Sum().Total(), 0u);
}

}  // namespace
}  // namespace tokenlease
