// What the demo prints about a run besides the live rows: the banner before
// it, and afterwards the aggregation over the instances, the per-window CSV
// and the summary with its bound checks ("BOUND EXCEEDED" lines).
//
// Bounds (token bucket, limit L per second, burst B, run of D seconds):
//   total admitted on the hot key  <= B + L * D (+ the outage's extra
//                                     bursts, phases.h)
//   admitted in any 1 s            <= L + B + H (+ the same extra bursts;
//                                     with fail_open only spans clear of
//                                     the outage are checked)
// where H is what the instances may hold in leases at the start of the span
// (tokens taken from Redis but not yet spent): each instance holds at most
// M = 2 * max_lease - 1 tokens for unit costs (docs/design.md, "Accuracy
// bound"), so H = N * M for leased mode and 0 for local and direct mode.
// After the first second the burst is spent under overload, so a 1 s span
// should see about L + H; that is printed as information, not checked.
// Local mode with a window algorithm (--algorithm=fixed_window or
// sliding_counter) admits at most L per aligned second, so its total bound
// is L x (aligned seconds touched) = L x (ceil(D) + 1). The table by outage
// phase, with each phase's bound, is phases.h.
#ifndef TOKENLEASE_TOOLS_DEMO_REPORT_H_
#define TOKENLEASE_TOOLS_DEMO_REPORT_H_

#include <array>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

// B, the largest lease and H (see above), and A, what one instance may admit
// for a key without a lease (leased mode with --cold_key_policy=local_share:
// max(1, floor(local_share x B)); else 0; per_key.h).
struct Bounds {
  int64_t burst = 0, max_lease = 0, held = 0, local_allowance = 0;
};
// The bounds' terms for the run's options.
Bounds ComputeBounds(const DemoOptions& o);

// The run as the parent saw it.
struct RunRecord {
  int64_t start_ns = 0;
  int64_t windows = 0;         // cut to the windows that ran if interrupted
  int64_t interrupted_ns = 0;  // 0: the run completed
  std::vector<InstanceReport> reports;
};

// What the parent read from the Redis server (ok: there is one).
struct RedisFigures {
  bool ok = false;
  int64_t mem_before = -1, mem_end = -1;
  std::vector<int64_t> mem_per_window;  // -1 where not sampled
  int64_t script_calls = -1, commands_processed = -1, dbsize = -1;
  // usec= of EVALSHA + EVAL in INFO commandstats: the server's own timing
  // of the scripts (wall time inside them, so it includes time the server
  // was preempted, and excludes reading commands and writing replies).
  int64_t script_usec = -1;
  // The server process's CPU time (user + system, INFO cpu) from before the
  // instances started to the end: scripts, network I/O and timers.
  int64_t cpu_usec = -1;
  // --outage_kind=kill: the server was killed and restarted, so its
  // counters (script calls and time, CPU) cover only the time since.
  bool restarted = false;
};

// Sums over the instances.
struct Totals {
  std::vector<WindowCounts> all;  // per window
  int64_t last_ns = 0, errors = 0;
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  FinalStats stats;
  std::vector<int64_t> latency;                                   // sorted
  std::vector<int64_t> latency_hot, latency_cold;                 // sorted
  std::array<std::vector<int64_t>, kOutagePhases> latency_phase;  // sorted
  std::array<PhaseCounts, kOutagePhases> phases;  // with an outage
  std::vector<HealthEvent> health_events;         // every instance's
  std::vector<KeyCount> per_key;  // in rank order, summed over instances
  double duration_s = 0;          // start to the last decision
};
// Sums the run's windows (those in run.windows) and counters over its
// instances.
Totals Aggregate(const RunRecord& run);

// The banner: the scenario, the run's settings and the outage, a few
// lines.
// `choices`: DescribeChoices (sizing.h), after the limit.
std::string Banner(const DemoOptions& o, const std::string& choices = "");

// --csv=auto and --chart=auto:
// $TMPDIR/tokenlease_demo_<mode>_<scenario>_<YYYYmmdd-HHMMSS>.<extension>
// (/tmp without TMPDIR), the time being `now`'s local time.
std::string AutoPath(const DemoOptions& o, const char* extension,
                     std::time_t now);

// Writes the per-window CSV to o.csv: one row per window and instance plus
// an "all" row: window_start_s, instance, offered, admitted, limit_bound
// (limit x window), hot_offered, hot_admitted, keys and rss_kb at the
// window's end, redis_commands_total (cumulative), redis_used_memory ("all"
// rows only), phase (before, during or after the outage the window starts
// in; "none" without one).
absl::Status WriteCsv(const DemoOptions& o, const RunRecord& run,
                      const Totals& t, const RedisFigures& redis);

// The summary, from "== summary" on: the table by phase with its bounds
// (phases.h), then the details.
std::string Summary(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_REPORT_H_
