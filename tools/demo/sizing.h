// What the demo chooses when the flags leave it open (0 on the command
// line): the load's size from the machine's CPUs, and the limit, burst,
// offered rate and outage from the scenario. On a 2-core machine the old
// fixed load (4 processes x 2 threads waking for every call) starved
// redis-server and showed 1.5 s with nothing admitted: what the demo shows
// must be tokenlease, not a starved CPU.
//
// The rule (PlanLoad), for C CPUs this process may run on:
//   spare     = C - 1 (one CPU's share for redis-server and the parent;
//               with C = 1 they share it with the load)
//   instances = spare, at least 2 (a limit shared by one process shows
//               nothing) and at most 4 (a chart with more lines is
//               unreadable)
//   threads   = spare / instances per instance, at least 1: at most one
//               load thread per spare CPU once there are enough of them;
//               in direct mode at least kDirectThreads, because each
//               decision blocks its thread (asleep) for a Redis round trip
//   pacing    = tick: a load thread wakes once per --tick_us (1 ms) and
//               makes the calls due since back to back, so it offers the
//               rate without spinning and without a wake-up per call.
// The offered rate is kOverload x the limit on the hottest key, whatever
// the machine: pacing, not the CPU count, keeps it from starving Redis.
#ifndef TOKENLEASE_TOOLS_DEMO_SIZING_H_
#define TOKENLEASE_TOOLS_DEMO_SIZING_H_

#include <string>

#include "demo/flags.h"

namespace tokenlease::tools {

// The CPUs this process may run on (sched_getaffinity; else
// std::thread::hardware_concurrency), at least 1.
int UsableCpus();

// The load the rule above gives `cpus` CPUs.
struct LoadPlan {
  int instances = 0;
  int threads = 0;  // per instance
  Pacing pacing = Pacing::kTick;

  bool operator==(const LoadPlan&) const = default;
};

// A direct-mode load thread waits for a reply per decision: this many per
// instance keep several calls in flight (they sleep while they wait).
inline constexpr int kDirectThreads = 4;

// The plan for `cpus` (>= 1) CPUs in `mode`; `instances` > 0 fixes the
// instance count (--instances) and the threads are spread over it.
LoadPlan PlanLoad(int cpus, int instances = 0, Mode mode = Mode::kLeased);

// `o` with every field left at 0 filled in: instances and threads by
// PlanLoad(cpus), limit, burst and offered by the scenario (flags.h), the
// outage's start and length from --seconds. Fields already set are kept,
// so resolving twice changes nothing.
DemoOptions ResolveOptions(DemoOptions o, int cpus);

// The banner's account of the choices: for each of the load's size, the
// limit and the offered rate, what it is and whether the flags, the
// machine or the scenario chose it. `requested` is `resolved` before
// ResolveOptions.
std::string DescribeChoices(const DemoOptions& requested,
                            const DemoOptions& resolved, int cpus);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_SIZING_H_
