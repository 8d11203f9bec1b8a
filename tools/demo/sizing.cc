// The load's size from the CPUs and the scenario's defaults (sizing.h).
#include "demo/sizing.h"

#include <sched.h>

#include <algorithm>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/format.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

constexpr int kMinInstances = 2;
constexpr int kMaxPlannedInstances = 4;

// The CPUs left to the load: all but one, which redis-server and the
// parent share (both single-threaded, and mostly idle: the point is that
// they never wait behind a load thread for a core).
int SpareCpus(int cpus) { return std::max(1, cpus - 1); }

}  // namespace

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

LoadPlan PlanLoad(int cpus, int instances, Mode mode) {
  const int spare = SpareCpus(std::max(1, cpus));
  LoadPlan p;
  p.instances = instances > 0
                    ? instances
                    : std::clamp(spare, kMinInstances, kMaxPlannedInstances);
  p.threads =
      std::clamp(spare / p.instances,
                 mode == Mode::kDirect ? kDirectThreads : 1, kMaxThreads);
  p.pacing = Pacing::kTick;
  return p;
}

DemoOptions ResolveOptions(DemoOptions o, int cpus) {
  const bool hot = o.keys == KeyDist::kHot;
  if (o.instances == 0 || o.threads == 0) {
    const LoadPlan plan = PlanLoad(cpus, o.instances, o.mode);
    if (o.instances == 0) o.instances = plan.instances;
    if (o.threads == 0) o.threads = plan.threads;
  }
  if (o.limit == 0) o.limit = hot ? kHotLimit : kZipfLimit;
  if (o.burst == 0) {
    // The local mode and fail_local split the burst over the instances:
    // each needs at least one token of it.
    o.burst = hot ? std::max<int64_t>(o.limit / kHotBurstDivisor, o.instances)
                  : o.limit;
  }
  if (o.offered == 0) {
    o.offered = kOverload * static_cast<double>(o.limit) / ZipfP0(o);
  }
  if (o.outage && o.outage_at == 0) o.outage_at = kOutageStart * o.seconds;
  if (o.outage && o.outage_seconds == 0) {
    o.outage_seconds = kOutageLength * o.seconds;
  }
  return o;
}

std::string DescribeChoices(const DemoOptions& requested,
                            const DemoOptions& resolved, int cpus) {
  const DemoOptions& r = resolved;
  const bool planned = requested.instances == 0 || requested.threads == 0;
  std::string out = absl::StrFormat(
      "load: %d instance process%s%s x %d load thread%s%s", r.instances,
      r.instances == 1 ? "" : "es",
      requested.instances > 0 ? " (--instances)" : "", r.threads,
      r.threads == 1 ? "" : "s", requested.threads > 0 ? " (--threads)" : "");
  if (planned) {
    absl::StrAppendFormat(
        &out,
        "; chosen for the %d CPU%s this process may use: one instance per "
        "CPU left after redis-server's (%d to %d), %s",
        cpus, cpus == 1 ? "" : "s", kMinInstances, kMaxPlannedInstances,
        r.mode == Mode::kDirect
            ? absl::StrFormat("at least %d load threads each (a direct "
                              "decision waits, asleep, for its reply)",
                              kDirectThreads)
            : "at most one load thread per spare CPU");
  }
  out += "\n";
  if (r.pacing == Pacing::kTick) {
    absl::StrAppendFormat(
        &out,
        "pacing: tick; each load thread wakes every %s and makes the calls "
        "due since back to back: nothing spins, so redis-server and the "
        "reconcilers keep their CPU\n",
        ShortNs(int64_t{r.tick_us} * 1000));
  } else {
    absl::StrAppendFormat(&out, "pacing: %s (--pacing)\n",
                          PacingName(r.pacing));
  }
  const double p0 = ZipfP0(r);
  const std::string hottest =
      r.keys == KeyDist::kHot
          ? "the hot key"
          : absl::StrFormat("the hottest key (p = %.4f: %s/s)", p0,
                            Commas(static_cast<int64_t>(p0 * r.offered)));
  absl::StrAppendFormat(&out, "offered: %s/s %s = %.1f x the limit on %s\n",
                        Commas(static_cast<int64_t>(r.offered)),
                        requested.offered > 0 ? "(--offered)" : "(chosen)",
                        p0 * r.offered / static_cast<double>(r.limit), hottest);
  return out;
}

}  // namespace tokenlease::tools
