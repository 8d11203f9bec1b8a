// The summary's phase table and bounds (phases.h).
#include "demo/phases.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "demo/format.h"
#include "demo/report.h"
#include "tokenlease/redis.h"

namespace tokenlease::tools {
namespace {

bool HasOutage(const DemoOptions& o) {
  return o.outage && o.mode != Mode::kLocal;
}

// Local mode with a window algorithm: at most the limit per aligned second.
bool AlignedWindows(const DemoOptions& o) {
  return o.mode == Mode::kLocal &&
         (o.algorithm == Algorithm::kFixedWindow ||
          o.algorithm == Algorithm::kSlidingWindowCounter);
}

// "2 healthy->down, 1 down->degraded" for the events in [from_ns, to_ns).
std::string Transitions(const std::vector<HealthEvent>& events, int64_t from_ns,
                        int64_t to_ns) {
  std::map<std::pair<int, int>, int> count;  // in a stable order
  for (const HealthEvent& e : events) {
    if (e.ns >= from_ns && e.ns < to_ns) {
      ++count[{static_cast<int>(e.from), static_cast<int>(e.to)}];
    }
  }
  std::vector<std::string> parts;
  for (const auto& [kind, n] : count) {
    parts.push_back(
        absl::StrCat(n, " ", HealthName(static_cast<Health>(kind.first)), "->",
                     HealthName(static_cast<Health>(kind.second))));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

// Seconds to a tenth, for the table (a run ends a few microseconds short
// of its length).
double Tenths(double s) { return std::round(s * 10) / 10; }

// A bound as a sum of terms, each with its symbols and its numbers:
// "burst + limit x time = 1000 + 10000 x 8.000".
class Sum {
 public:
  Sum& Add(std::string symbols, std::string numbers, double value) {
    symbols_.push_back(std::move(symbols));
    numbers_.push_back(std::move(numbers));
    value_ += value;
    return *this;
  }
  void To(PhaseRow& row) const {
    row.bound = value_;
    row.formula = absl::StrCat(absl::StrJoin(symbols_, " + "), " = ",
                               absl::StrJoin(numbers_, " + "));
  }

 private:
  std::vector<std::string> symbols_, numbers_;
  double value_ = 0;
};

// Adds N x (A + M): what the instances may admit beyond the grants of a
// span (docs/design.md).
void AddHeld(const DemoOptions& o, Sum& sum) {
  const Bounds b = ComputeBounds(o);
  const int64_t m = b.held / std::max(1, o.instances);
  sum.Add("instances x (A + M)",
          absl::StrFormat("%d x (%d + %d)", o.instances, b.local_allowance, m),
          static_cast<double>(o.instances) *
              static_cast<double>(b.local_allowance + m));
}

// Adds burst + limit x time.
void AddRate(const DemoOptions& o, double t, Sum& sum) {
  sum.Add("burst", absl::StrCat(o.burst), static_cast<double>(o.burst));
  sum.Add("limit x time", absl::StrFormat("%d x %.3f", o.limit, t),
          static_cast<double>(o.limit) * t);
}

// The bound of a phase in which Redis decides (before, after), or of the
// whole run before the outage's terms.
Sum RedisPhaseBound(const DemoOptions& o, double t, bool from_start) {
  Sum sum;
  if (AlignedWindows(o)) {
    const int64_t seconds = static_cast<int64_t>(std::ceil(t)) + 1;
    sum.Add("limit x aligned seconds touched",
            absl::StrFormat("%d x %d", o.limit, seconds),
            static_cast<double>(o.limit) * static_cast<double>(seconds));
    return sum;
  }
  AddRate(o, t, sum);
  // Leases (and local credit) taken before the phase may be spent in it.
  if (!from_start) AddHeld(o, sum);
  return sum;
}

void OutagePhaseBound(const DemoOptions& o, PhaseRow& row) {
  Sum sum;
  switch (o.failure_mode) {
    case FailureMode::kFailOpen:
      row.checked = false;
      row.formula = "none: fail_open admits everything while Redis is away";
      return;
    case FailureMode::kFailClosed:
      AddHeld(o, sum);
      row.note = "what the instances held when Redis went";
      break;
    case FailureMode::kFailLocal:
      sum.Add("limit x time",
              absl::StrFormat("%d x %.3f", o.limit, row.Seconds()),
              static_cast<double>(o.limit) * row.Seconds());
      sum.Add("burst", absl::StrCat(o.burst), static_cast<double>(o.burst));
      AddHeld(o, sum);
      row.note = "burst: the local shares start full";
      break;
  }
  sum.To(row);
}

void WholeRunBound(const DemoOptions& o, PhaseRow& row) {
  Sum sum = RedisPhaseBound(o, row.Seconds(), /*from_start=*/true);
  const int k = HasOutage(o) ? OutageExtraBursts(o) : 0;
  if (k < 0) {
    row.checked = false;
    row.formula = "none: fail_open turned the limit off during the outage";
    return;
  }
  if (k > 0) {
    sum.Add(absl::StrCat(k, " x burst"), absl::StrCat(k, " x ", o.burst),
            k * static_cast<double>(o.burst));
    row.note = absl::StrCat(
        k, " x burst: ",
        k == 2 ? "the local shares start full, and the shared bucket refills "
                 "while Redis is away"
               : "the restarted Redis starts full");
  }
  sum.To(row);
}

}  // namespace

double PhaseRow::Rate() const {
  return Seconds() > 0 ? static_cast<double>(hot_admitted) / Seconds() : 0;
}

int OutageExtraBursts(const DemoOptions& o) {
  if (!HasOutage(o)) return 0;
  switch (o.failure_mode) {
    case FailureMode::kFailOpen:
      return -1;
    case FailureMode::kFailLocal:
      return 2;
    case FailureMode::kFailClosed:
      break;
  }
  return o.outage_kind == OutageKind::kKill && !o.start_empty ? 1 : 0;
}

std::vector<PhaseRow> PhaseRows(
    const DemoOptions& o, double duration_s, int64_t hot_offered,
    int64_t hot_admitted,
    const std::array<PhaseCounts, kOutagePhases>& phase_counts,
    const std::array<std::vector<int64_t>, kOutagePhases>& phase_latency,
    const std::vector<int64_t>& whole_latency,
    const std::vector<HealthEvent>& events, int64_t start_ns) {
  auto ns = [&](double s) {
    return start_ns + static_cast<int64_t>(std::llround(s * 1e9));
  };
  std::vector<PhaseRow> rows;
  if (HasOutage(o)) {
    const double bounds[] = {0, std::min(o.outage_at, duration_s),
                             std::min(o.OutageEnd(), duration_s), duration_s};
    const char* const names[] = {"before the outage",
                                 o.outage_kind == OutageKind::kKill
                                     ? "during: KILLED"
                                     : "during: STOPPED",
                                 "after"};
    for (int p = 0; p < kOutagePhases; ++p) {
      PhaseRow row;
      row.name = names[p];
      row.from_s = bounds[p];
      row.to_s = bounds[p + 1];
      if (row.Seconds() <= 0) continue;  // interrupted before it
      row.hot_offered = phase_counts[p].hot_offered;
      row.hot_admitted = phase_counts[p].hot_admitted;
      row.latency = phase_latency[p];
      // Transitions before the start (the first connects) count before.
      row.transitions =
          Transitions(events, p == 0 ? INT64_MIN : ns(row.from_s),
                      p == kOutagePhases - 1 ? INT64_MAX : ns(row.to_s));
      if (p == kDuringOutage) {
        OutagePhaseBound(o, row);
      } else {
        RedisPhaseBound(o, row.Seconds(), /*from_start=*/p == kBeforeOutage)
            .To(row);
      }
      rows.push_back(std::move(row));
    }
  }
  PhaseRow whole;
  whole.name = "whole run";
  whole.to_s = duration_s;
  whole.hot_offered = hot_offered;
  whole.hot_admitted = hot_admitted;
  whole.latency = whole_latency;
  whole.transitions = Transitions(events, INT64_MIN, INT64_MAX);
  WholeRunBound(o, whole);
  rows.push_back(std::move(whole));
  return rows;
}

std::string PhaseTable(const DemoOptions& o,
                       const std::vector<PhaseRow>& rows) {
  const bool redis = o.mode != Mode::kLocal;
  std::string out = absl::StrFormat(
      "%-18s %-10s %9s %10s %8s %7s %7s %7s%s\n", "phase", "time (s)",
      o.keys == KeyDist::kHot ? "admitted" : "hottest", "rate/s", "% limit",
      "p50", "p99", "p999", redis ? "  health transitions" : "");
  for (const PhaseRow& r : rows) {
    absl::StrAppendFormat(
        &out, "%-18s %-10s %9s %10s %7.1f%% %7s %7s %7s%s\n", r.name,
        absl::StrFormat("%g-%g", Tenths(r.from_s), Tenths(r.to_s)),
        Commas(r.hot_admitted), Commas(std::llround(r.Rate())),
        100.0 * r.Rate() / o.limit, ShortNs(Percentile(r.latency, 0.50)),
        ShortNs(Percentile(r.latency, 0.99)),
        ShortNs(Percentile(r.latency, 0.999)),
        redis ? absl::StrCat("  ", r.transitions) : "");
  }
  absl::StrAppendFormat(
      &out,
      "bounds on the %s's admissions (docs/design.md, accuracy bound; "
      "docs/operations.md, failure modes):\n",
      o.keys == KeyDist::kHot ? "hot key" : "hottest key");
  for (const PhaseRow& r : rows) {
    if (!r.checked) {
      absl::StrAppendFormat(&out, "  %s: %s admitted; bound %s\n", r.name,
                            Commas(r.hot_admitted), r.formula);
      continue;
    }
    const bool within = static_cast<double>(r.hot_admitted) <= r.bound;
    absl::StrAppendFormat(&out, "  %s: %s %s %s (%s, %.1f%% of it): %s%s\n",
                          r.name, Commas(r.hot_admitted), within ? "<=" : ">",
                          Commas(std::llround(std::floor(r.bound))),
                          within ? "within" : "EXCEEDED",
                          100.0 * r.hot_admitted / r.bound, r.formula,
                          r.note.empty() ? "" : absl::StrCat("; ", r.note));
    if (!within) {
      absl::StrAppendFormat(
          &out, "BOUND EXCEEDED: %s: hot key admitted %d > %s (+%s, %.2f%%)\n",
          r.name, r.hot_admitted, Fmt(std::floor(r.bound)),
          Fmt(r.hot_admitted - std::floor(r.bound)),
          100.0 * (r.hot_admitted - r.bound) / r.bound);
    }
  }
  return out;
}

namespace {

// The earliest transition of each instance at or after `from_ns` that
// `match` accepts, as seconds since `start_ns`; instances without one are
// counted in *missing.
template <typename Match>
std::vector<double> FirstTimes(
    const std::vector<std::vector<HealthEvent>>& events, int64_t from_ns,
    int64_t start_ns, Match match, int* missing) {
  std::vector<double> times;
  *missing = 0;
  for (const std::vector<HealthEvent>& instance : events) {
    bool found = false;
    for (const HealthEvent& e : instance) {
      if (e.ns >= from_ns && match(e)) {
        times.push_back(static_cast<double>(e.ns - start_ns) / 1e9);
        found = true;
        break;
      }
    }
    if (!found) ++*missing;
  }
  std::sort(times.begin(), times.end());
  return times;
}

// "8.29 s" or "8.27-8.31 s".
std::string Span(const std::vector<double>& t) {
  if (absl::StrFormat("%.2f", t.front()) != absl::StrFormat("%.2f", t.back())) {
    return absl::StrFormat("%.2f-%.2f s", t.front(), t.back());
  }
  return absl::StrFormat("%.2f s", t.front());
}
// The timeline's time column.
std::string Column(const std::string& s) { return absl::StrFormat("%-13s", s); }
std::string At(double t) { return Column(Span({t})); }

// What the instances did once they judged Redis down.
const char* ModeAction(FailureMode m) {
  switch (m) {
    case FailureMode::kFailLocal:
      return "each instance decided alone with its share of the limit";
    case FailureMode::kFailClosed:
      return "every decision Redis could not make was denied";
    case FailureMode::kFailOpen:
      break;
  }
  return "every decision was admitted";
}

}  // namespace

std::string OutageTimeline(const DemoOptions& o,
                           const std::vector<std::vector<HealthEvent>>& events,
                           int64_t start_ns) {
  if (!HasOutage(o)) return "";
  const bool kill = o.outage_kind == OutageKind::kKill;
  std::string out =
      "outage timeline (from the instances' health transitions):\n";
  absl::StrAppendFormat(&out, "  %s  redis-server %s\n", At(o.outage_at),
                        kill ? "killed (kill -9)" : "stopped (SIGSTOP)");
  const int64_t stop_ns = start_ns + static_cast<int64_t>(o.outage_at * 1e9);
  const int64_t back_ns = start_ns + static_cast<int64_t>(o.OutageEnd() * 1e9);
  int missing = 0;
  const std::vector<double> down = FirstTimes(
      events, stop_ns, start_ns,
      [](const HealthEvent& e) { return e.to == Health::kDown; }, &missing);
  if (!down.empty()) {
    // Until the connection is judged down, a decision Redis must make
    // waits for it.
    const std::string until =
        o.mode == Mode::kDirect
            ? "until then each call waited for its reply up to its deadline "
              "and then got the failure mode's decision"
            : "until then a decision the leases could not pay was denied";
    absl::StrAppendFormat(
        &out,
        "  %s  %s judged Redis down, %.2f s after the %s (no reply for "
        "RedisOptions::down_after, %s): %s; from then on %s (%s)\n",
        Column(Span(down)), missing == 0 ? "every instance" : "instances",
        down.front() - o.outage_at, kill ? "kill" : "stop",
        absl::FormatDuration(RedisOptions{}.down_after), until,
        ModeAction(o.failure_mode), FailureModeName(o.failure_mode));
  }
  if (missing > 0) {
    absl::StrAppendFormat(&out, "  %s  %d instance%s never judged Redis down\n",
                          Column(""), missing, missing == 1 ? "" : "s");
  }
  absl::StrAppendFormat(&out, "  %s  redis-server %s\n", At(o.OutageEnd()),
                        kill ? "restarted, empty" : "resumed (SIGCONT)");
  const std::vector<double> back = FirstTimes(
      events, back_ns, start_ns,
      [](const HealthEvent& e) { return e.from == Health::kDown; }, &missing);
  const std::vector<double> healthy = FirstTimes(
      events, back_ns, start_ns,
      [](const HealthEvent& e) { return e.to == Health::kHealthy; }, &missing);
  if (!back.empty()) {
    absl::StrAppendFormat(
        &out, "  %s  the instances heard from Redis again: %s%s\n",
        Column(Span(back)),
        o.mode == Mode::kDirect ? "Redis decides again" : "leasing resumed",
        healthy.empty()
            ? ""
            : absl::StrCat("; healthy again at ", Span(healthy),
                           " (RedisOptions::degraded_hold, ",
                           absl::FormatDuration(RedisOptions{}.degraded_hold),
                           ", without a slow reply)"));
  }
  // Only leased mode charges what the mode admitted (docs/operations.md).
  if (o.mode == Mode::kLeased && o.failure_mode != FailureMode::kFailClosed &&
      o.outage_usage == OutageUsage::kCharge) {
    absl::StrAppendFormat(
        &out,
        "  %s  what %s admitted during the outage was charged to Redis "
        "(outage_usage=charge): the shared bucket started in debt of at most "
        "one burst, so the first moments after admitted less\n",
        Column("then"), FailureModeName(o.failure_mode));
  }
  return out;
}

}  // namespace tokenlease::tools
