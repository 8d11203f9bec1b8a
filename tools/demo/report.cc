// The banner, aggregation, CSV and summary of a run (report.h).
#include "demo/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/format.h"
#include "demo/per_key.h"
#include "demo/phases.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

double WindowSeconds(const DemoOptions& o) { return o.window_ms / 1000.0; }

const char* HotKeyName(const DemoOptions& o) {
  return o.keys == KeyDist::kHot ? "hot key" : "hottest key (rank 0)";
}

// Window w summed over the instances (keys, RSS and commands: the sampled
// values that exist).
WindowCounts SumWindow(const RunRecord& run, int64_t w) {
  WindowCounts sum;
  sum.keys = sum.rss_kb = sum.commands = 0;
  for (const InstanceReport& r : run.reports) {
    const WindowCounts& x = r.windows[w];
    sum.offered += x.offered;
    sum.admitted += x.admitted;
    sum.hot_offered += x.hot_offered;
    sum.hot_admitted += x.hot_admitted;
    sum.keys += std::max<int64_t>(0, x.keys);
    sum.rss_kb += std::max<int64_t>(0, x.rss_kb);
    sum.commands += std::max<int64_t>(0, x.commands);
  }
  return sum;
}

}  // namespace

Bounds ComputeBounds(const DemoOptions& o) {
  Bounds b;
  b.burst = o.burst;
  b.max_lease =
      std::max<int64_t>(1, static_cast<int64_t>(o.max_lease_fraction *
                                                static_cast<double>(o.burst)));
  b.held = o.mode == Mode::kLeased
               ? static_cast<int64_t>(
                     o.instances * (2 * static_cast<double>(b.max_lease) - 1))
               : 0;
  b.local_allowance =
      o.mode == Mode::kLeased && o.cold_key_policy == ColdKeyPolicy::kLocalShare
          ? std::max<int64_t>(
                1, static_cast<int64_t>(o.local_share *
                                        static_cast<double>(b.burst)))
          : 0;
  return b;
}

Totals Aggregate(const RunRecord& run) {
  Totals t;
  for (int64_t w = 0; w < run.windows; ++w) {
    t.all.push_back(SumWindow(run, w));
    t.offered += t.all.back().offered;
    t.admitted += t.all.back().admitted;
    t.hot_offered += t.all.back().hot_offered;
    t.hot_admitted += t.all.back().hot_admitted;
  }
  std::vector<KeyCount> per_key;
  for (const InstanceReport& r : run.reports) {
    t.last_ns = std::max(t.last_ns, r.timing.last_ns);
    t.errors += r.timing.errors;
    t.latency.insert(t.latency.end(), r.latency.begin(), r.latency.end());
    t.latency_hot.insert(t.latency_hot.end(), r.latency_hot.begin(),
                         r.latency_hot.end());
    t.latency_cold.insert(t.latency_cold.end(), r.latency_cold.begin(),
                          r.latency_cold.end());
    for (int p = 0; p < kOutagePhases; ++p) {
      t.latency_phase[p].insert(t.latency_phase[p].end(),
                                r.latency_phase[p].begin(),
                                r.latency_phase[p].end());
      t.phases[p].offered += r.phases[p].offered;
      t.phases[p].admitted += r.phases[p].admitted;
      t.phases[p].hot_offered += r.phases[p].hot_offered;
      t.phases[p].hot_admitted += r.phases[p].hot_admitted;
    }
    t.health_events.insert(t.health_events.end(), r.health_events.begin(),
                           r.health_events.end());
    per_key.insert(per_key.end(), r.key_counts.begin(), r.key_counts.end());
    t.stats += r.stats;
  }
  for (std::vector<int64_t>* v :
       {&t.latency, &t.latency_hot, &t.latency_cold, &t.latency_phase[0],
        &t.latency_phase[1], &t.latency_phase[2]}) {
    std::sort(v->begin(), v->end());
  }
  t.per_key = SumByRank(std::move(per_key));
  t.duration_s = static_cast<double>(t.last_ns - run.start_ns) / 1e9;
  return t;
}

namespace {

// The banner's first line: the scenario and where decisions are made.
std::string ScenarioLine(const DemoOptions& o) {
  const char* mode =
      o.mode == Mode::kLeased
          ? "leased mode (each instance decides locally from tokens leased "
            "in batches from Redis)"
      : o.mode == Mode::kDirect
          ? "direct mode (one Redis script call per decision)"
          : "local mode (each instance alone with limit / instances; "
            "nothing shared)";
  if (o.keys == KeyDist::kHot) {
    return absl::StrCat(
        "tokenlease demo, scenario hot: one key shared by every instance; ",
        mode, "\n");
  }
  return absl::StrFormat(
      "tokenlease demo, scenario zipf: %s keys drawn with Zipf s=%g, each "
      "with its own limit; %s\n",
      Commas(o.zipf_keys), o.zipf_s, mode);
}

// What happens during the outage, and what the failure mode does then.
std::string OutageLine(const DemoOptions& o) {
  std::string share;
  if (o.failure_mode == FailureMode::kFailLocal) {
    share = absl::StrFormat(
        ": each instance enforces limit / instances alone (%s)",
        o.discover_instances
            ? absl::StrFormat("the instances counted in Redis; %d until "
                              "counted",
                              o.FallbackInstances())
            : absl::StrFormat("%d instances", o.FallbackInstances()));
  } else if (o.failure_mode == FailureMode::kFailClosed) {
    share = o.mode == Mode::kDirect
                ? ": every decision is denied"
                : ": every decision is denied once the leases are spent";
  } else {
    share = ": every decision is admitted (the limit is off)";
  }
  // What the mode admitted is charged afterwards in leased mode only.
  const std::string usage =
      o.mode == Mode::kLeased
          ? absl::StrCat(
                "; outage_usage=",
                o.outage_usage == OutageUsage::kCharge ? "charge" : "forget")
          : "; what the mode admits is not charged to Redis afterwards";
  return absl::StrFormat(
      "outage: from %g s to %g s redis-server is %s; failure_mode=%s%s%s%s\n",
      o.outage_at, o.OutageEnd(),
      o.outage_kind == OutageKind::kKill
          ? "killed (kill -9), then restarted empty"
          : "stopped (SIGSTOP), then resumed",
      FailureModeName(o.failure_mode), share, usage,
      o.start_empty ? "; start_empty" : "");
}

}  // namespace

std::string Banner(const DemoOptions& o, const std::string& choices) {
  const Bounds b = ComputeBounds(o);
  std::string out = ScenarioLine(o);
  const std::string algorithm =
      o.algorithm == Algorithm::kTokenBucket
          ? absl::StrCat("a token bucket with burst ", Commas(b.burst))
          : AlgorithmFlagName(o.algorithm);
  absl::StrAppendFormat(
      &out, "limit: %s/s%s, %s; %g s, a row per %g s window%s\n",
      Commas(o.limit), o.keys == KeyDist::kHot ? "" : " per key", algorithm,
      o.seconds, o.window_ms / 1000.0,
      o.use_handle ? "; the hot key through a handle" : "");
  out += choices;
  if (o.mode == Mode::kLeased) {
    absl::StrAppendFormat(
        &out,
        "lease options: lease_ttl=%dms max_lease_fraction=%g (max lease %d "
        "tokens) cold_key_policy=%s%s idle_evict=%dms, others default\n",
        o.lease_ttl_ms, o.max_lease_fraction, b.max_lease,
        ColdKeyPolicyName(o.cold_key_policy),
        o.cold_key_policy == ColdKeyPolicy::kLocalShare
            ? absl::StrFormat(" local_share=%g (A = %d per key and instance) "
                              "charge_delay=%dms",
                              o.local_share, b.local_allowance,
                              o.charge_delay_ms)
            : "",
        o.idle_evict_ms);
  }
  if (o.outage && o.mode != Mode::kLocal) out += OutageLine(o);
  if (o.mode == Mode::kLocal) {
    const int64_t per = o.limit / o.instances;
    absl::StrAppend(
        &out, "local: each instance has its own Limiter with ",
        o.algorithm == Algorithm::kTokenBucket
            ? absl::StrCat(per, "/s, burst ",
                           std::max<int64_t>(1, o.burst / o.instances))
            : DescribeSpec(LocalSpec(o)),
        " (limit/N); nothing is shared\n");
  }
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

namespace {

// The CSV's phase of a window starting `start_s` into the run.
const char* WindowPhase(const DemoOptions& o, double start_s) {
  if (!o.outage || o.mode == Mode::kLocal) return "none";
  if (start_s < o.outage_at) return "before";
  return start_s < o.OutageEnd() ? "during" : "after";
}

}  // namespace

absl::Status WriteCsv(const DemoOptions& o, const RunRecord& run,
                      const Totals& t, const RedisFigures& redis) {
  std::FILE* out = std::fopen(o.csv.c_str(), "w");
  if (out == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", o.csv));
  }
  absl::FPrintF(out,
                "window_start_s,instance,offered,admitted,limit_bound,"
                "hot_offered,hot_admitted,keys,rss_kb,redis_commands_total,"
                "redis_used_memory,phase\n");
  const double bound = static_cast<double>(o.limit) * WindowSeconds(o);
  for (int64_t w = 0; w < run.windows; ++w) {
    const double ws = static_cast<double>(w) * WindowSeconds(o);
    const char* phase = WindowPhase(o, ws);
    for (size_t i = 0; i < run.reports.size(); ++i) {
      const WindowCounts& x = run.reports[i].windows[w];
      absl::FPrintF(out, "%g,%d,%d,%d,%g,%d,%d,%d,%d,%d,,%s\n", ws, i,
                    x.offered, x.admitted, bound, x.hot_offered, x.hot_admitted,
                    x.keys, x.rss_kb, x.commands, phase);
    }
    const WindowCounts& x = t.all[w];
    const int64_t mem = w < static_cast<int64_t>(redis.mem_per_window.size())
                            ? redis.mem_per_window[w]
                            : -1;
    absl::FPrintF(out, "%g,all,%d,%d,%g,%d,%d,%d,%d,%d,%d,%s\n", ws, x.offered,
                  x.admitted, bound, x.hot_offered, x.hot_admitted, x.keys,
                  x.rss_kb, x.commands, mem, phase);
  }
  if (std::fclose(out) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", o.csv));
  }
  return absl::OkStatus();
}

namespace {

// Offered and admitted over all keys.
void AppendOffered(const DemoOptions& o, const Totals& t, std::string& out) {
  const double rate = t.offered / t.duration_s;
  absl::StrAppendFormat(
      &out, "offered: %d decisions in %.3f s = %s/s (target %s/s, %.1f%%)%s\n",
      t.offered, t.duration_s, Fmt(rate), Fmt(o.OfferedRate()),
      100.0 * rate / o.OfferedRate(),
      rate < 0.95 * o.OfferedRate()
          ? "; the instances could not keep up with the target"
          : "");
  absl::StrAppendFormat(&out, "admitted (all keys): %d (%.2f%% of offered)\n",
                        t.admitted,
                        t.offered ? 100.0 * t.admitted / t.offered : 0.0);
  if (t.errors > 0) {
    absl::StrAppendFormat(&out, "errors (no decision): %d\n", t.errors);
  }
}

// The table by phase (phases.h) with the bounds.
void AppendPhases(const DemoOptions& o, const RunRecord& run, const Totals& t,
                  std::string& out) {
  out += PhaseTable(
      o, PhaseRows(o, t.duration_s, t.hot_offered, t.hot_admitted, t.phases,
                   t.latency_phase, t.latency, t.health_events, run.start_ns));
  std::vector<std::vector<HealthEvent>> events;
  for (const InstanceReport& r : run.reports) {
    events.push_back(r.health_events);
  }
  out += OutageTimeline(o, events, run.start_ns);
}

// The largest hot-key count in `span` consecutive windows from window
// `from` on, among spans `skip` does not exclude; -1 if none fits. Sets *at
// to its first window.
template <typename Skip>
int64_t MaxSpan(const Totals& t, int64_t span, int64_t from, Skip skip,
                int64_t* at) {
  int64_t best = -1;
  const int64_t nwin = static_cast<int64_t>(t.all.size());
  for (int64_t w = from; w + span <= nwin; ++w) {
    if (skip(w, w + span)) continue;
    int64_t s = 0;
    for (int64_t k = w; k < w + span; ++k) s += t.all[k].hot_admitted;
    if (s > best) {
      best = s;
      *at = w;
    }
  }
  return best;
}

// The busiest 1 s span (in window steps) against its bound, and after the
// first second.
void AppendSpans(const DemoOptions& o, const Bounds& b, const Totals& t,
                 std::string& out) {
  const char* hot = HotKeyName(o);
  const double window_s = WindowSeconds(o);
  const int64_t span = std::max<int64_t>(1, 1000 / o.window_ms);
  const double span_s = span * window_s;
  // fail_open has no bound while Redis is away: only spans clear of the
  // outage are checked.
  const int extra = OutageExtraBursts(o);
  auto skip = [&](int64_t from_w, int64_t to_w) {
    return extra < 0 && from_w * window_s < o.OutageEnd() &&
           to_w * window_s > o.outage_at;
  };
  int64_t at_all = 0, at_steady = 0;
  const int64_t max_all = MaxSpan(t, span, 0, skip, &at_all);
  const int64_t max_steady = MaxSpan(t, span, span, skip, &at_steady);
  const double limit_span = static_cast<double>(o.limit) * span_s;
  const int64_t bursts = 1 + std::max(0, extra);
  const double window_bound =
      limit_span + static_cast<double>(bursts * b.burst + b.held);
  absl::StrAppendFormat(
      &out,
      "max %s admitted in any %g s span%s (window steps): %d (span at %g s); "
      "bound limit + %sburst + held = %s + %s%d + %d = %s%s\n",
      hot, span_s, extra < 0 ? " clear of the outage" : "", max_all,
      at_all * window_s, bursts > 1 ? absl::StrCat(bursts, " x ") : "",
      Fmt(limit_span), bursts > 1 ? absl::StrCat(bursts, " x ") : "", b.burst,
      b.held, Fmt(window_bound), max_all > window_bound ? "" : " (within)");
  if (max_all > window_bound) {
    absl::StrAppendFormat(&out,
                          "BOUND EXCEEDED: a %g s span admitted %d > %s\n",
                          span_s, max_all, Fmt(window_bound));
  }
  if (bursts > 1) {
    absl::StrAppendFormat(
        &out,
        "  %d x burst: a span may hold the outage's extra burst%s as well "
        "(see the whole run's bound)\n",
        bursts, bursts > 2 ? "s" : "");
  }
  if (max_steady >= 0) {
    absl::StrAppendFormat(
        &out,
        "  after the first %g s: max %d at %g s = %.3f x limit; limit + held "
        "= %s (information, not a bound: only once overload has spent the "
        "burst should a span stay near it)\n",
        span_s, max_steady, at_steady * window_s, max_steady / limit_span,
        Fmt(limit_span + b.held));
  }
  if (b.held > 0) {
    absl::StrAppendFormat(
        &out,
        "  held = instances x (2 x max lease - 1) = %d x (2 x %d - 1) "
        "(docs/design.md, accuracy bound: a grant on top of what is left "
        "below the low-water mark)\n",
        o.instances, b.max_lease);
  }
}

// The percentiles of `sorted`, as on the overall latency line.
std::string LatencyFigures(const std::vector<int64_t>& sorted) {
  return absl::StrFormat(
      "%d samples, p50 %d ns, p99 %d ns, p999 %d ns, max %d ns", sorted.size(),
      Percentile(sorted, 0.50), Percentile(sorted, 0.99),
      Percentile(sorted, 0.999), sorted.empty() ? 0 : sorted.back());
}

// The latency of hot and of cold keys (workload.h, HotKeys).
void AppendLatencyByClass(const DemoOptions& o, const Totals& t,
                          std::string& out) {
  if (o.keys == KeyDist::kHot) {
    absl::StrAppend(&out, "  hot keys (the one key of --keys=hot): ",
                    LatencyFigures(t.latency_hot),
                    "\n  cold keys: none (--keys=hot)\n");
    return;
  }
  const int64_t hot = HotKeys(o);
  const std::string ranks =
      hot == 0 ? "none" : absl::StrCat("ranks 0-", hot - 1, ", ", hot, " keys");
  absl::StrAppendFormat(
      &out,
      "  hot keys (offered rate >= %g%% of the limit, i.e. >= %g/s: %s): %s\n",
      100 * kHotFraction, kHotFraction * static_cast<double>(o.limit), ranks,
      LatencyFigures(t.latency_hot));
  absl::StrAppendFormat(&out, "  cold keys (ranks %d+): %s\n", hot,
                        LatencyFigures(t.latency_cold));
}

// What A and M are in this run (per_key.h).
std::string AllowanceTerms(const DemoOptions& o, const Bounds& b) {
  if (o.mode != Mode::kLeased) {
    return absl::StrCat("A = M = 0 in ", ModeName(o.mode), " mode");
  }
  const std::string a =
      o.cold_key_policy == ColdKeyPolicy::kLocalShare
          ? absl::StrFormat(
                "A = max(1, floor(local_share x burst)) = max(1, floor(%g x "
                "%d)) = %d",
                o.local_share, b.burst, b.local_allowance)
          : absl::StrCat("A = 0 with --cold_key_policy=",
                         ColdKeyPolicyName(o.cold_key_policy));
  return absl::StrFormat("%s; M = 2 x max lease - 1 = 2 x %d - 1", a,
                         b.max_lease);
}

// The per-key ideal admission, by rank group, and the keys over their
// bound (--keys=zipf).
void AppendPerKey(const DemoOptions& o, const Bounds& b, const Totals& t,
                  std::string& out) {
  if (o.keys != KeyDist::kZipf) return;
  const PerKeySummary s = SummarisePerKey(o, t.per_key, t.duration_s);
  auto pct = [](double part, double whole) {
    return whole > 0 ? 100.0 * part / whole : 0.0;
  };
  absl::StrAppendFormat(
      &out,
      "per-key ideal admission (sum over the %d keys offered anything of "
      "min(offered, burst + limit x duration = %s)): %s; admitted %d = "
      "%.2f%% of it (offered %d)\n",
      s.keys, Fmt(s.bound.Ideal()), Fmt(s.ideal), s.admitted,
      pct(s.admitted, s.ideal), s.offered);
  for (const RankGroup& g : s.groups) {
    absl::StrAppendFormat(
        &out,
        "  Zipf ranks %s: %d keys offered anything, offered %d, ideal %s, "
        "admitted %d = %.2f%% of ideal\n",
        g.Label(), g.keys, g.offered, Fmt(g.ideal), g.admitted,
        pct(g.admitted, g.ideal));
  }
  absl::StrAppendFormat(&out, "per-key bound = %s (%s)\n", s.bound.Formula(),
                        AllowanceTerms(o, b));
  const double bound = s.bound.Value();
  absl::StrAppendFormat(
      &out,
      "keys over their bound: %d of %d%s; largest admitted / bound %.4f (%s, "
      "rank %d: admitted %d of %s)\n",
      s.over, s.keys, s.over == 0 ? " (within)" : "", s.max_ratio,
      KeyName(o, s.max_key.rank), s.max_key.rank, s.max_key.admitted,
      Fmt(bound));
  if (s.over > 0) {
    absl::StrAppendFormat(&out, "KEYS OVER BOUND: %d (the worst %d:)\n", s.over,
                          s.worst.size());
    for (const KeyCount& k : s.worst) {
      absl::StrAppendFormat(
          &out, "KEYS OVER BOUND: %s rank %d admitted %d > bound %s (+%s)\n",
          KeyName(o, k.rank), k.rank, k.admitted, Fmt(bound),
          Fmt(static_cast<double>(k.admitted) - bound));
    }
  }
}

// Per-window hot-key counts, per-instance totals and the latency.
void AppendDistribution(const DemoOptions& o, const RunRecord& run,
                        const Totals& t, std::string& out) {
  absl::StrAppendFormat(&out,
                        "per-window %s admitted (window %g s):", HotKeyName(o),
                        WindowSeconds(o));
  for (const WindowCounts& w : t.all)
    absl::StrAppend(&out, " ", w.hot_admitted);
  out += "\nper instance:";
  for (size_t i = 0; i < run.reports.size(); ++i) {
    int64_t offered = 0, admitted = 0;
    for (int64_t w = 0; w < run.windows; ++w) {
      offered += run.reports[i].windows[w].offered;
      admitted += run.reports[i].windows[w].admitted;
    }
    absl::StrAppendFormat(&out, " [%d] offered %d admitted %d", i, offered,
                          admitted);
  }
  absl::StrAppendFormat(
      &out,
      "\ndecision latency (1 in %d decisions timed with steady_clock, %d "
      "samples, all instances): p50 %d ns, p99 %d ns, p999 %d ns, max %d "
      "ns\n",
      o.sample_every, t.latency.size(), Percentile(t.latency, 0.50),
      Percentile(t.latency, 0.99), Percentile(t.latency, 0.999),
      t.latency.empty() ? 0 : t.latency.back());
  AppendLatencyByClass(o, t, out);
  if (o.outage && o.mode != Mode::kLocal) {
    absl::StrAppendFormat(
        &out,
        "  before the outage (0-%g s): %s\n  during (%g-%g s): %s\n"
        "  after (%g s-): %s\n",
        o.outage_at, LatencyFigures(t.latency_phase[kBeforeOutage]),
        o.outage_at, o.OutageEnd(),
        LatencyFigures(t.latency_phase[kDuringOutage]), o.OutageEnd(),
        LatencyFigures(t.latency_phase[kAfterOutage]));
  }
}

// Redis commands, lease counters and timeouts (not for local mode).
void AppendRedis(const DemoOptions& o, const Totals& t,
                 const RedisFigures& redis, std::string& out) {
  if (o.mode == Mode::kLocal) return;
  const FinalStats& s = t.stats;
  absl::StrAppendFormat(
      &out,
      "redis commands sent by the instances: %d during the run (%d including "
      "the shutdown's returns); decisions per command: %.1f; pipelined "
      "writes: %d\n",
      s.commands_at_end_of_run, s.commands_sent,
      s.commands_at_end_of_run
          ? static_cast<double>(t.offered) / s.commands_at_end_of_run
          : 0.0,
      s.flushes);
  if (redis.restarted) {
    out +=
        "redis server: killed and restarted during the run; its counters "
        "(script calls and time, CPU) began again at the restart, so they "
        "are not shown\n";
  } else {
    absl::StrAppendFormat(
        &out,
        "redis server: EVALSHA+EVAL calls %d, total commands processed %d "
        "(includes the GET/SET/TIME run inside the scripts and this demo's "
        "INFO probes)\n",
        redis.script_calls, redis.commands_processed);
    if (redis.script_usec >= 0) {
      absl::StrAppendFormat(
          &out,
          "redis time in scripts (INFO commandstats usec of EVALSHA+EVAL, "
          "includes the shutdown's returns): %d us = %.3f us per decision "
          "offered (%.2f us per script call)\n",
          redis.script_usec,
          t.offered ? static_cast<double>(redis.script_usec) / t.offered : 0.0,
          redis.script_calls > 0
              ? static_cast<double>(redis.script_usec) / redis.script_calls
              : 0.0);
    }
    if (redis.cpu_usec >= 0) {
      absl::StrAppendFormat(
          &out,
          "redis server CPU (INFO cpu used_cpu_user+used_cpu_sys, from before "
          "the instances started to the end, everything the server did): %d us "
          "= %.3f us per decision offered\n",
          redis.cpu_usec,
          t.offered ? static_cast<double>(redis.cpu_usec) / t.offered : 0.0);
    }
  }
  if (o.mode == Mode::kLeased) {
    absl::StrAppendFormat(
        &out,
        "lease stats (sum over instances, at the end of the run): lease "
        "requests %d, tokens granted %d, returned %d, denied by redis %d, "
        "charges %d (%d tokens), redis errors %d, new keys without a spare "
        "entry %d\n",
        s.lease_requests, s.tokens_granted, s.tokens_returned,
        s.denied_by_redis, s.charges, s.tokens_charged, s.redis_errors,
        s.spare_misses);
  }
  absl::StrAppendFormat(
      &out,
      "redis client timeouts (DeadlineExceeded, all instances): %d; late "
      "replies discarded: %d; connections reset (nothing answered for "
      "dead_after): %d\n",
      s.timeouts, s.late_replies, s.resets);
}

// Keys, RSS and Redis memory.
void AppendMemory(const DemoOptions& o, const RunRecord& run, const Totals& t,
                  const RedisFigures& redis, std::string& out) {
  if (o.keys == KeyDist::kZipf) {
    out += "keys in memory (sum over instances) at each window's end:";
    for (const WindowCounts& w : t.all) absl::StrAppend(&out, " ", w.keys);
    out += "\nRSS (sum over instances, KiB) at each window's end:";
    for (const WindowCounts& w : t.all) absl::StrAppend(&out, " ", w.rss_kb);
    out += "\n";
  }
  out += "peak RSS per instance (ru_maxrss, KiB):";
  for (const InstanceReport& r : run.reports) {
    absl::StrAppend(&out, " ", r.timing.peak_rss_kb);
  }
  out += "\n";
  if (!redis.ok) return;
  int64_t peak = -1;
  for (int64_t m : redis.mem_per_window) peak = std::max(peak, m);
  absl::StrAppendFormat(
      &out,
      "redis used_memory: %d before, peak of window samples %d, %d at the "
      "end (bytes); %d keys in the db at the end\n",
      redis.mem_before, peak, redis.mem_end, redis.dbsize);
}

}  // namespace

std::string Summary(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis) {
  std::string out = absl::StrFormat(
      "\n== summary (%s, %s%s) ==\n", ModeName(o.mode), KeyDistName(o.keys),
      o.outage && o.mode != Mode::kLocal
          ? absl::StrFormat(", outage %g-%g s, %s", o.outage_at, o.OutageEnd(),
                            FailureModeName(o.failure_mode))
          : "");
  if (run.interrupted_ns != 0) {
    absl::StrAppendFormat(
        &out,
        "interrupted (SIGINT) at t=%.3f s of %g s: this covers the %d "
        "window%s that ran, the last one partial\n",
        static_cast<double>(run.interrupted_ns - run.start_ns) / 1e9, o.seconds,
        run.windows, run.windows == 1 ? "" : "s");
  }
  const Bounds b = ComputeBounds(o);
  AppendPhases(o, run, t, out);
  out += "\n-- details --\n";
  AppendOffered(o, t, out);
  AppendSpans(o, b, t, out);
  AppendPerKey(o, b, t, out);
  AppendDistribution(o, run, t, out);
  AppendRedis(o, t, redis, out);
  AppendMemory(o, run, t, redis, out);
  if (!o.csv.empty()) absl::StrAppend(&out, "csv: ", o.csv, "\n");
  return out;
}

}  // namespace tokenlease::tools
