// A strict checker of the Prometheus text exposition format (version
// 0.0.4), our own, for the output of tokenlease::PrometheusWriter. Stricter
// than Prometheus itself where our writer has no reason to be loose:
//
//  - the text ends in '\n'; every line is a HELP, TYPE or other comment
//    line, or a sample; no empty line, no carriage return;
//  - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
//    [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__"; no label twice in
//    a sample; label values are valid UTF-8 with no escape but \\, \" and
//    \n; HELP texts escape only \\ and \n;
//  - every family has exactly one HELP and one TYPE line, both before its
//    first sample; a family's lines are contiguous (once another family
//    starts, it never comes back);
//  - a sample belongs to the family its TYPE declared: the family's name
//    for counters and gauges (counters end in `_total`, and are finite and
//    >= 0), <name>_bucket (with `le`), <name>_sum and <name>_count for
//    histograms;
//  - histogram buckets, per label set, come in increasing `le` order with
//    cumulative (non-decreasing) integer counts, end with le="+Inf", and
//    the +Inf count equals <name>_count; _sum and _count are present;
//  - value: a float as Go's ParseFloat reads it, or +Inf, -Inf, NaN;
//    exactly one space between the series and the value; no timestamp
//    (the writer never gives one);
//  - no series (name and label set) twice.
#ifndef TOKENLEASE_TESTS_TESTING_PROMETHEUS_CHECK_H_
#define TOKENLEASE_TESTS_TESTING_PROMETHEUS_CHECK_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tokenlease::testing {

using PromLabels = std::map<std::string, std::string>;

struct PromSample {
  std::string name;   // as written (a histogram's: <family>_bucket, ...)
  PromLabels labels;  // unescaped
  double value = 0;
};

struct PromFamily {
  std::string name;
  std::string type;  // counter, gauge, histogram, summary or untyped
  std::string help;  // unescaped
  std::vector<PromSample> samples;
};

struct PromExposition {
  std::vector<PromFamily> families;

  // The family `name`, or null.
  const PromFamily* Family(std::string_view name) const;
  // The value of the sample `name` with exactly `labels`, if present.
  std::optional<double> Value(std::string_view name,
                              const PromLabels& labels) const;
};

// Parses and checks `text`; an error names the line (1-based) and the rule
// it breaks.
absl::StatusOr<PromExposition> ParsePrometheusText(std::string_view text);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_PROMETHEUS_CHECK_H_
