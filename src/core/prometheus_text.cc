#include "core/prometheus_text.h"

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

absl::Status PrometheusWriter::Add(std::string_view limit,
                                   const LimiterStats& stats) {
  absl::StatusOr<internal::MetricLabels> labels = families_->ClaimLimit(limit);
  if (!labels.ok()) return labels.status();
  internal::AddLimiterSeries(*families_, *labels, stats);
  return absl::OkStatus();
}

const char* LimiterModeName(LimiterMode m) {
  switch (m) {
    case LimiterMode::kLocal:
      return "local";
    case LimiterMode::kDirect:
      return "direct";
    case LimiterMode::kLeased:
      return "leased";
  }
  return "unknown";
}

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

namespace {

// Whether `mode` can produce decisions of `source` with result `admitted`:
// those series are written from the start, even at zero.
bool Produces(LimiterMode mode, DecisionSource source, bool admitted) {
  using S = DecisionSource;
  switch (source) {
    case S::kLocal:
      return mode == LimiterMode::kLocal;
    case S::kLease:
      return mode == LimiterMode::kLeased;
    case S::kLocalCredit:
      return mode == LimiterMode::kLeased && admitted;
    case S::kDirect:
      return mode == LimiterMode::kDirect;
    case S::kFailOpen:
      return mode != LimiterMode::kLocal && admitted;
    case S::kFailClosed:
      return mode != LimiterMode::kLocal && !admitted;
    case S::kFallback:
      return mode != LimiterMode::kLocal;
    case S::kShadow:
      return admitted;
    case S::kInvalidArgument:
      return !admitted;
    case S::kKeyLimit:  // direct mode's share reports its own as kFallback
      return mode != LimiterMode::kDirect && !admitted;
  }
  return false;
}

}  // namespace

void AddLimiterSeries(MetricFamilies& f, const MetricLabels& labels,
                      const LimiterStats& s) {
  for (int admitted = 1; admitted >= 0; --admitted) {
    for (int i = 0; i < kDecisionSources; ++i) {
      const auto source = static_cast<DecisionSource>(i);
      const uint64_t n =
          admitted ? s.decisions.admitted[i] : s.decisions.denied[i];
      if (n == 0 && !Produces(s.mode, source, admitted != 0)) continue;
      MetricLabels l = labels;
      l.emplace_back("source", DecisionSourceName(source));
      l.emplace_back("result", admitted ? "admitted" : "denied");
      f.Counter("tokenlease_decisions_total",
                "Decisions returned, by where they were made (source) and "
                "outcome (result).",
                l, n);
    }
  }
  f.Gauge("tokenlease_keys", "Keys in memory.", labels,
          static_cast<int64_t>(s.keys));
}

}  // namespace internal
}  // namespace tokenlease
