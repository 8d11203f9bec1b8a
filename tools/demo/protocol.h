// The line protocol between the demo's parent and its instance processes,
// one pipe each way per instance.
//
// Parent -> instance (control pipe): one line, the common start time (steady
// clock, ns). Closing the pipe asks the instance to stop early (also EOF if
// the parent died).
//
// Instance -> parent (data pipe), numbers in decimal, space-separated:
//   R                          ready: the limiter exists
//   V w o a ho ha c cw k r h n l1 .. ln
//                              --live: window w as it closed: offered,
//                              admitted, hot offered, hot admitted, Redis
//                              commands so far and in the window, keys,
//                              RSS KiB, the connection's health at its end
//                              (Health), n latency samples (ns)
//   H t from to reason...      a health transition of the instance's Redis
//                              connection at steady time t (ns), from and
//                              to as Health numbers, then the library's
//                              reason (text to the end of the line); sent
//                              before the "V" line of the window it fell
//                              in (without --live, with the results)
//   S w k r c                  sampled at window w's end: keys, RSS KiB,
//                              Redis commands so far
//   W w o a ho ha              window w's final counts
//   L l1 l2 ...                latency samples (ns) of hot keys, up to
//                              1000 a line (workload.h, HotKeys)
//   LC l1 l2 ...               the same for cold keys
//   LP p l1 l2 ...             with an outage: samples of every key taken
//                              in phase p (0 before, 1 during, 2 after the
//                              outage), up to 1000 a line
//   P p o a ho ha              with an outage: phase p's offered, admitted,
//                              hot offered and hot admitted
//   K d1 o1 a1 d2 o2 a2 ...    per-key counts of the keys offered anything,
//                              in rank order, up to 1000 keys a line: for
//                              each key the rank's distance from the
//                              previous key's (from -1 at the line's start,
//                              so >= 1), offered (>= 1) and admitted
//   T first last errors peak   first and last decision (ns), decisions
//                              without an answer, peak RSS KiB
//   C c1 .. c16                final counters (FinalStats, in its order)
//   E                          end of the results
#ifndef TOKENLEASE_TOOLS_DEMO_PROTOCOL_H_
#define TOKENLEASE_TOOLS_DEMO_PROTOCOL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tokenlease::tools {

// One instance's counts of one window, and what was sampled at its end
// (-1: not sampled).
struct WindowCounts {
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  int64_t keys = -1, rss_kb = -1, commands = -1;
};

// The health of an instance's Redis connection (RedisHealth's values), or
// kNone without one (local mode).
enum class Health : int { kNone = -1, kHealthy = 0, kDegraded = 1, kDown = 2 };
// "healthy", "degraded", "down", or "none".
const char* HealthName(Health h);

// One health transition ("H" line).
struct HealthEvent {
  int64_t ns = 0;  // steady clock
  Health from = Health::kNone, to = Health::kNone;
  std::string reason;
  bool operator==(const HealthEvent&) const = default;
};

// --live: one instance's counts of one window, as it closed ("V" line).
struct LiveWindow {
  bool got = false;
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  int64_t commands = 0, commands_in_window = 0, keys = 0, rss_kb = 0;
  Health health = Health::kNone;  // at the window's end
  std::vector<int64_t> latency;   // this window's samples (maybe thinned)
};

// One instance's counts over one outage phase ("P" line).
struct PhaseCounts {
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  bool operator==(const PhaseCounts&) const = default;
};

// An instance's counters at the end ("C" line). Lease counters are taken as
// the run ended, connection counters after the shutdown's returns.
struct FinalStats {
  int64_t commands_sent = 0, replies = 0, lease_requests = 0,
          tokens_granted = 0, tokens_returned = 0, denied_by_redis = 0,
          charges = 0, tokens_charged = 0, redis_errors = 0, keys = 0,
          flushes = 0, commands_at_end_of_run = 0, timeouts = 0,
          spare_misses = 0, resets = 0, late_replies = 0;

  // Adds every counter of `other` (sums over the instances).
  FinalStats& operator+=(const FinalStats& other);
};

// One key's counts over the run ("K" lines; per_key.h).
struct KeyCount {
  int64_t rank = 0, offered = 0, admitted = 0;
  bool operator==(const KeyCount&) const = default;
};

// "T" line.
struct RunTiming {
  int64_t first_ns = 0, last_ns = 0, errors = 0, peak_rss_kb = 0;
};

// When a decision was made relative to --outage_at and --outage_seconds,
// on the instance's clock from the start of the run.
enum OutagePhase : int { kBeforeOutage = 0, kDuringOutage, kAfterOutage };
inline constexpr int kOutagePhases = 3;

// Everything the parent learns from one instance.
struct InstanceReport {
  // `windows` windows; `live` ones too with --live.
  InstanceReport(int64_t windows, bool live);

  bool ready = false;  // "R" seen
  bool done = false;   // "E" seen
  std::vector<WindowCounts> windows;
  std::vector<LiveWindow> live;
  std::vector<int64_t> latency;  // all samples: hot, then cold
  std::vector<int64_t> latency_hot, latency_cold;
  // With an outage: every sample again, by the phase it was taken in
  // (OutagePhase), and the counts of each phase.
  std::array<std::vector<int64_t>, kOutagePhases> latency_phase;
  std::array<PhaseCounts, kOutagePhases> phases;
  // Every health transition, in the order they happened.
  std::vector<HealthEvent> health_events;
  std::vector<KeyCount> key_counts;  // in rank order
  RunTiming timing;
  FinalStats stats;
};

// At most this many latency samples go in one "V" line.
inline constexpr size_t kMaxLiveSamples = 4096;

// Every step-th of `samples` (step = ceil(size / max)), so at most `max`.
std::vector<int64_t> ThinEvenly(const std::vector<int64_t>& samples,
                                size_t max);

// Encoders, one line each (with its '\n'), except EncodeLatency,
// EncodePhaseLatency and EncodeKeyCounts (as many lines as needed; none for no
// samples or keys).
std::string EncodeStart(int64_t start_ns);
std::string EncodeReady();
std::string EncodeLive(int64_t window, const LiveWindow& w);
std::string EncodeSample(int64_t window, int64_t keys, int64_t rss_kb,
                         int64_t commands);
std::string EncodeCounts(int64_t window, const WindowCounts& w);
// "L" lines (hot keys' samples), or "LC" lines if `cold`.
std::string EncodeLatency(const std::vector<int64_t>& samples,
                          bool cold = false);
// "LP" lines: the samples of one outage phase.
std::string EncodePhaseLatency(OutagePhase phase,
                               const std::vector<int64_t>& samples);
// "P" line.
std::string EncodePhaseCounts(OutagePhase phase, const PhaseCounts& c);
// "H" line; a line break in the reason becomes a space.
std::string EncodeHealthEvent(const HealthEvent& e);
// `counts` must be in rank order without repeats (SumByRank) and hold only
// keys offered anything.
std::string EncodeKeyCounts(const std::vector<KeyCount>& counts);
std::string EncodeTiming(const RunTiming& t);
std::string EncodeFinal(const FinalStats& s);
std::string EncodeEnd();

// The start time of a control line (without its '\n').
absl::StatusOr<int64_t> DecodeStart(absl::string_view line);

// Applies one data line (without its '\n') to `report`. InvalidArgument for
// an unknown tag or malformed numbers; a window outside the run is ignored.
absl::Status ApplyLine(absl::string_view line, InstanceReport& report);

// Splits a byte stream into lines.
class LineSplitter {
 public:
  // Appends `chunk` and calls `on_line` for each line it completes; stops
  // at and returns the first error `on_line` returns.
  absl::Status Feed(absl::string_view chunk,
                    absl::FunctionRef<absl::Status(absl::string_view)> on_line);

 private:
  std::string buf_;
};

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_PROTOCOL_H_
