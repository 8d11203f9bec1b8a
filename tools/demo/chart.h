// The demo's chart (--chart): the hot key's admitted rate per window, over
// all instances and per instance, against the limit, the outage shaded,
// drawn with svg_chart.h.
#ifndef TOKENLEASE_TOOLS_DEMO_CHART_H_
#define TOKENLEASE_TOOLS_DEMO_CHART_H_

#include <string>

#include "absl/status/status.h"
#include "demo/flags.h"
#include "demo/report.h"
#include "demo/svg_chart.h"

namespace tokenlease::tools {

// The chart of a run: x in seconds from the start (0 to the end of the
// last window that ran), y in admissions per second. Series: "all
// instances" (class "global"), then "instance i" (class "instance"), each
// a step per window; rules: the limit (class "limit") and, with fail_local
// during an outage (or in local mode), one instance's share (class
// "share"); band: the outage (class "outage").
LineChart RunChart(const DemoOptions& o, const RunRecord& run, const Totals& t);

// Renders RunChart into o.chart. The error says which file and why, and
// how to choose another.
absl::Status WriteChart(const DemoOptions& o, const RunRecord& run,
                        const Totals& t);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_CHART_H_
