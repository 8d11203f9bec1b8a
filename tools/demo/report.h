// What the demo prints about a run besides the live rows: the banner, the
// sums over the instances, the per-window CSV, the chart, and the summary: a
// table of the hot key's admissions by outage phase against their bounds
// ("BOUND EXCEEDED" lines), then a line each for the outage, the load,
// Redis and (zipf) the per-key figures. Pure but for WriteFile.
//
// The bounds (BoundOf) are docs/design.md's ("Accuracy bound") and
// docs/operations.md's ("Failure modes", "After the outage"), in L the
// limit per second, B the burst, t the span's seconds, N the instances,
// M = 2 x max lease - 1 what one instance may hold in leases, A what it
// may admit for a key without a lease (cold_key_policy=local_share), both
// 0 outside leased mode, and k B the extra bursts of an outage
// (OutageExtraBursts): 2 with fail_local (the local shares start full, and
// the shared bucket refills meanwhile or restarts full), 1 with
// fail_closed after kill -9 without --start_empty; fail_open has none.
#ifndef TOKENLEASE_TOOLS_DEMO_REPORT_H_
#define TOKENLEASE_TOOLS_DEMO_REPORT_H_

#include <array>
#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

// Formatting shared by the live rows and the summary. The value at quantile
// q in [0, 1] of `sorted` (the ceil(q * n)-th smallest; the smallest for
// q = 0; 0 if empty); rounded to a whole number ("1235"); with thousands
// separators ("1,234,567"); a latency for a narrow column ("240ns",
// "1.49us", "23.9us", "1.24ms").
int64_t Percentile(const std::vector<int64_t>& sorted, double q);
std::string Fmt(double v);
std::string Commas(int64_t v);
std::string ShortNs(int64_t ns);

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
  std::vector<int64_t> mem_per_window;  // used_memory; -1: not sampled
  int64_t script_calls = -1;
  // usec= of EVALSHA + EVAL in INFO commandstats (wall time inside the
  // scripts), and the server's CPU time (INFO cpu) from before the
  // instances started to the end.
  int64_t script_usec = -1, cpu_usec = -1;
  // --outage_kind=kill: the server's counters began again at the restart.
  bool restarted = false;
  // --redis=cluster (the figures above are summed over its primaries): the
  // CPU time of each node that served slots, named ("node 2 (taken away)").
  std::vector<std::pair<std::string, int64_t>> node_cpu_usec;
};

// Sums over the instances: per window (final counts; keys, RSS and
// commands summed over those sampled), per phase, and the run's.
struct Totals {
  std::vector<Window> windows;
  Counts all;
  std::array<Counts, kOutagePhases> phases;
  std::vector<Sample> samples;
  std::vector<KeyCount> per_key;  // in rank order
  absl::flat_hash_map<std::string, double> metrics;
  int64_t last_ns = 0, commands_with_shutdown = 0;
  double duration_s = 0;  // start to the last decision
  // When an instance first judged Redis down (seconds since the start; -1:
  // never). Before a planned outage, a stalled Redis did it: the failure
  // mode decided then, and that phase's bound has the outage's terms.
  double first_down_s = -1;

  // A metric summed over the instances (0 if absent).
  double Metric(const std::string& series) const;
};
Totals Aggregate(const RunRecord& run);

// The latencies of the samples `keep` accepts, sorted.
std::vector<int64_t> Latencies(const std::vector<Sample>& samples,
                               absl::FunctionRef<bool(const Sample&)> keep);

// A bound on a key's admissions, with its formula ("L t + B + N (A + M)");
// value < 0: none (fail_open).
struct Bound {
  double value = -1;
  std::string formula;
};
enum class Span { kBefore, kDuring, kAfter, kWhole, kBusiest, kKey };
// The bound (above) of a span of `seconds`. `unplanned_outage`: the
// instances judged Redis down in a kBefore span (a stalled server), so the
// failure mode's terms are added as for the outage.
Bound BoundOf(const DemoOptions& o, Span span, double seconds,
              bool unplanned_outage = false);
// The max lease, M (one instance's) and A of the bounds.
struct Symbols {
  int64_t max_lease = 0, held = 0, local_allowance = 0;
};
Symbols SymbolsOf(const DemoOptions& o);
// The extra bursts k of the whole run's bound; -1: no bound (fail_open).
int OutageExtraBursts(const DemoOptions& o);

// A row of the summary's table: the hot key's admissions in a phase.
struct PhaseRow {
  std::string name;  // "before", "during", "after", "whole run"
  double from_s = 0, to_s = 0;
  int64_t admitted = 0;
  Bound bound;
  std::vector<int64_t> latency;  // sorted; empty for the busiest second

  double Seconds() const { return to_s - from_s; }
  double Rate() const;  // admitted per second
};
// The outage's phases that ran, the whole run and the busiest 1 s span.
std::vector<PhaseRow> PhaseRows(const DemoOptions& o, const Totals& t);

// What the outage takes away: "redis-server", or "the hot key's primary"
// (--redis=cluster; "the hottest key's" for zipf).
std::string OutageTarget(const DemoOptions& o);

// The banner: the scenario, the limit, `choices` (DescribeChoices), the
// lease options and the outage.
std::string Banner(const DemoOptions& o, const std::string& choices = "");

// --csv=auto and --chart=auto:
// $TMPDIR/tokenlease_demo_<mode>_<scenario>_<YYYYmmdd-HHMMSS>.<extension>
// (/tmp without TMPDIR), in `now`'s local time.
std::string AutoPath(const DemoOptions& o, const char* extension,
                     std::time_t now);

// Writes `text` to `path`; the error names the file and the flag.
absl::Status WriteFile(const std::string& path, const std::string& text,
                       const char* flag);

// The per-window CSV (o.csv): a row per window and instance and an "all"
// row: window_start_s, instance, offered, admitted, limit_bound (limit x
// window), hot_offered, hot_admitted, keys, rss_kb, redis_commands_total,
// redis_used_memory ("all" rows), phase (before, during or after the
// outage the window starts in; "none" without one).
std::string CsvText(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis);

// The zipf run's per-key lines: the admissions against the ideal
// min(offered, L t + B) per key, by Zipf rank group, and the keys over
// their bound (the `worst` most admitted named).
std::string PerKeySummary(const DemoOptions& o, const Totals& t,
                          size_t worst = 5);

// The summary, from "== summary" on.
std::string Summary(const DemoOptions& o, const RunRecord& run, const Totals& t,
                    const RedisFigures& redis);

// The chart (--chart; chart.cc), an SVG document written by a small writer
// of our own (no dependency): the hot key's admitted rate per window over
// all instances and per instance, a step per window, against the limit,
// with the outage shaded, one instance's share during it (fail_local; in
// local mode all along) and each phase's rate as a note. Elements carry a
// class so that tests and style sheets can find them: "series global",
// "series instance" (with a data-name), "rule limit", "rule share", "band
// outage", "note phase", "x-tick", "y-tick", "legend". x is in seconds
// from the start (to the end of the last window that ran), y in admissions
// per second from 0.
std::string RunChartSvg(const DemoOptions& o, const RunRecord& run,
                        const Totals& t);
// Tick values from 0 up to the first at or above `max` (> 0; else 1), in
// steps of 1, 2 or 5 x 10^k chosen so that there are at most `most` steps.
std::vector<double> NiceTicks(double max, int most);
// `text` with &, <, >, " and ' as XML character references.
std::string XmlEscape(absl::string_view text);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_REPORT_H_
