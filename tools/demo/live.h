// --live output, twice a second by default: a header, then one row per
// window as soon as every instance has sent it: the hot key's admitted rate
// against the limit, the outage marker, decision latency p50/p99 over all
// instances, Redis commands per second and decisions per command, and each
// instance's admitted rate with its connection's health. The instances'
// health transitions are printed above the row of the window they fell in.
// Rows are at most kLiveColumns wide.
//
// On a terminal (LiveView with `terminal`), a footer stays below the rows:
// a progress bar, the outage's state and each instance's health in words,
// redrawn in place; health marks are coloured. Elsewhere (a pipe, a file,
// CI) the same rows come without escape sequences and without the footer.
#ifndef TOKENLEASE_TOOLS_DEMO_LIVE_H_
#define TOKENLEASE_TOOLS_DEMO_LIVE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

inline constexpr size_t kLiveColumns = 100;

// The header lines (a legend and the column titles).
std::string LiveHeader(const DemoOptions& o);

// The mark of a health state in a row: "+" healthy, "~" degraded, "x" down,
// "" none (local mode).
const char* HealthMark(Health h);

// What the "redis" column says for window `w`: "STOPPED" or "KILLED" if the
// window overlaps the outage (by the schedule), else "up".
const char* RedisColumn(const DemoOptions& o, int64_t w);

// The row of window `w`, or nullopt until every instance has closed it.
// Frees the window's latency samples (the summary has its own). `color`:
// health marks and the outage marker in ANSI colours.
std::optional<std::string> LiveRow(const DemoOptions& o, int64_t w,
                                   std::vector<InstanceReport>& reports,
                                   bool color = false);

// The lines for the health transitions in `events` (instance index, event),
// sorted by time: transitions of the same kind within 100 ms make one line
// ("  # 8.27s instances 0, 1: healthy -> down (no reply for ...)"), with
// the reason of the first. Times are seconds since `start_ns`.
std::string HealthEventLines(
    const std::vector<std::pair<int, HealthEvent>>& events, int64_t start_ns);

// "[#####-----]" with `width` cells between the brackets for `fraction`
// (clamped to [0, 1]).
std::string ProgressBar(double fraction, int width);

// What the parent knows about the outage now.
enum class OutageNow { kNone, kBefore, kOn, kOver };

// Prints the live view (see above) as the run goes.
class LiveView {
 public:
  LiveView(const DemoOptions& o, bool terminal);

  // Prints the header; `start_ns` is the run's start (steady clock).
  void Start(int64_t start_ns);
  // Prints the rows that are complete (with the health transitions before
  // each), then redraws the footer if it is due.
  void Update(std::vector<InstanceReport>& reports, OutageNow outage,
              int64_t now_ns);
  // A line of the parent's (the outage's start and end, an interruption),
  // printed at once, above the footer.
  void Note(const std::string& line);
  // Removes the footer (before the summary).
  void Finish();

  // True if stdout is a terminal that understands ANSI escapes (TERM is
  // set and not "dumb").
  static bool StdoutIsTerminal();

 private:
  void PrintAboveFooter(const std::string& text);
  std::string Footer(const std::vector<InstanceReport>& reports,
                     OutageNow outage, int64_t now_ns) const;

  const DemoOptions& o_;
  const bool terminal_;
  int64_t start_ns_ = 0;
  int64_t next_row_ = 0;
  std::vector<size_t> events_shown_;  // per instance
  int footer_lines_ = 0;
  int64_t footer_drawn_ns_ = 0;
};

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_LIVE_H_
