// What an instance process reports to the parent, and the line protocol
// that carries it over their socket. The parent sends one line, the common
// start time in steady-clock ns, and shuts its side down to ask for an
// early stop. The instance's lines are a tag and decimal integers,
// space-separated; H and M lines end in text:
//   R                             ready: the limiter exists
//   H t from to reason...         a health transition of the instance's
//                                 Redis connection at steady time t (ns),
//                                 from and to as Health numbers; sent
//                                 before the V line of its window
//   L w t ns hot                  a latency sample: a decision in window
//                                 w, t ns into the run, took ns; hot 1
//                                 for a hot key (workload.h, HotKeys)
//   V w o a ho ha c cw k r h      window w as it closed: offered, admitted,
//                                 hot offered and admitted so far, Redis
//                                 commands so far and in the window, keys,
//                                 RSS KiB and the health at its end
//   W w o a ho ha                 window w's final counts
//   P p o a ho ha                 the same for outage phase p (OutagePhase)
//   K rank offered admitted       a key offered anything, in rank order
//   M series value                a line of the limiter's Prometheus text
//                                 (tokenlease::PrometheusWriter) at the
//                                 end of the run
//   E last rss cmd                the end: the last decision (ns), peak
//                                 RSS KiB, Redis commands sent including
//                                 the shutdown's lease returns
#ifndef TOKENLEASE_TOOLS_DEMO_PROTOCOL_H_
#define TOKENLEASE_TOOLS_DEMO_PROTOCOL_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "demo/workload.h"

namespace tokenlease::tools {

// The health of an instance's Redis connection (RedisHealth's values), or
// kNone without one (local mode).
enum class Health : int { kNone = -1, kHealthy = 0, kDegraded = 1, kDown = 2 };
const char* HealthName(Health h);  // "healthy", ..., "none"

struct HealthEvent {
  int64_t ns = 0;  // steady clock
  Health from = Health::kNone, to = Health::kNone;
  std::string reason;
  bool operator==(const HealthEvent&) const = default;
};

// Decisions over a window or a phase, on all keys and on the hot key.
struct Counts {
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  Counts& operator+=(const Counts& c);
  bool operator==(const Counts&) const = default;
};

// One window of one instance (or summed): `live` as it closed (V), `counts`
// final (W), and what was sampled at its end (-1: not sampled).
struct Window {
  bool closed = false;  // V seen
  Counts live, counts;
  int64_t commands = -1, commands_in_window = 0, keys = -1, rss_kb = -1;
  Health health = Health::kNone;
  std::vector<int64_t> latency;  // the window's samples, until its live row
};

struct Sample {
  int64_t t_ns = 0;  // since the start of the run
  int64_t ns = 0;    // the decision's latency
  bool hot = false;
};

// Everything the parent learns from one instance.
struct InstanceReport {
  explicit InstanceReport(int64_t windows) : windows(windows) {}

  bool ready = false, done = false;  // R, E seen
  std::vector<Window> windows;
  std::array<Counts, kOutagePhases> phases;
  std::vector<Sample> samples;
  std::vector<HealthEvent> events;  // in the order they happened
  std::vector<KeyCount> keys;       // in rank order
  // The Prometheus series (the limit="demo" label left out) and values.
  absl::flat_hash_map<std::string, double> metrics;
  int64_t last_ns = 0, peak_rss_kb = 0;
  int64_t commands_with_shutdown = 0;
};

// "<tag> n1 n2 ...\n".
std::string Line(absl::string_view tag, std::initializer_list<int64_t> v);
// "H ..." (a line break in the reason becomes a space).
std::string HealthLine(const HealthEvent& e);

// Applies one data line (without its '\n'). InvalidArgument for an unknown
// tag, a wrong count of numbers, a value out of its range (a health, a
// phase, a key out of rank order or admitting more than it was offered); a
// window outside the run is ignored.
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

// Writes all of `s`; false if the socket failed.
bool WriteAll(int fd, absl::string_view s);
// Reads one line (without its '\n') byte by byte, so nothing after it is
// consumed. Unavailable at EOF before the line ended.
absl::StatusOr<std::string> ReadLine(int fd);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_PROTOCOL_H_
