// The banner, the sums, the CSV, the bounds and the summary of a run
// (report.h).
#include "demo/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

double WindowSeconds(const DemoOptions& o) { return o.window_ms / 1000.0; }

double Pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

// "12 samples: p50 80ns, p99 1.10us, p999 3.00us, max 50.0us".
std::string LatencyFigures(const std::vector<int64_t>& sorted) {
  return absl::StrFormat("%d samples: p50 %s, p99 %s, p999 %s, max %s",
                         sorted.size(), ShortNs(Percentile(sorted, 0.50)),
                         ShortNs(Percentile(sorted, 0.99)),
                         ShortNs(Percentile(sorted, 0.999)),
                         ShortNs(sorted.empty() ? 0 : sorted.back()));
}

// A window algorithm admits at most L per aligned second it touches.
bool WindowAlgorithm(const DemoOptions& o) {
  return o.mode == Mode::kLocal &&
         (o.algorithm == Algorithm::kFixedWindow ||
          o.algorithm == Algorithm::kSlidingWindowCounter);
}

// The busiest span of about 1 s (whole windows) of the hot key; admitted
// -1 if the run had none (with fail_open: none clear of the outage).
PhaseRow Busiest(const DemoOptions& o, const Totals& t) {
  const int64_t span = std::max(1, 1000 / o.window_ms);
  const double len = WindowSeconds(o);
  PhaseRow row;
  row.name = absl::StrFormat("busiest %g s", span * len);
  row.admitted = -1;
  for (size_t w = 0; w + span <= t.windows.size(); ++w) {
    if (OutageExtraBursts(o) < 0 && w * len < o.OutageEnd() &&
        (w + span) * len > o.outage_at) {
      continue;
    }
    int64_t n = 0;
    for (size_t k = w; k < w + span; ++k) n += t.windows[k].counts.hot_admitted;
    if (n > row.admitted) {
      row.admitted = n;
      row.from_s = w * len;
      row.to_s = (w + span) * len;
    }
  }
  row.bound = BoundOf(o, Span::kBusiest, span * len);
  return row;
}

// When each instance's connection first went to `state` (or, `leaving`,
// left it) at or after `from_s`: "8.27 s", "8.27-8.31 s", with "(1 never)"
// for the instances that did not; "never" if none did.
std::string FirstTimes(const RunRecord& run, double from_s, Health state,
                       bool leaving) {
  std::vector<double> times;
  const int64_t from_ns = run.start_ns + static_cast<int64_t>(from_s * 1e9);
  for (const InstanceReport& r : run.reports) {
    for (const HealthEvent& e : r.events) {
      if (e.ns >= from_ns && (leaving ? e.from : e.to) == state) {
        times.push_back((e.ns - run.start_ns) / 1e9);
        break;
      }
    }
  }
  if (times.empty()) return "never";
  std::sort(times.begin(), times.end());
  std::string s = absl::StrFormat("%.2f", times.front());
  if (const std::string last = absl::StrFormat("%.2f", times.back());
      last != s) {
    absl::StrAppend(&s, "-", last);
  }
  const size_t missing = run.reports.size() - times.size();
  return absl::StrCat(
      s, " s", missing > 0 ? absl::StrCat(" (", missing, " never)") : "");
}

// The table of PhaseRows and the meaning of its symbols; a BOUND EXCEEDED
// line per row over its bound.
std::string Table(const DemoOptions& o, const std::vector<PhaseRow>& rows) {
  std::string out = absl::StrFormat(
      "%s admissions (%% of the limit of %s/s, and of their bound):\n"
      "%-12s %-9s %10s %7s %10s %7s %7s %7s %7s  %s\n",
      o.keys == KeyDist::kHot ? "the hot key's" : "the hottest key's (rank 0)",
      Commas(o.limit), "phase", "time (s)", "admitted", "% limit", "bound",
      "% bound", "p50", "p99", "p999", "formula");
  // Seconds to a tenth: a run ends a few microseconds short of its length.
  auto tenths = [](double s) { return std::round(s * 10) / 10; };
  std::string exceeded;
  for (const PhaseRow& r : rows) {
    auto latency = [&](double q) {
      return r.latency.empty() ? "" : ShortNs(Percentile(r.latency, q));
    };
    const double bound = std::floor(r.bound.value);
    absl::StrAppendFormat(
        &out, "%-12s %-9s %10s %6.1f%% %10s %7s %7s %7s %7s  %s\n", r.name,
        absl::StrFormat("%g-%g", tenths(r.from_s), tenths(r.to_s)),
        Commas(r.admitted), Pct(r.Rate(), o.limit),
        bound < 0 ? "-" : Commas(static_cast<int64_t>(bound)),
        bound < 0 ? "-" : absl::StrFormat("%.1f%%", Pct(r.admitted, bound)),
        latency(0.5), latency(0.99), latency(0.999), r.bound.formula);
    if (bound >= 0 && r.admitted > bound) {
      absl::StrAppendFormat(&exceeded, "BOUND EXCEEDED: %s: admitted %d > %s\n",
                            r.name, r.admitted, Fmt(bound));
    }
  }
  const Symbols s = SymbolsOf(o);
  const int k = OutageExtraBursts(o);
  absl::StrAppendFormat(
      &out,
      "L = %s/s, B = %s, N = %d, %s, t = the span's seconds%s (docs/design.md, "
      "accuracy bound; docs/operations.md, failure modes)\n",
      Commas(o.limit), Commas(o.burst), o.instances,
      o.mode == Mode::kLeased
          ? absl::StrFormat("A = %d (local share), M = %d (2 x max lease - 1)",
                            s.local_allowance, s.held)
          : absl::StrCat("A = M = 0 (", ModeName(o.mode), " mode)"),
      k > 0 ? absl::StrCat(", ", k, " B = the outage's extra bursts") : "");
  return out + exceeded;
}

}  // namespace

int64_t Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(
      sorted.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) -
          (q > 0 ? 1 : 0));
  return sorted[i];
}

std::string Fmt(double v) { return absl::StrFormat("%.0f", v); }

std::string Commas(int64_t v) {
  const std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string ShortNs(int64_t ns) {
  if (ns < 1'000) return absl::StrCat(ns, "ns");
  // Three significant digits: enough to compare runs, narrow enough for a
  // column.
  const bool us = ns < 1'000'000;
  const double v = ns / (us ? 1e3 : 1e6);
  return absl::StrFormat(v < 10    ? "%.2f%s"
                         : v < 100 ? "%.1f%s"
                                   : "%.0f%s",
                         v, us ? "us" : "ms");
}

double Totals::Metric(const std::string& series) const {
  const auto it = metrics.find(series);
  return it == metrics.end() ? 0 : it->second;
}

Totals Aggregate(const RunRecord& run) {
  Totals t;
  t.windows.resize(run.windows);
  for (Window& w : t.windows) w.keys = w.rss_kb = w.commands = 0;
  std::vector<KeyCount> keys;
  for (const InstanceReport& r : run.reports) {
    for (int64_t w = 0; w < run.windows; ++w) {
      const Window& x = r.windows[w];
      Window& sum = t.windows[w];
      sum.counts += x.counts;
      sum.keys += std::max<int64_t>(0, x.keys);
      sum.rss_kb += std::max<int64_t>(0, x.rss_kb);
      sum.commands += std::max<int64_t>(0, x.commands);
      t.all += x.counts;
    }
    for (int p = 0; p < kOutagePhases; ++p) t.phases[p] += r.phases[p];
    t.samples.insert(t.samples.end(), r.samples.begin(), r.samples.end());
    keys.insert(keys.end(), r.keys.begin(), r.keys.end());
    for (const auto& [series, value] : r.metrics) t.metrics[series] += value;
    t.last_ns = std::max(t.last_ns, r.last_ns);
    t.commands_with_shutdown += r.commands_with_shutdown;
    for (const HealthEvent& e : r.events) {
      if (e.to != Health::kDown) continue;
      const double s = (e.ns - run.start_ns) / 1e9;
      if (t.first_down_s < 0 || s < t.first_down_s) t.first_down_s = s;
    }
  }
  t.per_key = SumByRank(std::move(keys));
  t.duration_s = (t.last_ns - run.start_ns) / 1e9;
  return t;
}

std::vector<int64_t> Latencies(const std::vector<Sample>& samples,
                               absl::FunctionRef<bool(const Sample&)> keep) {
  std::vector<int64_t> out;
  for (const Sample& s : samples) {
    if (keep(s)) out.push_back(s.ns);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Symbols SymbolsOf(const DemoOptions& o) {
  Symbols s;
  s.max_lease = std::max<int64_t>(1, o.max_lease_fraction * o.burst);
  const bool leased = o.mode == Mode::kLeased;
  s.held = leased ? 2 * s.max_lease - 1 : 0;
  if (leased && o.cold_key_policy == ColdKeyPolicy::kLocalShare) {
    s.local_allowance = std::max<int64_t>(1, o.local_share * o.burst);
  }
  return s;
}

int OutageExtraBursts(const DemoOptions& o) {
  if (!o.HasOutage()) return 0;
  if (o.failure_mode == FailureMode::kFailOpen) return -1;
  if (o.failure_mode == FailureMode::kFailLocal) return 2;
  return o.outage_kind == OutageKind::kKill && !o.start_empty ? 1 : 0;
}

Bound BoundOf(const DemoOptions& o, Span span, double seconds,
              bool unplanned_outage) {
  const int k = OutageExtraBursts(o);
  const bool outage_terms = span == Span::kWhole || span == Span::kBusiest ||
                            (span == Span::kBefore && unplanned_outage);
  if (k < 0 && (span == Span::kDuring || span == Span::kWhole ||
                (span == Span::kBefore && unplanned_outage))) {
    return {-1, "none (fail_open)"};
  }
  if (WindowAlgorithm(o) && (span == Span::kWhole || span == Span::kBusiest)) {
    return {static_cast<double>(o.limit) * (std::ceil(seconds - 1e-9) + 1),
            "L x aligned seconds touched"};
  }
  const Symbols s = SymbolsOf(o);
  Bound b{0, ""};
  auto add = [&](double value, const std::string& term) {
    if (value == 0) return;
    b.value += value;
    absl::StrAppend(&b.formula, b.formula.empty() ? "" : " + ", term);
  };
  // fail_closed admits nothing new while Redis is away: only what was held.
  if (span != Span::kDuring || o.failure_mode == FailureMode::kFailLocal) {
    add(static_cast<double>(o.limit) * seconds, "L t");
    add(static_cast<double>(o.burst), "B");
  }
  if (outage_terms && k > 0) {
    add(k * static_cast<double>(o.burst), absl::StrCat(k, " B"));
  }
  // Leases (and local credit) taken before a span may be spent in it.
  if (span == Span::kBusiest) {
    add(static_cast<double>(o.instances * s.held), "N M");
  } else if ((span != Span::kBefore || unplanned_outage) &&
             span != Span::kWhole) {
    add(static_cast<double>(o.instances * (s.local_allowance + s.held)),
        "N (A + M)");
  }
  if (b.formula.empty()) b.formula = "0";
  return b;
}

double PhaseRow::Rate() const {
  return Seconds() > 0 ? static_cast<double>(admitted) / Seconds() : 0;
}

std::vector<PhaseRow> PhaseRows(const DemoOptions& o, const Totals& t) {
  const double d = t.duration_s;
  const double edges[] = {0, std::min(o.outage_at, d),
                          std::min(o.OutageEnd(), d), d};
  const char* const names[] = {"before", "during", "after", "whole run"};
  std::vector<PhaseRow> rows;
  for (int p = o.HasOutage() ? 0 : kOutagePhases; p <= kOutagePhases; ++p) {
    const bool whole = p == kOutagePhases;
    PhaseRow row;
    row.name = names[p];
    row.from_s = whole ? 0 : edges[p];
    row.to_s = whole ? d : edges[p + 1];
    if (row.Seconds() <= 0 && !whole) continue;  // interrupted before it
    row.admitted = whole ? t.all.hot_admitted : t.phases[p].hot_admitted;
    const bool unplanned =
        p == kBeforeOutage && t.first_down_s >= 0 && t.first_down_s < row.to_s;
    row.bound = BoundOf(o, static_cast<Span>(p), row.Seconds(), unplanned);
    if (unplanned) row.name = "before*";
    row.latency = Latencies(t.samples, [&](const Sample& s) {
      return whole || PhaseAt(o, s.t_ns) == p;
    });
    rows.push_back(std::move(row));
  }
  if (PhaseRow b = Busiest(o, t); b.admitted >= 0) rows.push_back(b);
  return rows;
}

std::string OutageTarget(const DemoOptions& o) {
  if (o.redis == RedisKind::kSingle) return "redis-server";
  return o.keys == KeyDist::kHot ? "the hot key's primary"
                                 : "the hottest key's primary";
}

std::string Banner(const DemoOptions& o, const std::string& choices) {
  const Symbols s = SymbolsOf(o);
  std::string out = absl::StrFormat(
      "tokenlease demo, scenario %s, %s mode: %s/s%s, %s, for %g s\n%s",
      o.keys == KeyDist::kHot
          ? "hot (one key shared by every instance)"
          : absl::StrFormat("zipf (%s keys drawn with Zipf s=%g, each with "
                            "its own limit)",
                            Commas(o.zipf_keys), o.zipf_s),
      ModeName(o.mode), Commas(o.limit),
      o.keys == KeyDist::kHot ? "" : " per key",
      o.algorithm == Algorithm::kTokenBucket
          ? absl::StrCat("burst ", Commas(o.burst))
          : AlgorithmName(o.algorithm),
      o.seconds, choices);
  if (o.mode == Mode::kLeased) {
    absl::StrAppendFormat(
        &out,
        "leases: lease_ttl=%dms max_lease_fraction=%g (max lease %d) "
        "cold_key_policy=%s local_share=%g (A = %d) charge_delay=%dms "
        "idle_evict=%dms\n",
        o.lease_ttl_ms, o.max_lease_fraction, s.max_lease,
        FlagText(o, "cold_key_policy"), o.local_share, s.local_allowance,
        o.charge_delay_ms, o.idle_evict_ms);
  } else if (o.mode == Mode::kLocal) {
    absl::StrAppend(&out, "local: each instance alone with ",
                    DescribeSpec(LocalSpec(o)), " (limit / N)\n");
  }
  if (!o.HasOutage()) return out;
  absl::StrAppendFormat(
      &out, "outage: %s %s from %g s to %g s; failure_mode=%s%s%s%s\n",
      OutageTarget(o),
      o.redis == RedisKind::kCluster
          ? (o.outage_kind == OutageKind::kKill
                 ? "killed (kill -9; its replica takes over, it rejoins as one)"
                 : "stopped (SIGSTOP, then SIGCONT; past ~2 s, fails over)")
      : o.outage_kind == OutageKind::kKill ? "killed (kill -9, restarted empty)"
                                           : "stopped (SIGSTOP, then SIGCONT)",
      o.outage_at, o.OutageEnd(), FailureModeName(o.failure_mode),
      o.failure_mode == FailureMode::kFailLocal
          ? absl::StrCat(" (each instance enforces limit / N alone, N ",
                         o.discover_instances
                             ? "counted in Redis"
                             : absl::StrCat("= ", o.FallbackInstances()),
                         ")")
          : "",
      o.mode == Mode::kLeased
          ? absl::StrCat(", outage_usage=", FlagText(o, "outage_usage"))
          : "",
      o.start_empty ? ", start_empty" : "");
  return out;
}

std::string AutoPath(const DemoOptions& o, const char* extension,
                     std::time_t now) {
  const char* tmp = std::getenv("TMPDIR");
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  return absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                      "/tokenlease_demo_", ModeName(o.mode), "_",
                      KeyDistName(o.keys), "_", stamp, ".", extension);
}

absl::Status WriteFile(const std::string& path, const std::string& text,
                       const char* flag) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  bool ok = f != nullptr &&
            std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  if (f != nullptr && std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok) return absl::OkStatus();
  return absl::ErrnoToStatus(
      err, absl::StrFormat("cannot write %s (--%s=PATH for another file, "
                           "--%s= for none)",
                           path, flag, flag));
}

std::string CsvText(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis) {
  std::string out =
      "window_start_s,instance,offered,admitted,limit_bound,hot_offered,"
      "hot_admitted,keys,rss_kb,redis_commands_total,redis_used_memory,"
      "phase\n";
  for (int64_t w = 0; w < run.windows; ++w) {
    const double start = w * WindowSeconds(o);
    const char* phase = !o.HasOutage()          ? "none"
                        : start < o.outage_at   ? "before"
                        : start < o.OutageEnd() ? "during"
                                                : "after";
    for (size_t i = 0; i <= run.reports.size(); ++i) {
      const bool all = i == run.reports.size();
      const Window& x = all ? t.windows[w] : run.reports[i].windows[w];
      const Counts& c = x.counts;
      const int64_t mems = redis.mem_per_window.size();
      absl::StrAppendFormat(
          &out, "%g,%s,%d,%d,%g,%d,%d,%d,%d,%d,%s,%s\n", start,
          all ? "all" : absl::StrCat(i), c.offered, c.admitted,
          o.limit * WindowSeconds(o), c.hot_offered, c.hot_admitted, x.keys,
          x.rss_kb, x.commands,
          !all ? "" : absl::StrCat(w < mems ? redis.mem_per_window[w] : -1),
          phase);
    }
  }
  return out;
}

std::string PerKeySummary(const DemoOptions& o, const Totals& t, size_t worst) {
  const Bound bound = BoundOf(o, Span::kKey, t.duration_s);
  const double ideal = o.limit * t.duration_s + o.burst;  // L t + B
  // The run, then the Zipf rank groups [first, the next group's first)
  // that the key set reaches.
  struct Group {
    int64_t first = 0, keys = 0, admitted = 0;
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
      x->admitted += k.admitted;
      x->ideal += std::min<double>(k.offered, ideal);
    }
    if (k.admitted > max_key.admitted) max_key = k;
    if (k.admitted > bound.value) over.push_back(k);
  }
  std::vector<std::string> groups;
  for (size_t i = 1; i < g.size(); ++i) {
    groups.push_back(absl::StrCat(
        g[i].first,
        i + 1 < g.size() ? absl::StrCat("-", g[i + 1].first - 1) : "+", " ",
        g[i].keys == 0
            ? "-"
            : absl::StrFormat("%.2f%%", Pct(g[i].admitted, g[i].ideal))));
  }
  std::string out = absl::StrFormat(
      "per key: %s keys offered anything admitted %.2f%% of their ideal, the "
      "sum of min(offered, L t + B = %s) (ranks %s)\nkeys over their bound "
      "%s = %s: %d of %d; largest admitted / bound %.4f (%s)\n",
      Commas(g[0].keys), Pct(g[0].admitted, g[0].ideal), Fmt(ideal),
      absl::StrJoin(groups, ", "), bound.formula, Fmt(bound.value), over.size(),
      g[0].keys, max_key.admitted / bound.value, KeyName(o, max_key.rank));
  std::stable_sort(over.begin(), over.end(),
                   [](auto& x, auto& y) { return x.admitted > y.admitted; });
  for (size_t i = 0; i < over.size() && i < worst; ++i) {
    absl::StrAppendFormat(&out, "KEYS OVER BOUND: %s admitted %d > %s\n",
                          KeyName(o, over[i].rank), over[i].admitted,
                          Fmt(bound.value));
  }
  return out;
}

std::string Summary(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis) {
  std::string out = absl::StrFormat(
      "\n== summary (%s, %s%s) ==\n", ModeName(o.mode), KeyDistName(o.keys),
      o.HasOutage()
          ? absl::StrFormat(", outage %g-%g s, %s", o.outage_at, o.OutageEnd(),
                            FailureModeName(o.failure_mode))
          : "");
  if (run.interrupted_ns != 0) {
    absl::StrAppendFormat(&out,
                          "interrupted (SIGINT) at %.3f s of %g s: the %d "
                          "windows that ran, the last one partial\n",
                          (run.interrupted_ns - run.start_ns) / 1e9, o.seconds,
                          run.windows);
  }
  out += Table(o, PhaseRows(o, t));
  if (o.HasOutage() && t.first_down_s >= 0 && t.first_down_s < o.outage_at) {
    absl::StrAppendFormat(
        &out,
        "before*: an instance judged Redis down at %.2f s, "
        "before the planned outage (a stalled server): the "
        "failure mode decided, and the outage's terms apply\n",
        t.first_down_s);
  }
  if (o.HasOutage()) {
    // When the instances judged Redis down (no reply for down_after) and
    // heard from it again: the outage as they lived it. A cluster is
    // degraded while a primary is down, until its replica takes over.
    const bool cluster = o.redis == RedisKind::kCluster;
    const Health away = cluster ? Health::kDegraded : Health::kDown;
    const double back = cluster ? o.outage_at : o.OutageEnd();
    absl::StrAppendFormat(
        &out,
        "outage: judged Redis %s: %s; heard from it again: %s; healthy: %s\n",
        cluster ? "degraded (a primary down)" : "down",
        FirstTimes(run, o.outage_at, away, false),
        FirstTimes(run, back, away, true),
        FirstTimes(run, back, Health::kHealthy, false));
  }
  std::vector<std::string> per_instance;
  for (const InstanceReport& r : run.reports) {
    Counts c;
    for (int64_t w = 0; w < run.windows; ++w) c += r.windows[w].counts;
    per_instance.push_back(absl::StrFormat("%s (%d MiB)", Commas(c.admitted),
                                           r.peak_rss_kb / 1024));
  }
  const double rate = t.all.offered / t.duration_s;
  absl::StrAppendFormat(
      &out,
      "load: offered %s in %.3f s = %s/s (%.1f%% of %s/s); admitted %s "
      "(%.2f%%); per instance admitted (peak RSS) %s\n",
      Commas(t.all.offered), t.duration_s, Commas(std::llround(rate)),
      Pct(rate, o.offered), Commas(std::llround(o.offered)),
      Commas(t.all.admitted), Pct(t.all.admitted, t.all.offered),
      absl::StrJoin(per_instance, " / "));
  if (o.keys == KeyDist::kZipf) {
    const int64_t n = HotKeys(o);
    absl::StrAppendFormat(
        &out,
        "latency, 1 in %d timed: hot keys (%s: offered >= %g%% of the "
        "limit) %s; cold keys %s\n",
        o.sample_every, n == 0 ? "none" : absl::StrCat("ranks 0-", n - 1),
        100 * kHotFraction,
        LatencyFigures(Latencies(t.samples, [](auto& s) { return s.hot; })),
        LatencyFigures(Latencies(t.samples, [](auto& s) { return !s.hot; })));
    out += PerKeySummary(o, t);
  }
  if (o.mode != Mode::kLocal) {
    auto m = [&](const char* name) {
      return static_cast<int64_t>(t.Metric(absl::StrCat("tokenlease_", name)));
    };
    // Direct calls made on a caller lane are counted apart.
    const int64_t commands =
        m("redis_commands_total") + m("redis_lane_calls_total");
    const double offered = t.all.offered;
    absl::StrAppendFormat(
        &out,
        "redis: %d commands (%d with the shutdown's), %.1f decisions per "
        "command; %d timeouts, %d late replies, %d resets, %d errors\n",
        commands, t.commands_with_shutdown, commands ? offered / commands : 0.0,
        m("redis_timeouts_total"), m("redis_late_replies_total"),
        m("redis_resets_total"), m("redis_errors_total"));
    if (redis.restarted) {
      out += "redis server: restarted by the outage, its counters lost\n";
    } else if (redis.ok) {
      absl::StrAppendFormat(
          &out,
          "redis %s: %d script calls, %.3f us in scripts per decision "
          "(%.2f us per call)%s\n",
          redis.node_cpu_usec.empty() ? "server" : "primaries",
          redis.script_calls, redis.script_usec / std::max(offered, 1.0),
          redis.script_usec / std::max<double>(redis.script_calls, 1),
          redis.cpu_usec < 0
              ? ""
              : absl::StrFormat(", %.3f us of CPU per decision",
                                redis.cpu_usec / std::max(offered, 1.0)));
    }
    if (!redis.node_cpu_usec.empty()) {
      std::vector<std::string> each;
      double most = 0;
      for (const auto& [node, usec] : redis.node_cpu_usec) {
        each.push_back(absl::StrFormat("%s %.3f s", node, usec / 1e6));
        most = std::max<double>(most, usec);
      }
      absl::StrAppendFormat(
          &out, "redis CPU by node: %s; the busiest %.2fx the average\n",
          absl::StrJoin(each, ", "),
          most * each.size() / std::max<double>(redis.cpu_usec, 1));
    }
    if (o.mode == Mode::kLeased) {
      absl::StrAppendFormat(
          &out,
          "leases: %d requests, %d tokens granted, %d returned, %d refused; "
          "%d charges (%d tokens); %d new keys without a spare entry; "
          "%d sliced keys at the end (summed over instances)\n",
          m("lease_requests_total"), m("tokens_granted_total"),
          m("tokens_returned_total"), m("lease_refusals_total"),
          m("charges_total"), m("tokens_charged_total"),
          m("spare_misses_total"), m("sliced_keys"));
    }
  }
  if (!o.csv.empty()) absl::StrAppend(&out, "csv: ", o.csv, "\n");
  return out;
}

}  // namespace tokenlease::tools
