// The load the instances offer: the key set (one hot key or Zipf-distributed
// keys), the reporting windows and outage phases of a moment of the run,
// the per-key counts, and the pacing schedule of a load thread. Shared by
// the parent (windows, Zipf figures) and the instances.
#ifndef TOKENLEASE_TOOLS_DEMO_WORKLOAD_H_
#define TOKENLEASE_TOOLS_DEMO_WORKLOAD_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "demo/flags.h"

namespace tokenlease::tools {

// steady_clock now, in ns: the time base of every schedule and window (the
// parent and the instances share it, being on one machine).
int64_t SteadyNs();

// The --window_ms windows of a run of --seconds (the last one may be
// shorter), their length, and the one `elapsed_ns` into the run is in.
int64_t NumWindows(const DemoOptions& o);
int64_t WindowNs(const DemoOptions& o);
int64_t WindowAt(const DemoOptions& o, int64_t elapsed_ns);

// The outage phase of a moment `elapsed_ns` into the run, by the schedule
// (--outage_at, --outage_seconds).
enum OutagePhase : int { kBeforeOutage = 0, kDuringOutage, kAfterOutage };
inline constexpr int kOutagePhases = 3;
OutagePhase PhaseAt(const DemoOptions& o, int64_t elapsed_ns);

// The keys ("hot", or "user:%08d" by Zipf rank) and for Zipf their
// cumulative weights, not normalised; Draw picks a key's index.
struct KeySet {
  std::vector<std::string> names;
  std::vector<double> cdf;
  size_t Draw(std::mt19937_64& rng) const;
};
KeySet MakeKeys(const DemoOptions& o);
std::string KeyName(const DemoOptions& o, int64_t rank);

// The probability of Zipf rank 0 (1 for the hot key).
double ZipfP0(const DemoOptions& o);

// A key is hot if its offered rate is at least kHotFraction of its limit;
// as the probability falls with the rank, the hot keys are ranks 0 ..
// HotKeys(o) - 1. The one key of --scenario=hot is hot.
inline constexpr double kHotFraction = 0.1;
int64_t HotKeys(const DemoOptions& o);

// One key's counts over the run.
struct KeyCount {
  int64_t rank = 0, offered = 0, admitted = 0;
  bool operator==(const KeyCount&) const = default;
};

// `counts` sorted by rank, equal ranks summed (over threads or instances).
std::vector<KeyCount> SumByRank(std::vector<KeyCount> counts);

// One load thread's per-key counts: an array for the first kDenseKeys
// ranks (no hashing on the load thread), a hash map beyond them (so that
// --zipf_keys=1e8 does not cost 16 bytes per key and thread).
class KeyCounter {
 public:
  static constexpr int64_t kDenseKeys = int64_t{1} << 20;
  explicit KeyCounter(int64_t keys);
  void Count(size_t rank, bool admitted) {
    KeyCount& k = rank < dense_.size() ? dense_[rank] : sparse_[rank];
    ++k.offered;
    k.admitted += admitted ? 1 : 0;
  }
  // Appends the keys offered anything, in no particular order.
  void AppendTo(std::vector<KeyCount>& out) const;

 private:
  std::vector<KeyCount> dense_;
  absl::flat_hash_map<size_t, KeyCount> sparse_;
};

// The name of load thread `t` (pthread_setname_np, at most 15 characters):
// "tl-load-<t>", for tracers (bench/strace_decisions.sh).
std::string LoadThreadName(int t);

// A thread that falls behind its schedule by more than this drops the
// missed calls instead of bursting to catch up (the achieved rate is
// reported).
inline constexpr int64_t kMaxLagNs = 1'000'000;

// One load thread's schedule: a call every `interval_ns` from `first_ns` on
// (absolute, so wake-up delays are made up within the lag allowed). With
// Pacing::kTick the thread sleeps until the next point of the grid
// tick_origin_ns + k x tick_ns, so it wakes at most once per tick and makes
// the calls due by then back to back; it may then lag by up to a tick, and
// that much more is allowed before calls are dropped.
class Pacer {
 public:
  Pacer(double first_ns, double interval_ns, Pacing pacing, double tick_ns = 0,
        double tick_origin_ns = 0)
      : next_(first_ns),
        interval_(interval_ns),
        pacing_(pacing),
        tick_(pacing == Pacing::kTick ? tick_ns : 0),
        tick_origin_(tick_origin_ns) {}

  // True if a call is due at `now_ns`. Otherwise waits part of the gap
  // (tick: sleeps until the grid point at or after the call; sleep: until
  // ~20 us before it; spin: yields when it is > 20 us away; else, and
  // always with busy, pauses) and returns false: read the clock again.
  bool DueOrWait(int64_t now_ns) const;
  // Books the call made at `now_ns`: the next is due one interval after the
  // previous due time, or after `now_ns` if that was MaxLagNs() late.
  void Book(int64_t now_ns);

  double next_ns() const { return next_; }
  // The grid point at or after `due_ns` (tick pacing).
  double WakeNs(double due_ns) const;
  double MaxLagNs() const { return kMaxLagNs + tick_; }

 private:
  double next_;
  double interval_;
  Pacing pacing_;
  double tick_;
  double tick_origin_;
};

// The interval between one thread's calls, in ns; thread `t` of instance
// `instance`'s first call and the origin of its tick grid: the threads of
// all instances are spread evenly over one interval and over one tick, so
// they do not all wake at once.
double CallIntervalNs(const DemoOptions& o);
double FirstCallNs(const DemoOptions& o, int instance, int t, int64_t start_ns);
double TickOriginNs(const DemoOptions& o, int instance, int t,
                    int64_t start_ns);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_WORKLOAD_H_
