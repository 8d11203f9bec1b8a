// --live output, twice a second by default: a header, then one row per
// window as soon as every instance has sent it: the hot key's admitted rate
// against the limit, whether the server is up, decision latency p50/p99
// over all instances, Redis commands per second and decisions per command,
// and each instance's admitted rate with its connection's health. The
// instances' health transitions are printed above the row of the window
// they fell in. Plain text (no escape sequences): the same on a terminal,
// in a pipe and in CI.
#ifndef TOKENLEASE_TOOLS_DEMO_LIVE_H_
#define TOKENLEASE_TOOLS_DEMO_LIVE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

// Rows wider than this show the instances' range instead of each.
inline constexpr size_t kLiveColumns = 100;

// The header lines (a legend and the column titles).
std::string LiveHeader(const DemoOptions& o);

// The row of window `w` once every instance has closed it (nullopt
// before); frees the window's latency samples (the summary has its own).
std::optional<std::string> LiveRow(const DemoOptions& o, int64_t w,
                                   std::vector<InstanceReport>& reports);

// The lines for the health transitions in `events` (instance index, event),
// sorted by time: consecutive transitions of the same kind within 100 ms
// make one line ("  # 8.27s instances 0 1: healthy -> down (the first: no
// reply ...)"). Times are seconds since `start_ns`.
std::string HealthEventLines(std::vector<std::pair<int, HealthEvent>> events,
                             int64_t start_ns);

// The rows (each after the transitions before its window's end) that
// became complete since the last call.
class LiveView {
 public:
  explicit LiveView(const DemoOptions& o) : o_(o) {}
  std::string NewRows(std::vector<InstanceReport>& reports, int64_t start_ns);

 private:
  const DemoOptions& o_;
  int64_t next_row_ = 0;
  std::vector<size_t> events_shown_;  // per instance
};

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_LIVE_H_
