// The direct-mode half of `tokenlease bench`: the round trip of one
// DirectLimiter decision (a blocking call, one at a time), and the
// throughput when many asynchronous calls are in flight, which the
// connection's client thread pipelines into shared writes.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/bench_parts.h"
#include "tokenlease/direct.h"

namespace tokenlease::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKeys = 64;  // spread over keys, as real traffic is
constexpr int kWarmupCalls = 200;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
      .count();
}

struct Rep {
  double p50_us = 0, p99_us = 0, per_s = 0;
};

// Blocking calls one after another for `time`.
Rep Single(DirectLimiter& limiter, absl::Duration time, int64_t* errors) {
  std::vector<double> lat;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::microseconds(absl::ToInt64Microseconds(time));
  for (int i = 0; Clock::now() < end; ++i) {
    const Clock::time_point t = Clock::now();
    // Not Redis's decision: the failure mode's (no answer in time).
    if (limiter.TryAcquire(absl::StrCat("k", i % kKeys)).source !=
        DecisionSource::kDirect) {
      ++*errors;
    }
    lat.push_back(MicrosSince(t));
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return {Quantile(lat, 0.5), Quantile(lat, 0.99), lat.size() / s};
}

// `window` asynchronous calls kept in flight for `time`: each completion
// lets the driver submit the next.
Rep Pipelined(DirectLimiter& limiter, int window, absl::Duration time,
              int64_t* errors) {
  // Shared with the callbacks: one that comes after a timed-out wait below
  // must still find it.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;
    std::vector<double> lat;
    int64_t failed = 0;
  };
  auto st = std::make_shared<State>();
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::microseconds(absl::ToInt64Microseconds(time));
  for (int i = 0; Clock::now() < end; ++i) {
    {
      std::unique_lock<std::mutex> lock(st->mu);
      st->cv.wait(lock, [&] { return st->in_flight < window; });
      ++st->in_flight;
    }
    const Clock::time_point t = Clock::now();
    // Runs on the client thread (or here, if the call could not be
    // queued): short, and it never blocks for long.
    limiter.TryAcquireAsync(absl::StrCat("k", i % kKeys), 1,
                            [st, t](Decision d) {
                              const double us = MicrosSince(t);
                              {
                                std::lock_guard<std::mutex> lock(st->mu);
                                st->lat.push_back(us);
                                if (d.source != DecisionSource::kDirect) {
                                  ++st->failed;
                                }
                                --st->in_flight;
                              }
                              st->cv.notify_one();
                            });
  }
  // Every call ends by its deadline (the connection's command_timeout).
  std::unique_lock<std::mutex> lock(st->mu);
  st->cv.wait_for(lock, std::chrono::seconds(10),
                  [&] { return st->in_flight == 0; });
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  *errors += st->failed + st->in_flight;
  return {Quantile(st->lat, 0.5), Quantile(st->lat, 0.99), st->lat.size() / s};
}

}  // namespace

DirectResult MeasureDirect(const BenchOptions& options, const std::string& url,
                           std::ostream& progress,
                           absl::FunctionRef<bool()> cancelled) {
  DirectResult r;
  r.callers = options.callers;
  if (url.empty()) {
    r.note = "no Redis";
    return r;
  }
  DirectLimiterOptions o;
  o.redis.url = url;
  o.redis.tls = options.tls;
  o.key_prefix =
      absl::StrCat("tokenlease-bench:", absl::GetCurrentTimeNanos(), ":");
  // Every call admitted: the cost measured is the round trip and the
  // script, not a denial's shortcut.
  absl::StatusOr<std::unique_ptr<DirectLimiter>> limiter =
      DirectLimiter::Create(
          LimitSpec::TokenBucket(1'000'000'000'000, absl::Seconds(1),
                                 1'000'000'000'000),
          o);
  if (!limiter.ok()) {
    r.note = std::string(limiter.status().message());
    return r;
  }
  // Warm-up: the connection, the script's first EVAL, the server's caches.
  for (int i = 0; i < kWarmupCalls; ++i) {
    const Decision d = (*limiter)->TryAcquire(absl::StrCat("k", i % kKeys), 1,
                                              absl::Seconds(2));
    if (d.source != DecisionSource::kDirect) {
      r.note = absl::StrCat("no decision from Redis (",
                            DecisionSourceName(d.source), ")");
      return r;
    }
  }
  std::vector<Rep> single, piped;
  for (int rep = 0; rep < options.reps && !cancelled(); ++rep) {
    progress << "tokenlease bench: direct mode, repetition " << rep + 1
             << " of " << options.reps << "\n"
             << std::flush;
    single.push_back(Single(**limiter, options.direct_time, &r.errors));
    piped.push_back(
        Pipelined(**limiter, options.callers, options.direct_time, &r.errors));
  }
  if (single.empty()) {
    r.note = "cancelled";
    return r;
  }
  auto median = [](const std::vector<Rep>& v, double Rep::*field) {
    std::vector<double> x;
    for (const Rep& rep : v) x.push_back(rep.*field);
    return Median(x);
  };
  r.ran = true;
  r.single_p50_us = median(single, &Rep::p50_us);
  r.single_p99_us = median(single, &Rep::p99_us);
  r.single_per_s = median(single, &Rep::per_s);
  r.pipelined_p50_us = median(piped, &Rep::p50_us);
  r.pipelined_p99_us = median(piped, &Rep::p99_us);
  r.pipelined_per_s = median(piped, &Rep::per_s);
  return r;
}

}  // namespace tokenlease::cli
