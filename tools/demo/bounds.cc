// The bounds the summary checks (report.h): the table by outage phase, the
// outage's timeline, and the per-key figures of a zipf run.
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
#include "demo/workload.h"
#include "tokenlease/redis.h"

namespace tokenlease::tools {
namespace {

// "2 healthy->down, 1 down->degraded" for the events in [from_ns, to_ns).
std::string Transitions(const std::vector<HealthEvent>& events, int64_t from_ns,
                        int64_t to_ns) {
  std::map<std::pair<Health, Health>, int> count;  // in a stable order
  for (const HealthEvent& e : events) {
    if (e.ns >= from_ns && e.ns < to_ns) ++count[{e.from, e.to}];
  }
  std::vector<std::string> parts;
  for (const auto& [k, n] : count) {
    parts.push_back(
        absl::StrCat(n, " ", HealthName(k.first), "->", HealthName(k.second)));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

// One term of a bound: its symbols, its numbers and its value.
struct Term {
  std::string symbols, numbers;
  double value;
};

Term Burst(const DemoOptions& o, int k = 1) {
  return {k == 1 ? "burst" : absl::StrCat(k, " x burst"),
          k == 1 ? absl::StrCat(o.burst) : absl::StrCat(k, " x ", o.burst),
          k * static_cast<double>(o.burst)};
}

Term Rate(const DemoOptions& o, double t) {
  return {"limit x time", absl::StrFormat("%d x %.3f", o.limit, t),
          static_cast<double>(o.limit) * t};
}

// N x (A + M): what the instances may admit beyond a span's grants.
Term Held(const DemoOptions& o) {
  const Bounds b = ComputeBounds(o);
  const int64_t m = b.held / std::max(1, o.instances);
  return {"instances x (A + M)",
          absl::StrFormat("%d x (%d + %d)", o.instances, b.local_allowance, m),
          static_cast<double>(o.instances * (b.local_allowance + m))};
}

// "burst + limit x time = 1000 + 10000 x 8.000".
void SetBound(const std::vector<Term>& terms, PhaseRow& row) {
  std::vector<std::string> symbols, numbers;
  for (const Term& t : terms) {
    symbols.push_back(t.symbols);
    numbers.push_back(t.numbers);
    row.bound += t.value;
  }
  row.formula = absl::StrCat(absl::StrJoin(symbols, " + "), " = ",
                             absl::StrJoin(numbers, " + "));
}

// The bound of outage phase `p`, or of the whole run (p = kOutagePhases).
void Bound(const DemoOptions& o, int p, PhaseRow& row) {
  const int k = OutageExtraBursts(o);
  if ((p == kDuringOutage || p == kOutagePhases) && k < 0) {
    row.checked = false;
    row.formula = p == kDuringOutage
                      ? "none: fail_open admits everything while Redis is away"
                      : "none: fail_open turned the limit off during the "
                        "outage";
  } else if (p == kDuringOutage) {
    const bool local = o.failure_mode == FailureMode::kFailLocal;
    row.note = local ? "burst: the local shares start full"
                     : "what the instances held when Redis went";
    SetBound(local
                 ? std::vector<Term>{Rate(o, row.Seconds()), Burst(o), Held(o)}
                 : std::vector<Term>{Held(o)},
             row);
  } else if (p == kOutagePhases && o.mode == Mode::kLocal &&
             (o.algorithm == Algorithm::kFixedWindow ||
              o.algorithm == Algorithm::kSlidingWindowCounter)) {
    // A window algorithm admits at most the limit per aligned second.
    const int64_t s = static_cast<int64_t>(std::ceil(row.Seconds())) + 1;
    SetBound({{"limit x aligned seconds touched",
               absl::StrFormat("%d x %d", o.limit, s),
               static_cast<double>(o.limit * s)}},
             row);
  } else {
    std::vector<Term> terms = {Burst(o), Rate(o, row.Seconds())};
    // Leases (and local credit) taken before the phase may be spent in it.
    if (p == kAfterOutage) terms.push_back(Held(o));
    if (p == kOutagePhases && k > 0) {
      terms.push_back(Burst(o, k));
      row.note = absl::StrCat(
          k, " x burst: ",
          k == 2 ? "the local shares start full, and the shared bucket "
                   "refills while Redis is away"
                 : "the restarted Redis starts full");
    }
    SetBound(terms, row);
  }
}

}  // namespace

double PhaseRow::Rate() const {
  return Seconds() > 0 ? static_cast<double>(hot_admitted) / Seconds() : 0;
}

int OutageExtraBursts(const DemoOptions& o) {
  if (!o.HasOutage()) return 0;
  if (o.failure_mode == FailureMode::kFailOpen) return -1;
  if (o.failure_mode == FailureMode::kFailLocal) return 2;
  return o.outage_kind == OutageKind::kKill && !o.start_empty ? 1 : 0;
}

std::vector<PhaseRow> PhaseRows(const DemoOptions& o, const RunRecord& run,
                                const Totals& t) {
  const double d = t.duration_s;
  const double edges[] = {0, std::min(o.outage_at, d),
                          std::min(o.OutageEnd(), d), d};
  const char* const names[] = {
      "before the outage",
      o.outage_kind == OutageKind::kKill ? "during: KILLED" : "during: STOPPED",
      "after", "whole run"};
  std::vector<PhaseRow> rows;
  for (int p = o.HasOutage() ? 0 : kOutagePhases; p <= kOutagePhases; ++p) {
    const bool whole = p == kOutagePhases;
    PhaseRow row;
    row.name = names[p];
    row.from_s = whole ? 0 : edges[p];
    row.to_s = whole ? d : edges[p + 1];
    if (row.Seconds() <= 0 && !whole) continue;  // interrupted before it
    row.hot_admitted = whole ? t.all.hot_admitted : t.phases[p].hot_admitted;
    row.latency = Latencies(t.samples, [&](const Sample& s) {
      return whole || PhaseAt(o, s.t_ns) == p;
    });
    // Transitions before the start (the first connects) count before, and
    // after the end after.
    auto ns = [&](double s) {
      return run.start_ns + static_cast<int64_t>(std::llround(s * 1e9));
    };
    row.transitions =
        Transitions(t.events, p == 0 || whole ? INT64_MIN : ns(row.from_s),
                    p >= kAfterOutage ? INT64_MAX : ns(row.to_s));
    Bound(o, p, row);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string PhaseTable(const DemoOptions& o,
                       const std::vector<PhaseRow>& rows) {
  const bool redis = o.mode != Mode::kLocal;
  std::string out = absl::StrFormat(
      "%-18s %-10s %9s %10s %8s %7s %7s %7s%s\n", "phase", "time (s)",
      o.keys == KeyDist::kHot ? "admitted" : "hottest", "rate/s", "% limit",
      "p50", "p99", "p999", redis ? "  health transitions" : "");
  // Seconds to a tenth: a run ends a few microseconds short of its length.
  auto tenths = [](double s) { return std::round(s * 10) / 10; };
  for (const PhaseRow& r : rows) {
    absl::StrAppendFormat(
        &out, "%-18s %-10s %9s %10s %7.1f%% %7s %7s %7s%s\n", r.name,
        absl::StrFormat("%g-%g", tenths(r.from_s), tenths(r.to_s)),
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
    const double bound = std::floor(r.bound);
    const bool within = r.hot_admitted <= r.bound;
    if (!r.checked) {
      absl::StrAppendFormat(&out, "  %s: %s admitted; bound %s\n", r.name,
                            Commas(r.hot_admitted), r.formula);
      continue;
    }
    absl::StrAppendFormat(&out, "  %s: %s %s %s (%s, %.1f%% of it): %s%s\n",
                          r.name, Commas(r.hot_admitted), within ? "<=" : ">",
                          Commas(std::llround(bound)),
                          within ? "within" : "EXCEEDED",
                          100.0 * r.hot_admitted / r.bound, r.formula,
                          r.note.empty() ? "" : absl::StrCat("; ", r.note));
    if (!within) {
      absl::StrAppendFormat(
          &out, "BOUND EXCEEDED: %s: hot key admitted %d > %s (+%s, %.2f%%)\n",
          r.name, r.hot_admitted, Fmt(bound), Fmt(r.hot_admitted - bound),
          100.0 * (r.hot_admitted - r.bound) / r.bound);
    }
  }
  return out;
}

namespace {

// Each instance's first transition at or after `from_ns` to (or, with
// `from`, from) `state`, in seconds into the run, sorted; *missing counts
// the instances without one.
std::vector<double> FirstTimes(const RunRecord& run, double from_s,
                               Health state, bool from, int* missing) {
  std::vector<double> times;
  *missing = 0;
  const int64_t from_ns = run.start_ns + static_cast<int64_t>(from_s * 1e9);
  for (const InstanceReport& r : run.reports) {
    auto e = std::find_if(r.events.begin(), r.events.end(), [&](auto& e) {
      return e.ns >= from_ns && (from ? e.from : e.to) == state;
    });
    if (e == r.events.end()) {
      ++*missing;
    } else {
      times.push_back((e->ns - run.start_ns) / 1e9);
    }
  }
  std::sort(times.begin(), times.end());
  return times;
}

// "8.29 s" or "8.27-8.31 s"; `pad`: for the timeline's time column.
std::string Span(const std::vector<double>& t, bool pad = true) {
  std::string s = absl::StrFormat("%.2f s", t.front());
  if (absl::StrFormat("%.2f", t.front()) != absl::StrFormat("%.2f", t.back())) {
    s = absl::StrFormat("%.2f-%.2f s", t.front(), t.back());
  }
  return pad ? absl::StrFormat("%-13s", s) : s;
}

}  // namespace

std::string OutageTimeline(const DemoOptions& o, const RunRecord& run) {
  if (!o.HasOutage()) return "";
  const bool kill = o.outage_kind == OutageKind::kKill;
  const char* mode = FailureModeName(o.failure_mode);
  std::string out = absl::StrFormat(
      "outage timeline (from the instances' health transitions):\n  %s  "
      "redis-server %s\n",
      Span({o.outage_at}), kill ? "killed (kill -9)" : "stopped (SIGSTOP)");
  int missing = 0;
  const std::vector<double> down =
      FirstTimes(run, o.outage_at, Health::kDown, false, &missing);
  if (!down.empty()) {
    // Until the connection is judged down, a decision Redis must make
    // waits for it.
    absl::StrAppendFormat(
        &out,
        "  %s  %s judged Redis down, %.2f s after the %s (no reply for "
        "RedisOptions::down_after, %s): until then %s; from then on %s (%s)\n",
        Span(down), missing == 0 ? "every instance" : "instances",
        down.front() - o.outage_at, kill ? "kill" : "stop",
        absl::FormatDuration(RedisOptions{}.down_after),
        o.mode == Mode::kDirect
            ? "each call waited for its reply up to its deadline and then "
              "got the failure mode's decision"
            : "a decision the leases could not pay was denied",
        o.failure_mode == FailureMode::kFailLocal
            ? "each instance decided alone with its share of the limit"
        : o.failure_mode == FailureMode::kFailClosed
            ? "every decision Redis could not make was denied"
            : "every decision was admitted",
        mode);
  }
  if (missing > 0) {
    absl::StrAppendFormat(&out,
                          "  %13s  %d instance%s never judged Redis down\n", "",
                          missing, missing == 1 ? "" : "s");
  }
  absl::StrAppendFormat(&out, "  %s  redis-server %s\n", Span({o.OutageEnd()}),
                        kill ? "restarted, empty" : "resumed (SIGCONT)");
  const std::vector<double> back =
      FirstTimes(run, o.OutageEnd(), Health::kDown, true, &missing);
  const std::vector<double> healthy =
      FirstTimes(run, o.OutageEnd(), Health::kHealthy, false, &missing);
  if (!back.empty()) {
    absl::StrAppendFormat(
        &out, "  %s  the instances heard from Redis again: %s%s\n", Span(back),
        o.mode == Mode::kDirect ? "Redis decides again" : "leasing resumed",
        healthy.empty()
            ? ""
            : absl::StrCat("; healthy again at ", Span(healthy, false),
                           " (RedisOptions::degraded_hold, ",
                           absl::FormatDuration(RedisOptions{}.degraded_hold),
                           ", without a slow reply)"));
  }
  // Only leased mode charges what the mode admitted (docs/operations.md).
  if (o.mode == Mode::kLeased && o.failure_mode != FailureMode::kFailClosed &&
      o.outage_usage == OutageUsage::kCharge) {
    absl::StrAppendFormat(
        &out,
        "  %-13s  what %s admitted during the outage was charged to Redis "
        "(outage_usage=charge): the shared bucket started in debt of at most "
        "one burst, so the first moments after admitted less\n",
        "then", mode);
  }
  return out;
}

double PerKeyBound::Ideal() const { return burst + limit * duration_s; }

double PerKeyBound::Value() const {
  return Ideal() + static_cast<double>(instances * (local_allowance + held));
}

std::string PerKeyBound::Formula() const {
  return absl::StrFormat(
      "burst + limit x duration + instances x (A + M) = %d + %d x %.3f + %d x "
      "(%d + %d) = %s",
      burst, limit, duration_s, instances, local_allowance, held, Fmt(Value()));
}

PerKeyBound ComputePerKeyBound(const DemoOptions& o, double duration_s) {
  const Bounds b = ComputeBounds(o);
  return {
      b.burst,   o.limit, o.instances, b.local_allowance, b.held / o.instances,
      duration_s};
}

std::string PerKeySummary(const DemoOptions& o, const Totals& t, size_t worst) {
  const PerKeyBound bound = ComputePerKeyBound(o, t.duration_s);
  const Bounds b = ComputeBounds(o);
  // The run, then the Zipf rank groups [first, the next group's first) that
  // the key set reaches.
  struct Group {
    int64_t first = 0, keys = 0, offered = 0, admitted = 0;
    double ideal = 0;
  };
  std::vector<Group> g(1);
  for (int64_t first : {0, 100, 1000, 10000}) {
    if (first < o.zipf_keys) g.push_back({first});
  }
  std::vector<KeyCount> over;
  KeyCount max_key;
  for (const KeyCount& k : t.per_key) {
    size_t i = 1;
    while (i + 1 < g.size() && k.rank >= g[i + 1].first) ++i;
    for (Group* x : {&g[0], &g[i]}) {
      ++x->keys;
      x->offered += k.offered;
      x->admitted += k.admitted;
      x->ideal += std::min<double>(k.offered, bound.Ideal());
    }
    if (k.admitted > max_key.admitted) max_key = k;
    if (k.admitted > bound.Value()) over.push_back(k);
  }
  auto pct = [](double part, double whole) {
    return whole > 0 ? 100.0 * part / whole : 0.0;
  };
  std::string out = absl::StrFormat(
      "per-key ideal admission (sum over the %d keys offered anything of "
      "min(offered, burst + limit x duration = %s)): %s; admitted %d = "
      "%.2f%% of it (offered %d)\n",
      g[0].keys, Fmt(bound.Ideal()), Fmt(g[0].ideal), g[0].admitted,
      pct(g[0].admitted, g[0].ideal), g[0].offered);
  for (size_t i = 1; i < g.size(); ++i) {
    absl::StrAppendFormat(
        &out,
        "  Zipf ranks %s: %d keys offered anything, offered %d, ideal %s, "
        "admitted %d = %.2f%% of ideal\n",
        i + 1 < g.size() ? absl::StrCat(g[i].first, "-", g[i + 1].first - 1)
                         : absl::StrCat(g[i].first, "+"),
        g[i].keys, g[i].offered, Fmt(g[i].ideal), g[i].admitted,
        pct(g[i].admitted, g[i].ideal));
  }
  const std::string m =
      absl::StrFormat("M = 2 x max lease - 1 = 2 x %d - 1", b.max_lease);
  absl::StrAppendFormat(
      &out,
      "per-key bound = %s (%s)\nkeys over their bound: %d of %d%s; largest "
      "admitted / bound %.4f (%s, rank %d: admitted %d of %s)\n",
      bound.Formula(),
      o.mode != Mode::kLeased
          ? absl::StrCat("A = M = 0 in ", ModeName(o.mode), " mode")
      : o.cold_key_policy == ColdKeyPolicy::kLocalShare
          ? absl::StrFormat("A = max(1, floor(local_share x burst)) = max(1, "
                            "floor(%g x %d)) = %d; %s",
                            o.local_share, b.burst, b.local_allowance, m)
          : absl::StrFormat("A = 0 with --cold_key_policy=%s; %s",
                            FlagText(o, "cold_key_policy"), m),
      over.size(), g[0].keys, over.empty() ? " (within)" : "",
      max_key.admitted / bound.Value(), KeyName(o, max_key.rank), max_key.rank,
      max_key.admitted, Fmt(bound.Value()));
  std::stable_sort(over.begin(), over.end(),
                   [](auto& x, auto& y) { return x.admitted > y.admitted; });
  if (!over.empty()) {
    absl::StrAppendFormat(&out, "KEYS OVER BOUND: %d (the worst %d:)\n",
                          over.size(), std::min(worst, over.size()));
  }
  for (size_t i = 0; i < over.size() && i < worst; ++i) {
    absl::StrAppendFormat(
        &out, "KEYS OVER BOUND: %s rank %d admitted %d > bound %s (+%s)\n",
        KeyName(o, over[i].rank), over[i].rank, over[i].admitted,
        Fmt(bound.Value()), Fmt(over[i].admitted - bound.Value()));
  }
  return out;
}

}  // namespace tokenlease::tools
