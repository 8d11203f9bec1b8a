// A small SVG line chart writer of our own (no dependency): lines of (x, y)
// points, horizontal rules (a limit), shaded x-ranges (an outage), axes
// with "nice" ticks and labels, a title and a legend. The output is a
// standalone, well-formed SVG 1.1 document that browsers and rsvg-convert
// render. Elements carry a class (and series a data-name) so that tests
// and style sheets can find them. Pure (unit-tested).
#ifndef TOKENLEASE_TOOLS_DEMO_SVG_CHART_H_
#define TOKENLEASE_TOOLS_DEMO_SVG_CHART_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tokenlease::tools {

// A line through `points`, in order.
struct ChartSeries {
  std::string name;   // in the legend ("": not in it) and in data-name
  std::string color;  // a CSS colour, e.g. "#1f77b4"
  double width = 1.5;
  double opacity = 1;
  std::string css_class;  // added to "series"
  std::vector<std::pair<double, double>> points;
};

// A horizontal line at `y`, across the plot or over `x_range` only.
struct ChartRule {
  double y = 0;
  std::string label;  // drawn at its right end, and in the legend
  std::string color;
  std::string dash;  // stroke-dasharray, e.g. "6 4"; "" solid
  double width = 1.5;
  std::string css_class;
  std::optional<std::pair<double, double>> x_range;
};

// A shaded x-range from `from` to `to`, the full height of the plot, with
// its label at the top.
struct ChartBand {
  double from = 0, to = 0;
  std::string label;
  std::string color;
  double opacity = 0.35;
  std::string css_class;
};

// A line of text centred on `x`, in row `row` (0, 1, ...) from the top of
// the plot (under a band's label when row is 1).
struct ChartNote {
  double x = 0;
  int row = 0;
  std::string text;
  std::string css_class;
};

struct LineChart {
  // The subtitle may have several lines ('\n').
  std::string title, subtitle;
  std::string x_label, y_label;
  double x_min = 0, x_max = 1;
  // The y axis runs from 0 to the first tick at or above the largest value
  // of the series and rules plus 10% (at least `y_max` if that is more).
  double y_max = 0;
  std::vector<ChartBand> bands;
  std::vector<ChartRule> rules;
  std::vector<ChartSeries> series;
  std::vector<ChartNote> notes;
  int width = 1000, height = 580;
};

// The plot area in pixels and the mapping of data onto it.
struct ChartFrame {
  double left = 0, top = 0, right = 0, bottom = 0;
  double x_min = 0, x_max = 1, y_top = 1;  // y_top: the axis's last tick
  double X(double x) const;
  double Y(double y) const;
};

// Tick values from 0 up to the first at or above `max` (> 0), in steps of
// 1, 2 or 5 x 10^k chosen so that there are at most `most` steps.
std::vector<double> NiceTicks(double max, int most);

// The plot area of `chart` (as RenderSvg lays it out).
ChartFrame FrameOf(const LineChart& chart);

// `text` with &, <, >, " and ' as XML character references.
std::string XmlEscape(absl::string_view text);

// The SVG document.
std::string RenderSvg(const LineChart& chart);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_SVG_CHART_H_
