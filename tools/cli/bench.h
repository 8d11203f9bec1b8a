// `tokenlease bench`: this machine's hot-path and direct-mode numbers in
// under a minute, with ratios taken in the same run (the ratios compare
// across machines; absolute times do not). Own timing loops on
// std::chrono::steady_clock: each case is warmed up and calibrated, then
// measured `reps` times, the repetitions of all cases interleaved so that
// a change in the machine's load hits every case alike; the median counts.
#ifndef TOKENLEASE_TOOLS_CLI_BENCH_H_
#define TOKENLEASE_TOOLS_CLI_BENCH_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "tokenlease/redis.h"

namespace tokenlease::cli {

struct BenchOptions {
  int reps = 5;
  // One repetition of a hot-path case, and of a direct-mode case.
  absl::Duration hot_time = absl::Milliseconds(800);
  absl::Duration direct_time = absl::Seconds(2);
  // Asynchronous direct-mode calls kept in flight for the pipelined case.
  int callers = 32;
  // Redis for the leased and direct cases; empty: a private redis-server
  // on a free 127.0.0.1 port, stopped at the end.
  std::string url;
  // TLS for a rediss `url` (RedisOptions::tls); ignored without `url`.
  RedisTlsOptions tls;
};

// The short run of --quick (tests, a first look): 3 repetitions of 20 ms
// and 150 ms.
BenchOptions QuickBenchOptions();

// One hot-path case: nanoseconds per decision, one thread.
struct HotResult {
  std::string name;
  double median_ns = 0, min_ns = 0, max_ns = 0;
  double admitted = 0;  // fraction of the timed calls admitted
  std::string note;     // e.g. why a case did not run
};

struct DirectResult {
  bool ran = false;
  std::string note;  // why it did not run
  // Blocking TryAcquire, one caller, one call at a time.
  double single_p50_us = 0, single_p99_us = 0, single_per_s = 0;
  // TryAcquireAsync with `callers` calls in flight (pipelined by the
  // connection's client thread).
  int callers = 0;
  double pipelined_p50_us = 0, pipelined_p99_us = 0, pipelined_per_s = 0;
  int64_t errors = 0;  // calls without a decision
};

struct BenchReport {
  BenchOptions options;
  std::string machine;  // CPUs, model, load average, build
  std::string redis;    // endpoint and server version
  // In order: atomic fetch_sub, leased by handle, local by handle, local by
  // name, mutex + unordered_map by name.
  std::vector<HotResult> hot;
  DirectResult direct;
  double seconds = 0;  // the whole run
};

// The names of the hot-path cases, in the report's order.
std::vector<std::string> HotCaseNames();

// Runs everything; progress lines go to `progress`. Errors: none for a
// missing Redis (those cases carry a note and the rest runs); Cancelled
// on SIGINT.
absl::StatusOr<BenchReport> RunBenchmarks(const BenchOptions& options,
                                          std::ostream& progress);

// The table.
std::string RenderBench(const BenchReport& report);

// Runs the command on `args` (what follows "bench"); exit status 0, or 2
// on a usage error.
int RunBench(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_BENCH_H_
