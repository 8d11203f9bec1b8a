#include "cli/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "cli/bench_parts.h"
#include "cli/common.h"
#include "cli/flag_table.h"
#include "cli/read_only_redis.h"
#include "cli/spec_flags.h"
#include "support/redis_info.h"
#include "support/redis_server.h"

namespace tokenlease::cli {
namespace {

constexpr char kUsage[] = R"(Usage: tokenlease bench [--quick] [flags]

This machine's numbers in under a minute (--quick: a few seconds):
  hot path: ns per decision, one thread, one 32-byte key, every decision
    admitted: a leased decision through a LeasedLimiter::Handle (a lease in
    hand), the local Limiter through a Limiter::Handle and by name, next to
    a std::mutex + std::unordered_map token bucket by name
    (support/mutex_baseline.h) and a bare atomic fetch_sub (the floor of a
    leased decision);
  direct mode: the round trip of one DirectLimiter decision (p50, p99) and
    the throughput with --callers asynchronous calls in flight, pipelined.
Each case is warmed up, then measured --reps times, the repetitions of all
cases interleaved; the table shows the median and the ratios of this run.
Ratios compare across machines; absolute times do not. A private
redis-server is started on a free 127.0.0.1 port unless --url is given
(keys under tokenlease-bench:<time>: expire by themselves; a rediss:// URL
takes the --tls_* flags).)";

// Set by SIGINT: the run stops between measurements, stops its
// redis-server and exits 130.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnInterrupt(int) { g_interrupted.store(true); }

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    }
  }
  return "unknown CPU";
}

std::string LoadAverage() {
  double load[3];
  if (getloadavg(load, 3) != 3) return "unknown";
  return absl::StrFormat("%.2f %.2f %.2f", load[0], load[1], load[2]);
}

std::string BuildKind() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return "a SANITIZER build: these numbers say nothing about speed";
#elif defined(NDEBUG)
  return "optimized build (NDEBUG)";
#else
  return "a build with assertions (not NDEBUG): slower than a release";
#endif
}

std::string Machine() {
  return absl::StrCat(std::thread::hardware_concurrency(), " CPUs, ",
                      CpuModel(), "; load average ", LoadAverage(),
                      " before the run; ", BuildKind());
}

// "redis-server 7.0.15 at redis://127.0.0.1:6379/0", from INFO (read-only).
std::string DescribeRedis(const std::string& url, const RedisTlsOptions& tls,
                          bool private_server) {
  absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> r =
      ReadOnlyRedis::Connect(url, absl::Seconds(2), tls);
  if (!r.ok()) {
    return absl::StrCat(Redacted(url),
                        " (not answering: ", InFlagTerms(r.status().message()),
                        ")");
  }
  absl::StatusOr<internal::RedisReply> info = (*r)->Run({"INFO", "server"});
  return absl::StrCat(private_server ? "a private " : "",
                      support::ServerVersion(info.ok() ? info->str : ""),
                      " at ", (*r)->endpoint());
}

std::string Micros(double us) {
  if (us < 1000) return absl::StrFormat("%.1fus", us);
  if (us < 1e6) return absl::StrFormat("%.2fms", us / 1e3);
  return absl::StrFormat("%.2fs", us / 1e6);
}

// 12345.6 -> "12,346".
std::string Thousands(double v) {
  std::string digits = absl::StrFormat("%.0f", v);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) {
    digits.insert(static_cast<size_t>(i), ",");
  }
  return digits;
}

}  // namespace

BenchOptions QuickBenchOptions() {
  BenchOptions o;
  o.reps = 3;
  o.hot_time = absl::Milliseconds(20);
  o.direct_time = absl::Milliseconds(150);
  return o;
}

std::vector<std::string> HotCaseNames() {
  return {"atomic fetch_sub (the floor)",
          "leased decision, LeasedLimiter::Handle",
          "local Limiter, Limiter::Handle", "local Limiter, by name",
          "std::mutex + unordered_map, by name"};
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(
      v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

absl::StatusOr<BenchReport> RunBenchmarks(const BenchOptions& given,
                                          std::ostream& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto cancelled = [] { return g_interrupted.load(); };
  BenchOptions options = given;
  if (options.url.empty()) options.tls = {};  // the private server's is plain
  BenchReport report;
  report.options = options;
  report.machine = Machine();
  std::string url = options.url;
  std::unique_ptr<support::RedisServer> server;
  std::string no_redis;
  if (url.empty()) {
    progress << "tokenlease bench: starting a private redis-server\n"
             << std::flush;
    // Its own process group: a Ctrl-C stops the measuring, not the server.
    absl::StatusOr<std::unique_ptr<support::RedisServer>> s =
        support::StartRedisServer({.own_process_group = true,
                                   .name = "tokenlease-bench",
                                   .cancelled = cancelled});
    if (s.ok()) {
      server = *std::move(s);
      url = server->url();
    } else {
      no_redis = std::string(s.status().message());
    }
  }
  report.redis = url.empty()
                     ? absl::StrCat("none: ", no_redis)
                     : DescribeRedis(url, options.tls, server != nullptr);
  report.hot = MeasureHotPath(options, url, progress, cancelled);
  report.direct = MeasureDirect(options, url, progress, cancelled);
  if (report.direct.note == "no Redis") {
    report.direct.note = absl::StrCat("no Redis: ", no_redis);
  }
  for (HotResult& h : report.hot) {
    if (h.note == "no Redis") h.note = absl::StrCat("no Redis: ", no_redis);
  }
  if (cancelled()) return absl::CancelledError("interrupted");
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return report;  // ~RedisServer stops the private server
}

std::string RenderBench(const BenchReport& r) {
  std::string out = absl::StrCat(
      "tokenlease bench: ", r.options.reps,
      " repetitions per case, interleaved; the median of each (and the "
      "range)\n",
      "machine: ", r.machine, "\n", "redis: ", r.redis, "\n",
      "Ratios are taken within this one run: compare them across machines; "
      "absolute times are this machine's.\n\n");
  // The floor and the baseline the ratios are taken against.
  const double floor_ns = r.hot.empty() ? 0 : r.hot.front().median_ns;
  const double mutex_ns = r.hot.empty() ? 0 : r.hot.back().median_ns;
  absl::StrAppend(
      &out,
      "hot path: one thread, one 32-byte key, every decision "
      "admitted\n",
      absl::StrFormat("  %-38s %11s %15s %11s %13s\n", "case", "ns/decision",
                      "range", "x fetch_sub", "mutex / this"));
  for (const HotResult& h : r.hot) {
    if (h.median_ns <= 0) {
      absl::StrAppend(&out, absl::StrFormat("  %-38s %s\n", h.name,
                                            absl::StrCat("not run: ", h.note)));
      continue;
    }
    absl::StrAppend(
        &out, absl::StrFormat("  %-38s %11.1f %15s %10.2fx %12.2fx\n", h.name,
                              h.median_ns,
                              absl::StrFormat("%.1f-%.1f", h.min_ns, h.max_ns),
                              floor_ns > 0 ? h.median_ns / floor_ns : 0,
                              mutex_ns > 0 ? mutex_ns / h.median_ns : 0));
    if (!h.note.empty()) absl::StrAppend(&out, "    note: ", h.note, "\n");
  }
  const DirectResult& d = r.direct;
  absl::StrAppend(&out,
                  "\ndirect mode: DirectLimiter, one Redis script call per "
                  "decision, every call admitted\n");
  if (!d.ran) {
    absl::StrAppend(&out, "  not run: ", d.note, "\n");
  } else {
    absl::StrAppend(
        &out,
        absl::StrFormat("  %-38s %10s %10s %13s %13s\n", "case", "p50", "p99",
                        "decisions/s", "x one caller"),
        absl::StrFormat("  %-38s %10s %10s %13s %12.2fx\n",
                        "one caller, blocking calls", Micros(d.single_p50_us),
                        Micros(d.single_p99_us), Thousands(d.single_per_s),
                        1.0),
        absl::StrFormat(
            "  %-38s %10s %10s %13s %12.2fx\n",
            absl::StrCat(d.callers, " async calls in flight (pipelined)"),
            Micros(d.pipelined_p50_us), Micros(d.pipelined_p99_us),
            Thousands(d.pipelined_per_s),
            d.single_per_s > 0 ? d.pipelined_per_s / d.single_per_s : 0));
    if (d.errors > 0) {
      absl::StrAppend(&out, "  note: ", d.errors,
                      " calls got no decision (timeouts)\n");
    }
  }
  absl::StrAppend(&out, absl::StrFormat("\ntook %.1f s\n", r.seconds));
  return out;
}

int RunBench(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err) {
  BenchOptions o;
  bool quick = false;
  FlagTable table(kUsage);
  table.Add("quick", &quick,
            "a short run of a few seconds (3 repetitions of 20ms hot-path "
            "and 150ms direct-mode runs): checks, not numbers to quote");
  table.Add("reps", &o.reps, "repetitions of each case, 1 to 100");
  table.Add("hot_time", &o.hot_time,
            "one repetition of a hot-path case, 1ms to 10s");
  table.Add("direct_time", &o.direct_time,
            "one repetition of a direct-mode case, 10ms to 60s");
  table.Add("callers", &o.callers,
            "asynchronous direct-mode calls kept in flight, 1 to 4096");
  table.Add("url", &o.url,
            "Redis for the leased and direct cases (its keys expire by "
            "themselves), redis://... or rediss://... (TLS: the --tls_* "
            "flags); empty: a private redis-server on a free 127.0.0.1 "
            "port");
  TlsFlags tls;
  AddTlsFlags(&tls, &table);
  absl::StatusOr<std::vector<std::string>> positional = table.Parse(args);
  if (table.help_requested()) {
    out << table.Usage();
    return kExitOk;
  }
  std::string problem;
  if (!positional.ok()) {
    problem = std::string(positional.status().message());
  } else if (!positional->empty()) {
    problem = absl::StrCat("unexpected argument '", (*positional)[0],
                           "'; bench takes only flags");
  }
  if (quick) {  // the quick values, where no flag says otherwise
    const BenchOptions q = QuickBenchOptions();
    if (!table.specified("reps")) o.reps = q.reps;
    if (!table.specified("hot_time")) o.hot_time = q.hot_time;
    if (!table.specified("direct_time")) o.direct_time = q.direct_time;
  }
  if (problem.empty() && (o.reps < 1 || o.reps > 100)) {
    problem = absl::StrCat("--reps is ", o.reps, "; it must be 1 to 100");
  } else if (problem.empty() && (o.hot_time < absl::Milliseconds(1) ||
                                 o.hot_time > absl::Seconds(10))) {
    problem = "--hot_time must be 1ms to 10s";
  } else if (problem.empty() && (o.direct_time < absl::Milliseconds(10) ||
                                 o.direct_time > absl::Seconds(60))) {
    problem = "--direct_time must be 10ms to 60s";
  } else if (problem.empty() && (o.callers < 1 || o.callers > 4096)) {
    problem =
        absl::StrCat("--callers is ", o.callers, "; it must be 1 to 4096");
  }
  if (problem.empty()) {
    absl::StatusOr<RedisTlsOptions> t = TlsFromFlags(tls, o.url);
    if (t.ok()) {
      o.tls = *std::move(t);
    } else {
      problem = std::string(t.status().message());
    }
  }
  if (!problem.empty()) return UsageError(err, "bench", problem);
  WarnIfInsecure(err, "bench", !o.tls.verify_peer);
  std::signal(SIGINT, OnInterrupt);
  absl::StatusOr<BenchReport> report = RunBenchmarks(o, err);
  if (!report.ok()) {
    err << "tokenlease bench: " << report.status().message() << "\n";
    return report.status().code() == absl::StatusCode::kCancelled ? 130
                                                                  : kExitUsage;
  }
  out << RenderBench(*report);
  return kExitOk;
}

}  // namespace tokenlease::cli
