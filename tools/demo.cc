#include "demo.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "demo_options.h"
#include "latency_histogram.h"
#include "tokenlease/decision.h"
#include "tokenlease/limiter.h"
#include "tokenlease/spec.h"

namespace tokenlease::tools {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

constexpr auto kReportInterval = std::chrono::milliseconds(500);
// Most requests a paced worker issues back to back before it looks at its
// schedule again (it catches up after a late wake-up in such batches).
constexpr uint64_t kMaxBatch = 64;

int64_t ToNanos(SteadyClock::duration d) {
  return std::chrono::duration_cast<nanoseconds>(d).count();
}

double ToSeconds(SteadyClock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// One worker's counters. Only the worker writes; the reporter reads the
// atomics (relaxed) while it runs.
struct alignas(64) WorkerStats {
  std::atomic<uint64_t> offered{0};
  std::atomic<uint64_t> admitted{0};
  LatencyHistogram latency;
  // Admitted requests per key; read only after the worker has been joined.
  std::vector<uint64_t> admitted_per_key;
};

void Bump(std::atomic<uint64_t>& c) {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// What every worker shares (read-only while they run).
struct Load {
  Limiter* limiter = nullptr;
  const std::vector<std::string>* keys = nullptr;
  const std::vector<KeyHandle>* handles = nullptr;  // set with --handle
  SteadyClock::time_point start;
  SteadyClock::time_point end;
  double interval_ns = 0;  // between one worker's requests; 0: flat out
};

// splitmix64: fast, and good enough to spread requests over keys.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-40 here).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >>
                                 64);
  }

 private:
  uint64_t state_;
};

// Issues one request, timing only the TryAcquire call. Returns the time
// after it.
template <bool kUseHandle>
SteadyClock::time_point IssueOne(const Load& load, Rng& rng,
                                 WorkerStats& stats) {
  const size_t n = load.keys->size();
  const size_t k = n == 1 ? 0 : rng.Below(n);
  const SteadyClock::time_point before = SteadyClock::now();
  Decision d;
  if constexpr (kUseHandle) {
    d = load.limiter->TryAcquire((*load.handles)[k]);
  } else {
    d = load.limiter->TryAcquire((*load.keys)[k]);
  }
  const SteadyClock::time_point after = SteadyClock::now();
  stats.latency.Record(static_cast<uint64_t>(ToNanos(after - before)));
  Bump(stats.offered);
  if (d.allowed) {
    Bump(stats.admitted);
    ++stats.admitted_per_key[k];
  }
  return after;
}

template <bool kUseHandle>
void RunWorker(const Load& load, uint64_t seed, WorkerStats* stats) {
  Rng rng(seed);
  std::this_thread::sleep_until(load.start);
  if (load.interval_ns <= 0) {  // --offered=0: as fast as possible
    while (IssueOne<kUseHandle>(load, rng, *stats) < load.end) {
    }
    return;
  }
  // Deadline schedule: request i is due at start + i * interval. Sleep until
  // the next one is due, then issue every request due by now (in batches),
  // so late wake-ups are made up and the average rate stays exact.
  const double span_ns = static_cast<double>(ToNanos(load.end - load.start));
  const auto due_at = [&](uint64_t i) {
    const double t = static_cast<double>(i) * load.interval_ns;
    return t >= span_ns ? load.end
                        : load.start + nanoseconds(static_cast<int64_t>(t));
  };
  uint64_t next = 0;
  SteadyClock::time_point now = SteadyClock::now();
  while (true) {
    const SteadyClock::time_point next_due = due_at(next);
    if (next_due >= load.end || now >= load.end) break;
    if (next_due > now) {
      std::this_thread::sleep_until(next_due);
      now = SteadyClock::now();
      continue;
    }
    const double since_start = static_cast<double>(ToNanos(now - load.start));
    // Requests due by now: floor(elapsed / interval) + 1, kept in double
    // (and capped by the batch) so that a tiny interval cannot overflow.
    const double due =
        std::floor(std::min(since_start, span_ns - 1) / load.interval_ns) + 1;
    const uint64_t stop = due >= static_cast<double>(next + kMaxBatch)
                              ? next + kMaxBatch
                              : static_cast<uint64_t>(due);
    for (; next < stop; ++next) now = IssueOne<kUseHandle>(load, rng, *stats);
  }
}

// Everything the reporter reads from all workers at one moment.
struct Totals {
  uint64_t offered = 0;
  uint64_t admitted = 0;
  HistogramCounts latency;
};

Totals Collect(const std::vector<std::unique_ptr<WorkerStats>>& stats) {
  Totals t;
  for (const auto& s : stats) {
    t.offered += s->offered.load(std::memory_order_relaxed);
    t.admitted += s->admitted.load(std::memory_order_relaxed);
    t.latency.Merge(s->latency.Snapshot());
  }
  return t;
}

std::string FormatNanos(const HistogramCounts& h, double q) {
  return h.count == 0 ? "-" : absl::StrCat(h.Percentile(q));
}

void PrintLiveHeader() {
  absl::PrintF("%8s %12s %12s %12s %9s %9s %9s\n", "elapsed", "offered/s",
               "admitted/s", "limit/s", "adm/limit", "p50(ns)", "p99(ns)");
}

// One live line for the interval between `prev` and `cur`, `dt` seconds.
void PrintLiveLine(double elapsed, double dt, const Totals& prev,
                   const Totals& cur, double limit_rate) {
  HistogramCounts interval = cur.latency;
  interval.Subtract(prev.latency);
  const double offered = static_cast<double>(cur.offered - prev.offered) / dt;
  const double admitted =
      static_cast<double>(cur.admitted - prev.admitted) / dt;
  absl::PrintF("%7.2fs %12.0f %12.0f %12.0f %9.3f %9s %9s\n", elapsed, offered,
               admitted, limit_rate, admitted / limit_rate,
               FormatNanos(interval, 0.50), FormatNanos(interval, 0.99));
  std::fflush(stdout);
}

void PrintSummaryRow(const std::string& name, uint64_t offered,
                     uint64_t admitted, const HistogramCounts& latency,
                     double seconds, double limit_rate) {
  const double rate = static_cast<double>(admitted) / seconds;
  absl::PrintF("%8s %12d %12d %12.0f %9.3f %9s %9s %9s %9s\n", name, offered,
               admitted, rate, rate / limit_rate, FormatNanos(latency, 0.50),
               FormatNanos(latency, 0.90), FormatNanos(latency, 0.99),
               latency.count == 0 ? "-" : absl::StrCat(latency.max));
}

bool IsWindowAlgorithm(Algorithm a) {
  return a == Algorithm::kFixedWindow || a == Algorithm::kSlidingWindowCounter;
}

// Checks that no key was admitted more than its limit allows between the
// limiter-clock times t0 and t1 (which bracket the run). Token bucket, GCRA
// and sliding log: burst + limit * elapsed / period. Fixed window and
// sliding counter count at most `limit` in each aligned window, so: limit x
// aligned windows touched. Prints the result; returns true if it holds.
bool CheckBound(const Band& band, int64_t busiest_key_admitted, int64_t t0,
                int64_t t1) {
  const int64_t period_ns = absl::ToInt64Nanoseconds(band.period);
  const int64_t elapsed_ns = t1 - t0;
  const double elapsed_s = static_cast<double>(elapsed_ns) / 1e9;
  __int128 bound = 0;  // limit x windows can pass 2^63 with tiny periods
  std::string formula;
  if (IsWindowAlgorithm(band.algorithm)) {
    const int64_t offset_ns = absl::ToInt64Nanoseconds(band.window_offset);
    const auto window = [&](int64_t t) {
      const int64_t x = t - offset_ns;
      return x / period_ns - (x % period_ns < 0 ? 1 : 0);  // floor
    };
    const int64_t windows = window(t1) - window(t0) + 1;
    bound = static_cast<__int128>(band.limit) * windows;
    formula = absl::StrFormat("limit %d x %d aligned windows in %.3fs",
                              band.limit, windows, elapsed_s);
  } else {
    const int64_t burst =
        (band.algorithm == Algorithm::kSlidingWindowLog || band.burst == 0)
            ? band.limit
            : band.burst;
    bound = burst + static_cast<__int128>(band.limit) * elapsed_ns / period_ns;
    formula = absl::StrFormat("burst %d + %d per %s x %.3fs", burst, band.limit,
                              absl::FormatDuration(band.period), elapsed_s);
  }
  const bool ok = busiest_key_admitted <= bound;
  const int64_t shown = static_cast<int64_t>(
      std::min<__int128>(bound, std::numeric_limits<int64_t>::max()));
  absl::PrintF("bound: busiest key admitted %d %s %d = %s\n",
               busiest_key_admitted, ok ? "<=" : ">", shown, formula);
  absl::PrintF("bound check: %s\n", ok ? "OK" : "EXCEEDED");
  return ok;
}

}  // namespace

int RunDemo(const std::vector<std::string>& args) {
  DemoOptions o;
  if (absl::Status s = ParseDemoFlags(args, &o); !s.ok()) {
    absl::FPrintF(stderr, "tokenlease demo: %s\n", s.message());
    return 2;
  }
  if (o.help) {
    absl::PrintF("%s", DemoUsage());
    return 0;
  }

  Band band;
  band.algorithm = o.algorithm;
  band.limit = o.limit;
  band.period = o.period;
  band.burst = o.burst;
  LimitSpec spec;
  spec.bands.push_back(band);
  if (absl::Status s = ValidateSpec(spec); !s.ok()) {
    absl::FPrintF(stderr, "tokenlease demo: invalid limit: %s\n", s.message());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Limiter>> created = Limiter::Create(spec);
  if (!created.ok()) {
    absl::FPrintF(stderr, "tokenlease demo: %s\n", created.status().message());
    return 2;
  }
  Limiter& limiter = **created;
  if (o.burst_set && (IsWindowAlgorithm(o.algorithm) ||
                      o.algorithm == Algorithm::kSlidingWindowLog)) {
    absl::FPrintF(
        stderr, "note: --burst is ignored by %s (its capacity is the limit)\n",
        AlgorithmFlagName(o.algorithm));
  }

  const double period_s = absl::ToDoubleSeconds(o.period);
  const double key_rate = static_cast<double>(o.limit) / period_s;
  const double limit_rate = key_rate * static_cast<double>(o.keys);
  const double offered = o.offered.value_or(10 * key_rate);

  std::vector<std::string> keys;
  keys.reserve(o.keys);
  for (int64_t i = 0; i < o.keys; ++i) keys.push_back(absl::StrCat("key:", i));
  std::vector<KeyHandle> handles;
  if (o.handle) {
    handles.reserve(keys.size());
    for (const std::string& key : keys) {
      absl::StatusOr<KeyHandle> h = limiter.Resolve(key);
      if (!h.ok()) {
        absl::FPrintF(stderr, "tokenlease demo: resolving %s: %s\n", key,
                      h.status().message());
        return 1;
      }
      handles.push_back(*std::move(h));
    }
  }

  absl::PrintF("tokenlease demo: %s\n", DescribeSpec(spec));
  absl::PrintF(
      "  %d threads, %s, %d %s (%s), for %s\n", o.threads,
      offered > 0 ? absl::StrFormat("%.0f req/s offered in total", offered)
                  : std::string("offered as fast as possible"),
      o.keys, o.keys == 1 ? "key" : "keys uniformly",
      o.handle ? "KeyHandle" : "string key", absl::FormatDuration(o.duration));
  if (o.keys > 1) {
    absl::PrintF(
        "  the limit applies per key: limit/s below is %.0f/s x %d "
        "keys\n",
        key_rate, o.keys);
  }

  std::vector<std::unique_ptr<WorkerStats>> stats;
  for (int i = 0; i < o.threads; ++i) {
    stats.push_back(std::make_unique<WorkerStats>());
    stats.back()->admitted_per_key.assign(keys.size(), 0);
  }

  // t0 and t1 (limiter clock) bracket every request, for the bound check.
  // Workers start 20 ms from now; t0 is 1 ms earlier than that, in case the
  // two clocks disagree a little.
  constexpr auto kStartDelay = std::chrono::milliseconds(20);
  const int64_t t0 = limiter.clock()->NowNanos() +
                     ToNanos(kStartDelay - std::chrono::milliseconds(1));
  Load load;
  load.limiter = &limiter;
  load.keys = &keys;
  load.handles = o.handle ? &handles : nullptr;
  load.start = SteadyClock::now() + kStartDelay;
  load.end = load.start + absl::ToChronoNanoseconds(o.duration);
  // Beyond one request per nanosecond per thread, pacing is moot.
  const double interval_ns = offered > 0 ? 1e9 * o.threads / offered : 0;
  load.interval_ns = interval_ns >= 1 ? interval_ns : 0;

  std::vector<std::thread> workers;
  for (int i = 0; i < o.threads; ++i) {
    workers.emplace_back(o.handle ? RunWorker<true> : RunWorker<false>,
                         std::cref(load), uint64_t{0x5eed} + i, stats[i].get());
  }

  PrintLiveHeader();
  Totals prev;
  SteadyClock::time_point prev_time = load.start;
  for (SteadyClock::time_point tick = load.start + kReportInterval;
       tick < load.end; tick += kReportInterval) {
    std::this_thread::sleep_until(tick);
    Totals cur = Collect(stats);
    const SteadyClock::time_point now = SteadyClock::now();
    PrintLiveLine(ToSeconds(now - load.start), ToSeconds(now - prev_time), prev,
                  cur, limit_rate);
    prev = std::move(cur);
    prev_time = now;
  }
  // A paced worker may finish early when its next request is due after the
  // end; the run still lasts the whole duration.
  std::this_thread::sleep_until(load.end);
  for (std::thread& w : workers) w.join();
  const SteadyClock::time_point done = SteadyClock::now();
  const int64_t t1 = limiter.clock()->NowNanos();
  if (done - prev_time > std::chrono::milliseconds(1)) {
    PrintLiveLine(ToSeconds(done - load.start), ToSeconds(done - prev_time),
                  prev, Collect(stats), limit_rate);
  }

  const double seconds = ToSeconds(done - load.start);
  absl::PrintF(
      "\nsummary over %.3fs (admitted/s includes the initial "
      "burst):\n",
      seconds);
  absl::PrintF("%8s %12s %12s %12s %9s %9s %9s %9s %9s\n", "thread", "offered",
               "admitted", "admitted/s", "adm/limit", "p50(ns)", "p90(ns)",
               "p99(ns)", "max(ns)");
  Totals total;
  std::vector<uint64_t> per_key(keys.size(), 0);
  for (int i = 0; i < o.threads; ++i) {
    const WorkerStats& s = *stats[i];
    const HistogramCounts latency = s.latency.Snapshot();
    const uint64_t offered_i = s.offered.load(std::memory_order_relaxed);
    const uint64_t admitted_i = s.admitted.load(std::memory_order_relaxed);
    PrintSummaryRow(absl::StrCat(i), offered_i, admitted_i, latency, seconds,
                    limit_rate);
    total.offered += offered_i;
    total.admitted += admitted_i;
    total.latency.Merge(latency);
    for (size_t k = 0; k < per_key.size(); ++k) {
      per_key[k] += s.admitted_per_key[k];
    }
  }
  PrintSummaryRow("total", total.offered, total.admitted, total.latency,
                  seconds, limit_rate);
  if (o.keys > 1) {
    const int64_t used = std::count_if(per_key.begin(), per_key.end(),
                                       [](uint64_t n) { return n > 0; });
    absl::PrintF("keys admitted at least once: %d of %d\n", used, o.keys);
  }

  const uint64_t busiest = *std::max_element(per_key.begin(), per_key.end());
  const bool ok = CheckBound(limiter.spec().bands[0],
                             static_cast<int64_t>(busiest), t0, t1);
  return ok ? 0 : 1;
}

}  // namespace tokenlease::tools
