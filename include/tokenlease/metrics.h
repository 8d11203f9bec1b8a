// Metrics of every limiter: decisions counted by source, the stats snapshot
// every mode's stats() returns (LimiterStats here; SharedLimitStats in
// shared_limit.h extends it for the Redis modes), the Redis round-trip
// latency histogram, and their Prometheus text exposition.
// docs/metrics.md lists every metric, its type and what to alert on.
//
//   tokenlease::PrometheusWriter w;
//   w.Add("api", api_limiter->stats()).IgnoreError();   // any mode
//   w.Add("sms", sms_limiter->stats()).IgnoreError();
//   Serve(tokenlease::PrometheusWriter::kContentType, w.Text());
#ifndef TOKENLEASE_METRICS_H_
#define TOKENLEASE_METRICS_H_

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tokenlease/decision.h"

namespace tokenlease {

// How many DecisionSource values there are (one more than the last,
// kFailClosed). Extend it with DecisionSource.
inline constexpr int kDecisionSources =
    static_cast<int>(DecisionSource::kFailClosed) + 1;

// Decisions a limiter returned since it was created, by Decision::source
// and Decision::allowed: every decision a TryAcquire (or Reserve) call
// returned is in exactly one cell. A snapshot: each cell is exact for the
// decisions that had returned when it was read.
struct DecisionCounts {
  uint64_t admitted[kDecisionSources] = {};
  uint64_t denied[kDecisionSources] = {};

  // The count of one cell.
  uint64_t Admitted(DecisionSource s) const {
    return admitted[static_cast<int>(s)];
  }
  uint64_t Denied(DecisionSource s) const {
    return denied[static_cast<int>(s)];
  }
  // Sums over every source.
  uint64_t TotalAdmitted() const {
    uint64_t n = 0;
    for (uint64_t c : admitted) n += c;
    return n;
  }
  uint64_t TotalDenied() const {
    uint64_t n = 0;
    for (uint64_t c : denied) n += c;
    return n;
  }
  uint64_t Total() const { return TotalAdmitted() + TotalDenied(); }
};

// Latencies in fixed, log-spaced buckets (the Redis round trip,
// RedisStats::round_trip). Bucket i < kBuckets holds the values in
// (BoundNanos(i - 1), BoundNanos(i)], with BoundNanos(i) = 10 us x 2^i
// (10 us to 10.49 s; bucket 0 also holds everything below 10 us), and
// bucket kBuckets everything above the last bound (+Inf). Counts are per
// bucket, not cumulative (the Prometheus export accumulates them).
struct LatencyHistogram {
  static constexpr int kBuckets = 21;
  static constexpr int64_t kFirstBoundNanos = 10'000;

  // The upper bound of bucket `i` (0 <= i < kBuckets).
  static constexpr int64_t BoundNanos(int i) { return kFirstBoundNanos << i; }
  // The bucket that holds `nanos` (negative counts as 0).
  static constexpr int BucketOf(int64_t nanos) {
    if (nanos <= kFirstBoundNanos) return 0;
    // ceil(nanos / 10 us) - 1 has bit width i exactly when nanos is in
    // (BoundNanos(i - 1), BoundNanos(i)].
    const uint64_t q =
        static_cast<uint64_t>((nanos - 1) / kFirstBoundNanos);  // ceil - 1
    const int i = static_cast<int>(std::bit_width(q));
    return i < kBuckets ? i : kBuckets;
  }

  uint64_t buckets[kBuckets + 1] = {};
  uint64_t sum_nanos = 0;  // of every recorded value

  // Values recorded.
  uint64_t Count() const {
    uint64_t n = 0;
    for (uint64_t c : buckets) n += c;
    return n;
  }
  // The upper bound of the bucket that holds the q-quantile (0 < q <= 1;
  // 0.99 for the p99): an upper estimate within a factor of 2. Zero if
  // nothing was recorded; InfiniteDuration() if it lies above the last
  // bound.
  absl::Duration QuantileBound(double q) const;
};

// Which limiter a snapshot is of.
enum class LimiterMode : uint8_t {
  kLocal,   // Limiter
  kDirect,  // DirectLimiter
  kLeased,  // LeasedLimiter
};

// Returns a stable lower-case name ("local", "direct", "leased").
const char* LimiterModeName(LimiterMode m);

// What every limiter counts (Limiter::stats(); the Redis modes return
// SharedLimitStats, which extends it). Each field is exact when read;
// fields are not read at one instant while traffic runs.
struct LimiterStats {
  LimiterMode mode = LimiterMode::kLocal;
  // Every decision returned (TryAcquire, Reserve, Acquire and their
  // asynchronous forms), by source and outcome. The failure modes and
  // shadow mode are sources too: Denied(kFailClosed), Admitted(kFailOpen),
  // Admitted(kFallback) / Denied(kFallback) (fail_local) and
  // Admitted(kShadow) count what they decided.
  DecisionCounts decisions;
  // Keys in memory now: the registry's (leased mode: leased keys; direct
  // mode: the fail_local share's, if any).
  uint64_t keys = 0;
};

struct SharedLimitStats;

namespace internal {
class MetricFamilies;  // src/core/prometheus_text.h
}  // namespace internal

// Builds the Prometheus text exposition (format version 0.0.4) of the
// snapshots of one or several limiters. Metric names follow the
// Prometheus conventions: prefix `tokenlease_`, counters end in `_total`,
// units in the name (`_seconds`); every series carries the label
// `limit="<name>"` that Add was given (escaped; any string). Each family is
// written once, with its HELP and TYPE lines, followed by its samples for
// every limiter added. Not thread-safe (build one per scrape).
class PrometheusWriter {
 public:
  // The HTTP Content-Type of Text().
  static constexpr std::string_view kContentType =
      "text/plain; version=0.0.4; charset=utf-8";

  PrometheusWriter();
  ~PrometheusWriter();
  PrometheusWriter(PrometheusWriter&&) noexcept;
  PrometheusWriter& operator=(PrometheusWriter&&) noexcept;

  // Adds a local limiter's snapshot under limit="<limit>": decisions by
  // source and result, and keys. AlreadyExists if a limiter was added
  // under this name before (its series would repeat; nothing is added);
  // InvalidArgument if `limit` is empty.
  absl::Status Add(std::string_view limit, const LimiterStats& stats);
  // Adds a direct or leased limiter's snapshot (the series of its mode).
  // With `with_connection`, also its connection's series (RedisStats:
  // command counters, health, the round-trip histogram). Limiters that
  // share one RedisConnection report the same connection counters: pass
  // with_connection = false for all but one of them, or the connection's
  // traffic is counted once per limiter in sums across limits. Errors as
  // above. Defined in tokenlease::tokenlease.
  absl::Status Add(std::string_view limit, const SharedLimitStats& stats,
                   bool with_connection = true);

  // The exposition: every line ends in '\n'; empty if nothing was added.
  std::string Text() const;

 private:
  std::unique_ptr<internal::MetricFamilies> families_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_METRICS_H_
