// The Prometheus text exposition format (version 0.0.4), as the public
// PrometheusWriter (tokenlease/metrics.h) writes it: metric families, each
// written once with its HELP and TYPE lines and then its samples in the
// order they were added; label values escaped; histograms as cumulative
// `_bucket{le="..."}` series ending in +Inf, `_sum` and `_count`. Here, in
// the local library, because every mode exports its stats with it; the
// series of the Redis modes are added in src/shared (shared_metrics.cc).
// The writer checks nothing about names: the callers pass constants.
#ifndef TOKENLEASE_SRC_CORE_PROMETHEUS_TEXT_H_
#define TOKENLEASE_SRC_CORE_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenlease/metrics.h"

namespace tokenlease::internal {

// A series' labels: (name, value) pairs, values unescaped.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricFamilies {
 public:
  // Claims `limit` for one limiter's series and returns their labels
  // ({"limit", limit}); InvalidArgument if it is empty, AlreadyExists if a
  // limiter claimed it before (PrometheusWriter::Add's errors).
  absl::StatusOr<MetricLabels> ClaimLimit(std::string_view limit);

  // One sample of the counter family `name` (which ends in _total).
  void Counter(std::string_view name, std::string_view help,
               const MetricLabels& labels, uint64_t value);
  // One sample of the gauge family `name`.
  void Gauge(std::string_view name, std::string_view help,
             const MetricLabels& labels, double value);
  void Gauge(std::string_view name, std::string_view help,
             const MetricLabels& labels, int64_t value);
  // The histogram family `name` (in seconds) for one label set: its
  // buckets cumulated, +Inf equal to the count, the sum in seconds.
  void Histogram(std::string_view name, std::string_view help,
                 const MetricLabels& labels, const LatencyHistogram& h);

  // The exposition, family by family in the order they were first used.
  std::string Text() const;

 private:
  struct Family {
    std::string name;
    std::string help;
    const char* type;
    std::string samples;  // complete sample lines
  };
  // The family `name`, created (with `help` and `type`) on first use.
  Family& Get(std::string_view name, std::string_view help, const char* type);

  std::vector<Family> families_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> limits_;
};

// `v` escaped as a label value (backslash, double quote and newline), with
// every byte that is not part of valid UTF-8 replaced by U+FFFD.
std::string EscapeLabelValue(std::string_view v);
// A sample value: integers exactly, others in the shortest form that reads
// back as the same double; "+Inf", "-Inf", "NaN".
std::string FormatSampleValue(double v);

// The series every mode has, under `labels`: decisions by source and
// result (every cell of the sources `mode` produces, so that they exist
// from the start, and every other cell that is not zero) and keys.
void AddLimiterSeries(MetricFamilies& f, const MetricLabels& labels,
                      const LimiterStats& s);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_PROMETHEUS_TEXT_H_
