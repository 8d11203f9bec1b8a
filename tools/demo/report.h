// What the demo prints about a run besides the live rows: the banner, the
// sums over the instances, the per-window CSV, and the summary with the
// bounds it checks ("BOUND EXCEEDED" lines). Pure but for WriteCsv.
//
// Let L be the limit per second, B the burst, N the instances, t a phase's
// length and D the run's; M = 2 x max_lease - 1 what one instance may hold
// in leases (max_lease = max_lease_fraction x B), and A = max(1,
// floor(local_share x B)) what it may admit for a key without a lease with
// --cold_key_policy=local_share (both 0 but in leased mode, A also for the
// other policies). From docs/design.md ("Accuracy bound") and
// docs/operations.md ("Failure modes", "After the outage"), the hot key
// admits at most:
//   before, after the outage (Redis decides):  B + L x t + N x (A + M)
//                                               (not N x (A + M) before)
//   during, fail_local:   L x t + B + N x (A + M) (the shares start full)
//   during, fail_closed:  N x (A + M)             (only what was held)
//   during, fail_open:    none (the limit is off)
//   whole run:            B + L x D + k x B, k the outage's extra bursts:
//                         2 with fail_local (the local shares start full;
//                         the shared bucket refilled meanwhile, or a
//                         restarted Redis starts full), 1 with fail_closed
//                         after kill -9 without --start_empty, else 0;
//                         none with fail_open
//   any 1 s span:         L + (1 + k) x B + N x M (fail_open: only spans
//                         clear of the outage)
//   each key (zipf):      B + L x D + N x (A + M), beside the ideal
//                         min(offered, B + L x D)
// Local mode has no outage: only the whole run, and with a window algorithm
// (fixed_window, sliding_counter) L x (aligned seconds touched).
#ifndef TOKENLEASE_TOOLS_DEMO_REPORT_H_
#define TOKENLEASE_TOOLS_DEMO_REPORT_H_

#include <array>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

// B, the largest lease, N x M and A (above).
struct Bounds {
  int64_t burst = 0, max_lease = 0, held = 0, local_allowance = 0;
};
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
  // usec= of EVALSHA + EVAL in INFO commandstats (wall time inside the
  // scripts), and the server's CPU time (INFO cpu) from before the
  // instances started to the end.
  int64_t script_usec = -1, cpu_usec = -1;
  // --outage_kind=kill: the server's counters began again at the restart.
  bool restarted = false;
};

// Sums over the instances: per window (final counts; keys, RSS and
// commands summed over those sampled), per phase, and the run's.
struct Totals {
  std::vector<Window> windows;
  Counts all;
  std::array<Counts, kOutagePhases> phases;
  std::vector<Sample> samples;
  std::vector<HealthEvent> events;  // every instance's
  std::vector<KeyCount> per_key;    // in rank order
  absl::flat_hash_map<std::string, double> metrics;
  int64_t last_ns = 0, commands_with_shutdown = 0;
  double duration_s = 0;  // start to the last decision

  // A metric summed over the instances (0 if absent).
  double Metric(const std::string& series) const;
};
Totals Aggregate(const RunRecord& run);

// The latencies of the samples `keep` accepts, sorted.
std::vector<int64_t> Latencies(const std::vector<Sample>& samples,
                               absl::FunctionRef<bool(const Sample&)> keep);

// The banner: the scenario, the limit, `choices` (DescribeChoices), the
// lease options and the outage.
std::string Banner(const DemoOptions& o, const std::string& choices = "");

// --csv=auto and --chart=auto:
// $TMPDIR/tokenlease_demo_<mode>_<scenario>_<YYYYmmdd-HHMMSS>.<extension>
// (/tmp without TMPDIR), in `now`'s local time.
std::string AutoPath(const DemoOptions& o, const char* extension,
                     std::time_t now);

// The per-window CSV (o.csv): a row per window and instance and an "all"
// row: window_start_s, instance, offered, admitted, limit_bound (limit x
// window), hot_offered, hot_admitted, keys, rss_kb, redis_commands_total,
// redis_used_memory ("all" rows), phase (before, during or after the
// outage the window starts in; "none" without one).
absl::Status WriteCsv(const DemoOptions& o, const RunRecord& run,
                      const Totals& t, const RedisFigures& redis);

// One row of the table by outage phase, with its bound.
struct PhaseRow {
  std::string name;  // "before the outage", "during: STOPPED", ...
  double from_s = 0, to_s = 0;
  int64_t hot_admitted = 0;
  std::vector<int64_t> latency;  // sorted
  std::string transitions;       // "2 healthy->down, 1 down->degraded"
  // checked false: no bound (fail_open). formula: "burst + limit x time =
  // 1000 + 10000 x 8.000"; note: what an outage term stands for.
  bool checked = true;
  double bound = 0;
  std::string formula, note;

  double Seconds() const { return to_s - from_s; }
  double Rate() const;  // hot_admitted per second
};

// The extra bursts k of the whole run's bound; -1: no bound (fail_open).
int OutageExtraBursts(const DemoOptions& o);
// Before, during and after the outage (those that ran), then the whole run.
std::vector<PhaseRow> PhaseRows(const DemoOptions& o, const RunRecord& run,
                                const Totals& t);
// The table and the bound lines under it.
std::string PhaseTable(const DemoOptions& o, const std::vector<PhaseRow>& rows);
// The outage as the instances lived it, from their health transitions:
// when they judged Redis down and when they heard from it again; "" without
// an outage.
std::string OutageTimeline(const DemoOptions& o, const RunRecord& run);

// The per-key bound (above) of a run of `duration_s`.
struct PerKeyBound {
  int64_t burst = 0, limit = 0, instances = 0, local_allowance = 0, held = 0;
  double duration_s = 0;
  double Ideal() const;  // B + L x D
  double Value() const;  // B + L x D + N x (A + M)
  // "burst + limit x duration + instances x (A + M) = 100 + 100 x 10.000 +
  // 2 x (1 + 19) = 1140".
  std::string Formula() const;
};
PerKeyBound ComputePerKeyBound(const DemoOptions& o, double duration_s);

// The zipf run's per-key lines: the ideal admission by Zipf rank group
// (0-99, 100-999, 1000-9999, 10000+), the bound, the keys over it (the
// `worst` most admitted of them named).
std::string PerKeySummary(const DemoOptions& o, const Totals& t,
                          size_t worst = 5);

// The summary, from "== summary" on.
std::string Summary(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_REPORT_H_
