// The load the instances offer: the key set (one hot key or Zipf-distributed
// keys), the reporting windows, and the pacing schedule of a load thread.
// Shared by the parent (window count, Zipf figures) and the instances.
#ifndef TOKENLEASE_TOOLS_DEMO_WORKLOAD_H_
#define TOKENLEASE_TOOLS_DEMO_WORKLOAD_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "demo/flags.h"

namespace tokenlease::tools {

// steady_clock now, in ns: the time base of every schedule and window (the
// parent and the instances share it, being on one machine).
int64_t SteadyNs();

// The number of --window_ms windows in a run of --seconds (the last one may
// be shorter).
int64_t NumWindows(const DemoOptions& o);
// --window_ms in ns.
int64_t WindowNs(const DemoOptions& o);

// The keys, and for Zipf their cumulative weights.
struct KeySet {
  std::vector<std::string> names;
  std::vector<double> cdf;  // cumulative, not normalised; empty for "hot"

  // A key index drawn from the distribution (always 0 for the hot key).
  size_t Draw(std::mt19937_64& rng) const;
};

// Builds the key set of --keys (names "hot", or "user:%08d" by Zipf rank).
KeySet MakeKeys(const DemoOptions& o);

// The name of the key of rank `rank` (as MakeKeys names it).
std::string KeyName(const DemoOptions& o, int64_t rank);

// The probability of Zipf rank 0 (the hot key in zipf mode; 1 for hot).
double ZipfP0(const DemoOptions& o);

// A key is hot if its offered rate (its probability x the offered rate) is
// at least this fraction of its limit, else cold.
inline constexpr double kHotFraction = 0.1;

// How many keys are hot: as the probability falls with the rank, these are
// ranks 0 .. HotKeys(o) - 1. The one key of --keys=hot is hot.
int64_t HotKeys(const DemoOptions& o);

// The name of load thread `t` (pthread_setname_np; at most 15 characters
// for any t below kMaxThreads): "tl-load-<t>".
std::string LoadThreadName(int t);

// A thread that falls behind its schedule by more than this drops the
// missed calls instead of bursting to catch up (the achieved rate is
// reported).
inline constexpr int64_t kMaxLagNs = 1'000'000;

// One load thread's schedule: a call every `interval_ns` from `first_ns` on
// (absolute, so wake-up delays are made up within the lag allowed).
class Pacer {
 public:
  // With Pacing::kTick the thread sleeps until the next point of the grid
  // tick_origin_ns + k x tick_ns (all integers k), so a thread wakes at
  // most once per tick and makes the calls due by then back to back; it
  // may then lag its schedule by up to a tick, and that much more is
  // allowed before calls are dropped.
  Pacer(double first_ns, double interval_ns, Pacing pacing, double tick_ns = 0,
        double tick_origin_ns = 0)
      : next_(first_ns),
        interval_(interval_ns),
        pacing_(pacing),
        tick_(pacing == Pacing::kTick ? tick_ns : 0),
        tick_origin_(tick_origin_ns) {}

  // True if a call is due at `now_ns`. Otherwise waits part of the gap
  // (tick: sleeps until the grid point at or after the call; sleep: until
  // ~20 us before the call; spin: yields the core when the call is > 20 us
  // away; else, and always with busy, pauses) and returns false: the
  // caller reads the clock again.
  bool DueOrWait(int64_t now_ns) const;

  // Books the call made at `now_ns`; the next is due one interval after the
  // previous due time, or after `now_ns` if that was more than MaxLagNs()
  // late.
  void Book(int64_t now_ns);

  // When the next call is due.
  double next_ns() const { return next_; }
  // The grid point a tick-paced thread sleeps until for a call due at
  // `due_ns`: the first at or after it.
  double WakeNs(double due_ns) const;
  // How late a call may be before the calls missed are dropped: kMaxLagNs,
  // plus a tick with tick pacing.
  double MaxLagNs() const { return kMaxLagNs + tick_; }

 private:
  double next_;
  double interval_;
  Pacing pacing_;
  double tick_;
  double tick_origin_;
};

// Thread `t` of instance `instance` of the run: its first call, so that the
// threads of all instances are spread evenly over one interval.
double FirstCallNs(const DemoOptions& o, int instance, int t, int64_t start_ns);
// The interval between one thread's calls, in ns.
double CallIntervalNs(const DemoOptions& o);
// The origin of thread `t`'s tick grid (--pacing=tick): the threads of all
// instances are spread evenly over one tick, so they do not all wake at
// once.
double TickOriginNs(const DemoOptions& o, int instance, int t,
                    int64_t start_ns);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_WORKLOAD_H_
