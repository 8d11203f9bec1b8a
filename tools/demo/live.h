// --live output: a header, then one row per window as soon as every
// instance has sent that window: the hot key's admitted rate against the
// limit, the offered rate, latency p50/p99 over all instances, Redis
// commands per second and decisions per command, and each instance's
// admitted rate. Rows are at most kLiveColumns wide.
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

// The two header lines.
std::string LiveHeader(const DemoOptions& o);

// The row of window `w`, or nullopt until every instance has sent it.
// Frees the window's latency samples (they are not needed again).
std::optional<std::string> LiveRow(const DemoOptions& o, int64_t w,
                                   std::vector<InstanceReport>& reports);

// Prints (and flushes) the rows that are complete, in order, from `*next`
// on; advances `*next` past them.
void PrintLiveRows(const DemoOptions& o, std::vector<InstanceReport>& reports,
                   int64_t* next);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_LIVE_H_
