// The demo's chart (--chart), an SVG document written by a small writer of
// our own (no dependency): the hot key's admitted rate per window over all
// instances and per instance, a step per window, against the limit, with
// the outage shaded, one instance's share during it (fail_local; in local
// mode its whole limit), each phase's rate as a note, axes with "nice"
// ticks, a title and a legend. Elements carry a class (series a data-name)
// so that tests and style sheets can find them: "series global", "series
// instance", "rule limit", "rule share", "band outage", "note phase",
// "x-tick", "y-tick", "legend".
#ifndef TOKENLEASE_TOOLS_DEMO_CHART_H_
#define TOKENLEASE_TOOLS_DEMO_CHART_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "demo/flags.h"
#include "demo/report.h"

namespace tokenlease::tools {

// Tick values from 0 up to the first at or above `max` (> 0; else 1), in
// steps of 1, 2 or 5 x 10^k chosen so that there are at most `most` steps.
std::vector<double> NiceTicks(double max, int most);

// `text` with &, <, >, " and ' as XML character references.
std::string XmlEscape(absl::string_view text);

// The chart of a run: x in seconds from the start (to the end of the last
// window that ran), y in admissions per second from 0.
std::string RunChartSvg(const DemoOptions& o, const RunRecord& run,
                        const Totals& t);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_CHART_H_
