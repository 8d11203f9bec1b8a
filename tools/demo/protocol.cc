// Encoding and decoding of the parent/instance line protocol (protocol.h).
#include "demo/protocol.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tokenlease::tools {
namespace {

// Most latency samples per "L" line and keys per "K" line (keeps lines
// short for the reader).
constexpr size_t kLatencyPerLine = 1000;
constexpr size_t kKeysPerLine = 1000;

// The FinalStats fields in "C" line order.
constexpr int64_t FinalStats::*kFinalFields[] = {
    &FinalStats::commands_sent,   &FinalStats::replies,
    &FinalStats::lease_requests,  &FinalStats::tokens_granted,
    &FinalStats::tokens_returned, &FinalStats::denied_by_redis,
    &FinalStats::charges,         &FinalStats::tokens_charged,
    &FinalStats::redis_errors,    &FinalStats::keys,
    &FinalStats::flushes,         &FinalStats::commands_at_end_of_run,
    &FinalStats::timeouts,        &FinalStats::spare_misses,
    &FinalStats::resets,          &FinalStats::late_replies};
constexpr size_t kNumFinalFields = std::size(kFinalFields);

absl::Status Malformed(absl::string_view line, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad protocol line '", line.substr(0, 80), "': ", why));
}

// The numbers after the tag.
absl::StatusOr<std::vector<int64_t>> Numbers(
    const std::vector<absl::string_view>& fields, absl::string_view line) {
  std::vector<int64_t> v(fields.size() - 1);
  for (size_t i = 1; i < fields.size(); ++i) {
    if (!absl::SimpleAtoi(fields[i], &v[i - 1])) {
      return Malformed(line, absl::StrCat("'", fields[i], "' is no integer"));
    }
  }
  return v;
}

// The window of a W/S/V line, or nullptr if outside the run.
template <typename T>
T* WindowAt(std::vector<T>& windows, int64_t w) {
  if (w < 0 || w >= static_cast<int64_t>(windows.size())) return nullptr;
  return &windows[w];
}

// Sets `fields` of *target from v[first], v[first + 1], ...
template <typename T>
void SetFields(const std::vector<int64_t>& v, size_t first, T* target,
               std::initializer_list<int64_t T::*> fields) {
  if (target == nullptr) return;
  for (int64_t T::*field : fields) target->*field = v[first++];
}

// The Health of a protocol number; false if it is none of them.
bool ToHealth(int64_t v, Health* h) {
  if (v < -1 || v > 2) return false;
  *h = static_cast<Health>(v);
  return true;
}

absl::Status ApplyLive(const std::vector<int64_t>& v, absl::string_view line,
                       InstanceReport& r) {
  Health health;
  if (!ToHealth(v[9], &health)) {
    return Malformed(line, "the health must be -1, 0, 1 or 2");
  }
  LiveWindow* lw = WindowAt(r.live, v[0]);
  SetFields(v, 1, lw,
            {&LiveWindow::offered, &LiveWindow::admitted,
             &LiveWindow::hot_offered, &LiveWindow::hot_admitted,
             &LiveWindow::commands, &LiveWindow::commands_in_window,
             &LiveWindow::keys, &LiveWindow::rss_kb});
  if (lw == nullptr) return absl::OkStatus();
  lw->got = true;
  lw->health = health;
  lw->latency.assign(v.begin() + 11, v.end());
  return absl::OkStatus();
}

// "H t from to reason...": three numbers, then free text.
absl::Status ApplyHealthEvent(absl::string_view rest, absl::string_view line,
                              InstanceReport& r) {
  std::vector<absl::string_view> f =
      absl::StrSplit(rest, absl::MaxSplits(' ', 3));
  HealthEvent e;
  int64_t from = 0, to = 0;
  if (f.size() < 3 || !absl::SimpleAtoi(f[0], &e.ns) ||
      !absl::SimpleAtoi(f[1], &from) || !absl::SimpleAtoi(f[2], &to) ||
      !ToHealth(from, &e.from) || !ToHealth(to, &e.to)) {
    return Malformed(line,
                     "expected a time, two health numbers (-1 to 2) "
                     "and a reason");
  }
  if (f.size() == 4) e.reason = std::string(f[3]);
  r.health_events.push_back(std::move(e));
  return absl::OkStatus();
}

// Appends the keys of a "K" line (its numbers in `numbers`) to the report.
// Parsed here rather than through Numbers(): a run over 100,000 keys sends
// that many triples per instance.
absl::Status ApplyKeyCounts(absl::string_view numbers, absl::string_view line,
                            InstanceReport& r) {
  int64_t rank = r.key_counts.empty() ? -1 : r.key_counts.back().rank;
  int64_t prev = -1, v[3];
  size_t n = 0;
  const char* p = numbers.data();
  const char* const end = p + numbers.size();
  for (;;) {
    while (p < end && *p == ' ') ++p;
    if (p == end) break;
    const std::from_chars_result got = std::from_chars(p, end, v[n % 3]);
    if (got.ec != std::errc() || (got.ptr < end && *got.ptr != ' ')) {
      return Malformed(line, "a field is no integer");
    }
    p = got.ptr;
    if (++n % 3 != 0) continue;
    const int64_t d = v[0], offered = v[1], admitted = v[2];
    if (d < 1 || offered < 1 || admitted < 0 || admitted > offered) {
      return Malformed(line,
                       "a key needs distance >= 1, offered >= 1 and "
                       "0 <= admitted <= offered");
    }
    prev += d;
    if (prev <= rank) return Malformed(line, "keys out of rank order");
    rank = prev;
    r.key_counts.push_back({rank, offered, admitted});
  }
  if (n == 0 || n % 3 != 0) {
    return Malformed(line, "expected a multiple of 3 numbers");
  }
  return absl::OkStatus();
}

// How many numbers a line with `tag` carries (V: 10 + its own count; L and
// LC: any; LP: the phase and at least one sample), or -1 for an unknown
// tag ("K" lines do not come here).
int64_t ExpectedNumbers(absl::string_view tag, const std::vector<int64_t>& v) {
  if (tag == "R" || tag == "E") return 0;
  if (tag == "S") return 4;
  if (tag == "W") return 5;
  if (tag == "T") return 4;
  if (tag == "C") return kNumFinalFields;
  if (tag == "L" || tag == "LC") {
    return static_cast<int64_t>(v.size());
  }
  if (tag == "LP") return std::max<int64_t>(2, v.size());  // phase, samples
  if (tag == "P") return 5;
  if (tag == "V") return v.size() >= 11 ? 11 + v[10] : 11;
  return -1;
}

}  // namespace

const char* HealthName(Health h) {
  switch (h) {
    case Health::kHealthy:
      return "healthy";
    case Health::kDegraded:
      return "degraded";
    case Health::kDown:
      return "down";
    case Health::kNone:
      break;
  }
  return "none";
}

InstanceReport::InstanceReport(int64_t windows, bool live)
    : windows(windows), live(live ? windows : 0) {}

std::vector<int64_t> ThinEvenly(const std::vector<int64_t>& samples,
                                size_t max) {
  const size_t step = (samples.size() + max - 1) / max;
  std::vector<int64_t> out;
  for (size_t i = 0; step > 0 && i < samples.size(); i += step) {
    out.push_back(samples[i]);
  }
  return out;
}

std::string EncodeStart(int64_t start_ns) {
  return absl::StrCat(start_ns, "\n");
}

std::string EncodeReady() { return "R\n"; }

std::string EncodeLive(int64_t window, const LiveWindow& w) {
  std::string out = absl::StrCat(
      "V ", window, " ", w.offered, " ", w.admitted, " ", w.hot_offered, " ",
      w.hot_admitted, " ", w.commands, " ", w.commands_in_window, " ", w.keys,
      " ", w.rss_kb, " ", static_cast<int>(w.health), " ", w.latency.size());
  for (int64_t ns : w.latency) absl::StrAppend(&out, " ", ns);
  return out + "\n";
}

std::string EncodeSample(int64_t window, int64_t keys, int64_t rss_kb,
                         int64_t commands) {
  return absl::StrCat("S ", window, " ", keys, " ", rss_kb, " ", commands,
                      "\n");
}

std::string EncodeCounts(int64_t window, const WindowCounts& w) {
  return absl::StrCat("W ", window, " ", w.offered, " ", w.admitted, " ",
                      w.hot_offered, " ", w.hot_admitted, "\n");
}

std::string EncodeLatency(const std::vector<int64_t>& samples, bool cold) {
  std::string out;
  for (size_t i = 0; i < samples.size(); i += kLatencyPerLine) {
    out += cold ? "LC" : "L";
    const size_t end = std::min(samples.size(), i + kLatencyPerLine);
    for (size_t j = i; j < end; ++j) absl::StrAppend(&out, " ", samples[j]);
    out += "\n";
  }
  return out;
}

std::string EncodePhaseLatency(OutagePhase phase,
                               const std::vector<int64_t>& samples) {
  std::string out;
  for (size_t i = 0; i < samples.size(); i += kLatencyPerLine) {
    absl::StrAppend(&out, "LP ", static_cast<int>(phase));
    const size_t end = std::min(samples.size(), i + kLatencyPerLine);
    for (size_t j = i; j < end; ++j) absl::StrAppend(&out, " ", samples[j]);
    out += "\n";
  }
  return out;
}

std::string EncodePhaseCounts(OutagePhase phase, const PhaseCounts& c) {
  return absl::StrCat("P ", static_cast<int>(phase), " ", c.offered, " ",
                      c.admitted, " ", c.hot_offered, " ", c.hot_admitted,
                      "\n");
}

std::string EncodeHealthEvent(const HealthEvent& e) {
  std::string reason = e.reason;
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  std::replace(reason.begin(), reason.end(), '\r', ' ');
  return absl::StrCat("H ", e.ns, " ", static_cast<int>(e.from), " ",
                      static_cast<int>(e.to), " ", reason, "\n");
}

std::string EncodeKeyCounts(const std::vector<KeyCount>& counts) {
  std::string out;
  out.reserve(counts.size() * 8);
  for (size_t i = 0; i < counts.size(); i += kKeysPerLine) {
    out += "K";
    const size_t end = std::min(counts.size(), i + kKeysPerLine);
    int64_t prev = -1;
    for (size_t j = i; j < end; ++j) {
      const KeyCount& k = counts[j];
      absl::StrAppend(&out, " ", k.rank - prev, " ", k.offered, " ",
                      k.admitted);
      prev = k.rank;
    }
    out += "\n";
  }
  return out;
}

std::string EncodeTiming(const RunTiming& t) {
  return absl::StrCat("T ", t.first_ns, " ", t.last_ns, " ", t.errors, " ",
                      t.peak_rss_kb, "\n");
}

std::string EncodeFinal(const FinalStats& s) {
  std::string out = "C";
  for (int64_t FinalStats::*field : kFinalFields) {
    absl::StrAppend(&out, " ", s.*field);
  }
  return out + "\n";
}

std::string EncodeEnd() { return "E\n"; }

FinalStats& FinalStats::operator+=(const FinalStats& other) {
  for (int64_t FinalStats::*field : kFinalFields) this->*field += other.*field;
  return *this;
}

absl::StatusOr<int64_t> DecodeStart(absl::string_view line) {
  int64_t ns = 0;
  if (!absl::SimpleAtoi(line, &ns)) {
    return Malformed(line, "expected the start time");
  }
  return ns;
}

absl::Status ApplyLine(absl::string_view line, InstanceReport& report) {
  if (absl::string_view rest = line;
      absl::ConsumePrefix(&rest, "K") && (rest.empty() || rest[0] == ' ')) {
    return ApplyKeyCounts(rest, line, report);
  }
  if (absl::string_view rest = line; absl::ConsumePrefix(&rest, "H ")) {
    return ApplyHealthEvent(rest, line, report);
  }
  const std::vector<absl::string_view> fields =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (fields.empty()) return Malformed(line, "empty");
  absl::StatusOr<std::vector<int64_t>> v = Numbers(fields, line);
  if (!v.ok()) return v.status();
  const absl::string_view tag = fields[0];
  const int64_t expected = ExpectedNumbers(tag, *v);
  if (expected < 0) return Malformed(line, "unknown tag");
  if (expected != static_cast<int64_t>(v->size())) {
    return Malformed(line, absl::StrCat("expected ", expected, " numbers"));
  }
  if (tag == "R") report.ready = true;
  if (tag == "E") report.done = true;
  if (tag == "V") return ApplyLive(*v, line, report);
  if (tag == "W") {
    SetFields(*v, 1, WindowAt(report.windows, (*v)[0]),
              {&WindowCounts::offered, &WindowCounts::admitted,
               &WindowCounts::hot_offered, &WindowCounts::hot_admitted});
  }
  if (tag == "S") {
    SetFields(
        *v, 1, WindowAt(report.windows, (*v)[0]),
        {&WindowCounts::keys, &WindowCounts::rss_kb, &WindowCounts::commands});
  }
  if (tag == "L" || tag == "LC") {
    std::vector<int64_t>& cls =
        tag == "L" ? report.latency_hot : report.latency_cold;
    cls.insert(cls.end(), v->begin(), v->end());
    report.latency.insert(report.latency.end(), v->begin(), v->end());
  }
  if (tag == "LP") {
    if ((*v)[0] < 0 || (*v)[0] >= kOutagePhases) {
      return Malformed(line, "the outage phase must be 0, 1 or 2");
    }
    report.latency_phase[(*v)[0]].insert(report.latency_phase[(*v)[0]].end(),
                                         v->begin() + 1, v->end());
  }
  if (tag == "P") {
    if ((*v)[0] < 0 || (*v)[0] >= kOutagePhases) {
      return Malformed(line, "the outage phase must be 0, 1 or 2");
    }
    SetFields(*v, 1, &report.phases[(*v)[0]],
              {&PhaseCounts::offered, &PhaseCounts::admitted,
               &PhaseCounts::hot_offered, &PhaseCounts::hot_admitted});
  }
  if (tag == "T") report.timing = {(*v)[0], (*v)[1], (*v)[2], (*v)[3]};
  if (tag == "C") {
    for (size_t i = 0; i < kNumFinalFields; ++i) {
      report.stats.*kFinalFields[i] = (*v)[i];
    }
  }
  return absl::OkStatus();
}

absl::Status LineSplitter::Feed(
    absl::string_view chunk,
    absl::FunctionRef<absl::Status(absl::string_view)> on_line) {
  buf_.append(chunk.data(), chunk.size());
  size_t begin = 0, end;
  absl::Status status;
  while (status.ok() && (end = buf_.find('\n', begin)) != std::string::npos) {
    status = on_line(absl::string_view(buf_).substr(begin, end - begin));
    begin = end + 1;
  }
  buf_.erase(0, begin);
  return status;
}

}  // namespace tokenlease::tools
