#include "redis/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/absl_view.h"

namespace tokenlease {

// --- LatencyHistogram
// ---------------------------------------------------------

absl::Duration LatencyHistogram::QuantileBound(double q) const {
  const uint64_t n = Count();
  if (n == 0) return absl::ZeroDuration();
  // The rank of the q-quantile, 1-based: the smallest r with r >= q x n.
  const double want =
      std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(n));
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(want));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets[i];
    if (seen >= rank) return absl::Nanoseconds(BoundNanos(i));
  }
  return absl::InfiniteDuration();
}

// --- PrometheusWriter (the parts of every mode)
// -------------------------------

PrometheusWriter::PrometheusWriter()
    : families_(std::make_unique<internal::MetricFamilies>()) {}
PrometheusWriter::~PrometheusWriter() = default;
PrometheusWriter::PrometheusWriter(PrometheusWriter&&) noexcept = default;
PrometheusWriter& PrometheusWriter::operator=(PrometheusWriter&&) noexcept =
    default;

std::string PrometheusWriter::Text() const { return families_->Text(); }

namespace internal {
namespace {

// The HELP text escaped (backslash and newline).
std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// The length of the valid UTF-8 sequence at the start of `s`, or 0.
size_t Utf8Length(std::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t min;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 2, min = 0x80, cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, min = 0x800, cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string SampleLine(std::string_view name, const MetricLabels& labels,
                       std::string_view value) {
  std::string line(name);
  if (!labels.empty()) {
    line += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) line += ',';
      absl::StrAppend(&line, labels[i].first, "=\"",
                      EscapeLabelValue(labels[i].second), "\"");
    }
    line += '}';
  }
  absl::StrAppend(&line, " ", AbslView(value), "\n");
  return line;
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  while (!v.empty()) {
    const size_t n = Utf8Length(v);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for the byte that is not UTF-8
      v.remove_prefix(1);
      continue;
    }
    if (n == 1) {
      const char c = v[0];
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '"') {
        out += "\\\"";
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    } else {
      out.append(v.data(), n);
    }
    v.remove_prefix(n);
  }
  return out;
}

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

absl::StatusOr<MetricLabels> MetricFamilies::ClaimLimit(
    std::string_view limit) {
  if (limit.empty()) {
    return absl::InvalidArgumentError("PrometheusWriter::Add: limit is empty");
  }
  for (const std::string& l : limits_) {
    if (l == limit) {
      return absl::AlreadyExistsError(absl::StrCat(
          "PrometheusWriter::Add: a limiter named \"", AbslView(limit),
          "\" was added before; give each limiter its own name"));
    }
  }
  limits_.emplace_back(limit);
  return MetricLabels{{"limit", std::string(limit)}};
}

MetricFamilies::Family& MetricFamilies::Get(std::string_view name,
                                            std::string_view help,
                                            const char* type) {
  auto [it, added] = index_.try_emplace(std::string(name), families_.size());
  if (added) {
    families_.push_back(
        Family{std::string(name), EscapeHelp(help), type, std::string()});
  }
  return families_[it->second];
}

void MetricFamilies::Counter(std::string_view name, std::string_view help,
                             const MetricLabels& labels, uint64_t value) {
  Get(name, help, "counter").samples +=
      SampleLine(name, labels, absl::StrCat(value));
}

void MetricFamilies::Gauge(std::string_view name, std::string_view help,
                           const MetricLabels& labels, double value) {
  Get(name, help, "gauge").samples +=
      SampleLine(name, labels, FormatSampleValue(value));
}

void MetricFamilies::Gauge(std::string_view name, std::string_view help,
                           const MetricLabels& labels, int64_t value) {
  Get(name, help, "gauge").samples +=
      SampleLine(name, labels, absl::StrCat(value));
}

void MetricFamilies::Histogram(std::string_view name, std::string_view help,
                               const MetricLabels& labels,
                               const LatencyHistogram& h) {
  Family& f = Get(name, help, "histogram");
  const std::string bucket = absl::StrCat(AbslView(name), "_bucket");
  MetricLabels with_le = labels;
  with_le.emplace_back("le", "");
  uint64_t cumulative = 0;
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i) {
    cumulative += h.buckets[i];
    with_le.back().second = FormatSampleValue(
        static_cast<double>(LatencyHistogram::BoundNanos(i)) / 1e9);
    f.samples += SampleLine(bucket, with_le, absl::StrCat(cumulative));
  }
  // +Inf is the count by construction (the snapshot's buckets, summed).
  cumulative += h.buckets[LatencyHistogram::kBuckets];
  with_le.back().second = "+Inf";
  f.samples += SampleLine(bucket, with_le, absl::StrCat(cumulative));
  f.samples +=
      SampleLine(absl::StrCat(AbslView(name), "_sum"), labels,
                 FormatSampleValue(static_cast<double>(h.sum_nanos) / 1e9));
  f.samples += SampleLine(absl::StrCat(AbslView(name), "_count"), labels,
                          absl::StrCat(cumulative));
}

std::string MetricFamilies::Text() const {
  std::string out;
  for (const Family& f : families_) {
    absl::StrAppend(&out, "# HELP ", f.name, " ", f.help, "\n", "# TYPE ",
                    f.name, " ", f.type, "\n", f.samples);
  }
  return out;
}

void AddConnectionSeries(MetricFamilies& f, const MetricLabels& labels,
                         const RedisStats& s) {
  f.Counter("tokenlease_redis_commands_total",
            "Commands written to Redis by the limiter's connection (resends "
            "included).",
            labels, s.commands_sent);
  f.Counter("tokenlease_redis_replies_total",
            "Replies received in time (error replies included).", labels,
            s.replies);
  f.Counter("tokenlease_redis_timeouts_total",
            "Commands failed with DeadlineExceeded.", labels, s.timeouts);
  f.Counter("tokenlease_redis_late_replies_total",
            "Replies that came after their command timed out.", labels,
            s.late_replies);
  f.Counter("tokenlease_redis_connects_total",
            "Connections whose login and PING were answered.", labels,
            s.connects);
  f.Counter("tokenlease_redis_connect_failures_total",
            "Connect or login attempts that failed.", labels,
            s.connect_failures);
  f.Counter("tokenlease_redis_script_reloads_total",
            "NOSCRIPT replies answered by resending the script as EVAL.",
            labels, s.script_reloads);
  f.Counter("tokenlease_redis_flushes_total",
            "Pipelined writes (commands_total / flushes_total is the mean "
            "pipeline depth).",
            labels, s.flushes);
  f.Counter("tokenlease_redis_resets_total",
            "Connections reset because nothing answered for dead_after.",
            labels, s.resets);
  f.Counter("tokenlease_redis_data_losses_total",
            "Times Redis was seen to have lost its tokenlease state.", labels,
            s.data_losses);
  static constexpr RedisHealth kStates[] = {
      RedisHealth::kHealthy, RedisHealth::kDegraded, RedisHealth::kDown};
  for (RedisHealth h : kStates) {
    MetricLabels l = labels;
    l.emplace_back("state", RedisHealthName(h));
    f.Gauge("tokenlease_redis_health",
            "1 for the connection's health state now, 0 for the others.", l,
            int64_t{s.health == h ? 1 : 0});
  }
  const uint64_t into[] = {s.healthy, s.degraded, s.down};
  for (size_t i = 0; i < 3; ++i) {
    MetricLabels l = labels;
    l.emplace_back("to", RedisHealthName(kStates[i]));
    f.Counter("tokenlease_redis_health_transitions_total",
              "Health transitions, by the state entered.", l, into[i]);
  }
  f.Histogram("tokenlease_redis_round_trip_seconds",
              "Round trips from a command's write to its reply, on the "
              "client thread.",
              labels, s.round_trip);
  if (s.state_since_us >= 0) {
    f.Gauge("tokenlease_redis_state_since_timestamp_seconds",
            "When this Redis's tokenlease state began (Unix time, Redis's "
            "clock): the data-loss marker.",
            labels, static_cast<double>(s.state_since_us) / 1e6);
  }
}

void AddDecisionSeries(MetricFamilies& f, const MetricLabels& labels,
                       const DecisionCounts& d,
                       std::initializer_list<DecisionSeries> always) {
  for (int admitted = 1; admitted >= 0; --admitted) {
    for (int s = 0; s < kDecisionSources; ++s) {
      const auto source = static_cast<DecisionSource>(s);
      const uint64_t n = admitted ? d.admitted[s] : d.denied[s];
      bool listed = false;
      for (const DecisionSeries& a : always) {
        listed |= a.source == source && a.admitted == (admitted != 0);
      }
      if (n == 0 && !listed) continue;
      MetricLabels l = labels;
      l.emplace_back("source", DecisionSourceName(source));
      l.emplace_back("result", admitted ? "admitted" : "denied");
      f.Counter("tokenlease_decisions_total",
                "Decisions returned, by where they were made (source) and "
                "outcome (result).",
                l, n);
    }
  }
}

}  // namespace internal
}  // namespace tokenlease
