// The summary's table by outage phase (before, during, after the outage,
// and the whole run) and the bounds on the hot key's admissions with the
// outage's terms. Pure (unit-tested).
//
// Let L be the limit per second, B the burst, N the instances, A and M what
// one instance may admit without a lease and hold in leases (per_key.h),
// t a phase's length and D the run's. From docs/design.md ("Accuracy
// bound") and docs/operations.md ("Failure modes", "After the outage"):
//   before, after (Redis decides):  B + L x t + N x (A + M)
//   during, fail_local:             L x t + B + N x (A + M)  (the shares
//                                   start full; leases held are spent)
//   during, fail_closed:            N x (A + M)  (only what was held)
//   during, fail_open:              none (the limit is off)
//   whole run:                      B + L x D + k x B, where k counts the
//                                   outage's extra bursts: 2 with
//                                   fail_local (the local shares start
//                                   full; the shared bucket refilled while
//                                   Redis was away, or a restarted Redis
//                                   starts full), 1 with fail_closed after
//                                   kill -9 without --start_empty (the new
//                                   Redis starts full), else 0; none is
//                                   checked with fail_open.
// Local mode has no Redis and no outage: only the whole run, B + L x D.
#ifndef TOKENLEASE_TOOLS_DEMO_PHASES_H_
#define TOKENLEASE_TOOLS_DEMO_PHASES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

// One row of the table.
struct PhaseRow {
  std::string name;  // "before the outage", "during: STOPPED", ...
  double from_s = 0, to_s = 0;
  int64_t hot_offered = 0, hot_admitted = 0;
  std::vector<int64_t> latency;  // sorted samples
  // Health transitions in the phase over all instances, by kind:
  // "2 healthy->down, 1 down->degraded".
  std::string transitions;
  // The bound on hot_admitted (checked false: no bound, fail_open during
  // the outage), how it is made up ("burst + limit x time = 1000 + 10000 x
  // 8.000") and what an outage term stands for.
  bool checked = true;
  double bound = 0;
  std::string formula;
  std::string note;

  double Seconds() const { return to_s - from_s; }
  double Rate() const;  // hot_admitted per second (0 for an empty phase)
};

// The extra bursts k of the whole run's bound (above); -1: no bound
// (fail_open through an outage).
int OutageExtraBursts(const DemoOptions& o);

// The rows for a run of `duration_s` (the time from the start to the last
// decision): with an outage (o.outage, not local mode) before, during and
// after (while they lasted), then the whole run. `phase_counts` and
// `phase_latency` are summed over the instances (the "P" and "LP" lines;
// unused without an outage), `whole_latency` sorted, `events` every
// instance's health transitions with `start_ns` the run's start.
std::vector<PhaseRow> PhaseRows(
    const DemoOptions& o, double duration_s, int64_t hot_offered,
    int64_t hot_admitted,
    const std::array<PhaseCounts, kOutagePhases>& phase_counts,
    const std::array<std::vector<int64_t>, kOutagePhases>& phase_latency,
    const std::vector<int64_t>& whole_latency,
    const std::vector<HealthEvent>& events, int64_t start_ns);

// The table and the bound lines under it ("BOUND EXCEEDED: ..." for a row
// over its bound).
std::string PhaseTable(const DemoOptions& o, const std::vector<PhaseRow>& rows);

// The outage as the instances lived it, from their health transitions
// (`events[i]`: instance i's, in order; `start_ns`: the run's start): when
// they judged Redis down after the stop (until then, a decision the leases
// could not pay was denied; from then on the failure mode decided), and
// when they heard from it again. "" without an outage.
std::string OutageTimeline(const DemoOptions& o,
                           const std::vector<std::vector<HealthEvent>>& events,
                           int64_t start_ns);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_PHASES_H_
