// The banner, the sums, the CSV and the summary of a run (report.h); the
// bounds' figures are in bounds.cc.
#include "demo/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "demo/format.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

double WindowSeconds(const DemoOptions& o) { return o.window_ms / 1000.0; }

const char* HotKeyName(const DemoOptions& o) {
  return o.keys == KeyDist::kHot ? "hot key" : "hottest key (rank 0)";
}

std::string LatencyFigures(const std::vector<int64_t>& sorted) {
  return absl::StrFormat(
      "%d samples, p50 %d ns, p99 %d ns, p999 %d ns, max %d ns", sorted.size(),
      Percentile(sorted, 0.50), Percentile(sorted, 0.99),
      Percentile(sorted, 0.999), sorted.empty() ? 0 : sorted.back());
}

}  // namespace

Bounds ComputeBounds(const DemoOptions& o) {
  Bounds b;
  b.burst = o.burst;
  b.max_lease = std::max<int64_t>(1, o.max_lease_fraction * o.burst);
  const bool leased = o.mode == Mode::kLeased;
  b.held = leased ? o.instances * (2 * b.max_lease - 1) : 0;
  if (leased && o.cold_key_policy == ColdKeyPolicy::kLocalShare) {
    b.local_allowance = std::max<int64_t>(1, o.local_share * o.burst);
  }
  return b;
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
    t.events.insert(t.events.end(), r.events.begin(), r.events.end());
    keys.insert(keys.end(), r.keys.begin(), r.keys.end());
    for (const auto& [series, value] : r.metrics) t.metrics[series] += value;
    t.last_ns = std::max(t.last_ns, r.last_ns);
    t.commands_with_shutdown += r.commands_with_shutdown;
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

std::string Banner(const DemoOptions& o, const std::string& choices) {
  const Bounds b = ComputeBounds(o);
  const char* mode =
      o.mode == Mode::kLeased
          ? "leased mode (each instance decides locally from tokens leased "
            "in batches from Redis)"
      : o.mode == Mode::kDirect
          ? "direct mode (one Redis script call per decision)"
          : "local mode (each instance alone with limit / instances; "
            "nothing shared)";
  std::string out = absl::StrFormat(
      "tokenlease demo, scenario %s; %s\nlimit: %s/s%s, %s; %g s, a row per "
      "%g s window%s\n%s",
      o.keys == KeyDist::kHot
          ? "hot: one key shared by every instance"
          : absl::StrFormat("zipf: %s keys drawn with Zipf s=%g, each with "
                            "its own limit",
                            Commas(o.zipf_keys), o.zipf_s),
      mode, Commas(o.limit), o.keys == KeyDist::kHot ? "" : " per key",
      o.algorithm == Algorithm::kTokenBucket
          ? absl::StrCat("a token bucket with burst ", Commas(b.burst))
          : AlgorithmName(o.algorithm),
      o.seconds, WindowSeconds(o),
      o.use_handle ? "; the hot key through a handle" : "", choices);
  if (o.mode == Mode::kLeased) {
    absl::StrAppendFormat(
        &out,
        "lease options: lease_ttl=%dms max_lease_fraction=%g (max lease %d "
        "tokens) cold_key_policy=%s%s idle_evict=%dms, others default\n",
        o.lease_ttl_ms, o.max_lease_fraction, b.max_lease,
        FlagText(o, "cold_key_policy"),
        o.cold_key_policy == ColdKeyPolicy::kLocalShare
            ? absl::StrFormat(" local_share=%g (A = %d per key and instance) "
                              "charge_delay=%dms",
                              o.local_share, b.local_allowance,
                              o.charge_delay_ms)
            : "",
        o.idle_evict_ms);
  }
  if (o.mode == Mode::kLocal) {
    absl::StrAppend(
        &out, "local: each instance has its own Limiter with ",
        o.algorithm == Algorithm::kTokenBucket
            ? absl::StrCat(o.limit / o.instances, "/s, burst ",
                           std::max<int64_t>(1, o.burst / o.instances))
            : DescribeSpec(LocalSpec(o)),
        " (limit/N); nothing is shared\n");
  }
  if (!o.HasOutage()) return out;
  const int n = o.FallbackInstances();
  const std::string share =
      o.failure_mode == FailureMode::kFailLocal
          ? absl::StrCat("each instance enforces limit / instances alone (",
                         o.discover_instances
                             ? absl::StrCat("the instances counted in Redis; ",
                                            n, " until counted")
                             : absl::StrCat(n, " instances"),
                         ")")
      : o.failure_mode == FailureMode::kFailOpen
          ? "every decision is admitted (the limit is off)"
      : o.mode == Mode::kDirect
          ? "every decision is denied"
          : "every decision is denied once the leases are spent";
  // What the mode admitted is charged afterwards in leased mode only.
  absl::StrAppendFormat(
      &out,
      "outage: from %g s to %g s redis-server is %s; failure_mode=%s: %s%s%s\n",
      o.outage_at, o.OutageEnd(),
      o.outage_kind == OutageKind::kKill
          ? "killed (kill -9), then restarted empty"
          : "stopped (SIGSTOP), then resumed",
      FailureModeName(o.failure_mode), share,
      o.mode == Mode::kLeased
          ? absl::StrCat("; outage_usage=", FlagText(o, "outage_usage"))
          : "; what the mode admits is not charged to Redis afterwards",
      o.start_empty ? "; start_empty" : "");
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
      absl::FPrintF(
          out, "%g,%s,%d,%d,%g,%d,%d,%d,%d,%d,%s,%s\n", start,
          all ? "all" : absl::StrCat(i), c.offered, c.admitted,
          o.limit * WindowSeconds(o), c.hot_offered, c.hot_admitted, x.keys,
          x.rss_kb, x.commands,
          !all ? "" : absl::StrCat(w < mems ? redis.mem_per_window[w] : -1),
          phase);
    }
  }
  if (std::fclose(out) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", o.csv));
  }
  return absl::OkStatus();
}

namespace {

// The busiest 1 s span (in window steps) against its bound.
void AppendSpan(const DemoOptions& o, const Totals& t, std::string& out) {
  const Bounds b = ComputeBounds(o);
  const int64_t span = std::max(1, 1000 / o.window_ms);
  const double span_s = span * WindowSeconds(o);
  // fail_open has no bound while Redis is away: only spans clear of the
  // outage are checked.
  const int extra = OutageExtraBursts(o);
  int64_t best = -1, at = 0;
  for (size_t w = 0; w + span <= t.windows.size(); ++w) {
    if (extra < 0 && w * WindowSeconds(o) < o.OutageEnd() &&
        (w + span) * WindowSeconds(o) > o.outage_at) {
      continue;
    }
    int64_t s = 0;
    for (size_t k = w; k < w + span; ++k) s += t.windows[k].counts.hot_admitted;
    if (s > best) {
      best = s;
      at = w;
    }
  }
  const double limit_span = o.limit * span_s;
  const int64_t bursts = 1 + std::max(0, extra);
  const double bound = limit_span + bursts * b.burst + b.held;
  const std::string k = bursts > 1 ? absl::StrCat(bursts, " x ") : "";
  absl::StrAppendFormat(
      &out,
      "max %s admitted in any %g s span%s (window steps): %d (span at %g s); "
      "bound limit + %sburst + held = %s + %s%d + %d = %s%s\n",
      HotKeyName(o), span_s, extra < 0 ? " clear of the outage" : "", best,
      at * WindowSeconds(o), k, Fmt(limit_span), k, b.burst, b.held, Fmt(bound),
      best > bound ? "" : " (within)");
  if (best > bound) {
    absl::StrAppendFormat(&out,
                          "BOUND EXCEEDED: a %g s span admitted %d > %s\n",
                          span_s, best, Fmt(bound));
  }
  if (bursts > 1 || b.held > 0) {
    absl::StrAppendFormat(
        &out, "  %s%s\n",
        bursts > 1 ? "the outage's extra bursts (see the whole run's bound); "
                   : "",
        b.held > 0 ? absl::StrFormat("held = instances x (2 x max lease - 1) "
                                     "= %d x (2 x %d - 1) (docs/design.md, "
                                     "accuracy bound)",
                                     o.instances, b.max_lease)
                   : "");
  }
}

// Per-instance totals and the decision latency, by key class for zipf
// (workload.h, HotKeys).
void AppendLatency(const DemoOptions& o, const RunRecord& run, const Totals& t,
                   std::string& out) {
  out += "per instance:";
  for (size_t i = 0; i < run.reports.size(); ++i) {
    Counts c;
    for (int64_t w = 0; w < run.windows; ++w) {
      c += run.reports[i].windows[w].counts;
    }
    absl::StrAppendFormat(&out, " [%d] offered %d admitted %d", i, c.offered,
                          c.admitted);
  }
  absl::StrAppendFormat(
      &out,
      "\ndecision latency (1 in %d decisions timed with steady_clock, all "
      "instances): %s\n",
      o.sample_every,
      LatencyFigures(Latencies(t.samples, [](auto&) { return true; })));
  if (o.keys == KeyDist::kHot) return;
  const int64_t n = HotKeys(o);
  absl::StrAppendFormat(
      &out,
      "  hot keys (offered rate >= %g%% of the limit, i.e. >= %g/s: %s): "
      "%s\n  cold keys (ranks %d+): %s\n",
      100 * kHotFraction, kHotFraction * o.limit,
      n == 0 ? "none" : absl::StrCat("ranks 0-", n - 1, ", ", n, " keys"),
      LatencyFigures(Latencies(t.samples, [](auto& s) { return s.hot; })), n,
      LatencyFigures(Latencies(t.samples, [](auto& s) { return !s.hot; })));
}

// Redis commands, the limiters' counters (their Prometheus series) and the
// server's figures.
void AppendRedis(const DemoOptions& o, const Totals& t,
                 const RedisFigures& redis, std::string& out) {
  auto m = [&](const char* name) {
    return static_cast<int64_t>(t.Metric(absl::StrCat("tokenlease_", name)));
  };
  const int64_t commands = m("redis_commands_total");
  const double offered = t.all.offered;
  absl::StrAppendFormat(
      &out,
      "redis commands sent by the instances: %d during the run (%d including "
      "the shutdown's returns); decisions per command: %.1f; pipelined "
      "writes: %d\ndecisions by source (the limiters' DecisionCounts, all "
      "keys):",
      commands, t.commands_with_shutdown, commands ? offered / commands : 0.0,
      m("redis_flushes_total"));
  std::map<std::string, int64_t> by_source;
  for (const auto& [series, n] : t.metrics) {
    if (n > 0 && absl::StartsWith(series, "tokenlease_decisions_total{")) {
      by_source[absl::StrReplaceAll(
          series, {{"tokenlease_decisions_total{source=\"", ""},
                   {"\",result=\"", " "},
                   {"\"}", ""}})] = n;
    }
  }
  for (const auto& [what, n] : by_source) {
    absl::StrAppend(&out, " ", what, " ", n, ";");
  }
  out.back() = '\n';
  if (redis.restarted) {
    out +=
        "redis server: killed and restarted during the run; its counters "
        "(script calls and time, CPU) began again at the restart, so they "
        "are not shown\n";
  } else if (redis.ok) {
    absl::StrAppendFormat(
        &out,
        "redis server: EVALSHA+EVAL calls %d, total commands processed %d "
        "(includes the GET/SET/TIME run inside the scripts and this demo's "
        "INFO probes)\nredis time in scripts (INFO commandstats usec of "
        "EVALSHA+EVAL, includes the shutdown's returns): %d us = %.3f us per "
        "decision offered (%.2f us per script call)\n",
        redis.script_calls, redis.commands_processed, redis.script_usec,
        offered ? redis.script_usec / offered : 0.0,
        redis.script_calls > 0
            ? static_cast<double>(redis.script_usec) / redis.script_calls
            : 0.0);
    if (redis.cpu_usec >= 0) {
      absl::StrAppendFormat(
          &out,
          "redis server CPU (INFO cpu used_cpu_user+used_cpu_sys, from before "
          "the instances started to the end, everything the server did): %d "
          "us = %.3f us per decision offered\n",
          redis.cpu_usec, offered ? redis.cpu_usec / offered : 0.0);
    }
  }
  if (o.mode == Mode::kLeased) {
    absl::StrAppendFormat(
        &out,
        "lease stats (sum over instances, at the end of the run): lease "
        "requests %d, tokens granted %d, returned %d, denied by redis %d, "
        "charges %d (%d tokens), redis errors %d, new keys without a spare "
        "entry %d\n",
        m("lease_requests_total"), m("tokens_granted_total"),
        m("tokens_returned_total"), m("lease_refusals_total"),
        m("charges_total"), m("tokens_charged_total"),
        m("redis_errors_total"), m("spare_misses_total"));
  }
  absl::StrAppendFormat(
      &out,
      "redis client timeouts (DeadlineExceeded, all instances): %d; late "
      "replies discarded: %d; connections reset (nothing answered for "
      "dead_after): %d\n",
      m("redis_timeouts_total"), m("redis_late_replies_total"),
      m("redis_resets_total"));
}

}  // namespace

std::string Summary(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis) {
  std::string out = absl::StrFormat(
      "\n== summary (%s, %s%s) ==\n", ModeName(o.mode), KeyDistName(o.keys),
      o.HasOutage()
          ? absl::StrFormat(", outage %g-%g s, %s", o.outage_at, o.OutageEnd(),
                            FailureModeName(o.failure_mode))
          : "");
  if (run.interrupted_ns != 0) {
    absl::StrAppendFormat(
        &out,
        "interrupted (SIGINT) at t=%.3f s of %g s: this covers the %d "
        "window%s that ran, the last one partial\n",
        (run.interrupted_ns - run.start_ns) / 1e9, o.seconds, run.windows,
        run.windows == 1 ? "" : "s");
  }
  out += PhaseTable(o, PhaseRows(o, run, t)) + OutageTimeline(o, run);
  const double rate = t.all.offered / t.duration_s;
  absl::StrAppendFormat(
      &out,
      "\n-- details --\noffered: %d decisions in %.3f s = %s/s (target %s/s, "
      "%.1f%%)%s\nadmitted (all keys): %d (%.2f%% of offered)\n",
      t.all.offered, t.duration_s, Fmt(rate), Fmt(o.offered),
      100.0 * rate / o.offered,
      rate < 0.95 * o.offered
          ? "; the instances could not keep up with the target"
          : "",
      t.all.admitted,
      t.all.offered ? 100.0 * t.all.admitted / t.all.offered : 0.0);
  AppendSpan(o, t, out);
  if (o.keys == KeyDist::kZipf) out += PerKeySummary(o, t);
  AppendLatency(o, run, t, out);
  if (o.mode != Mode::kLocal) AppendRedis(o, t, redis, out);
  out += "peak RSS per instance (ru_maxrss, KiB):";
  for (const InstanceReport& r : run.reports) {
    absl::StrAppend(&out, " ", r.peak_rss_kb);
  }
  if (redis.ok) {
    absl::StrAppendFormat(
        &out,
        "\nredis used_memory: %d before, peak of window samples %d, %d at the "
        "end (bytes); %d keys in the db at the end",
        redis.mem_before,
        redis.mem_per_window.empty()
            ? -1
            : *std::max_element(redis.mem_per_window.begin(),
                                redis.mem_per_window.end()),
        redis.mem_end, redis.dbsize);
  }
  if (!o.csv.empty()) absl::StrAppend(&out, "\ncsv: ", o.csv);
  return out + "\n";
}

}  // namespace tokenlease::tools
