// The SVG line chart writer (svg_chart.h).
#include "demo/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "demo/format.h"

namespace tokenlease::tools {
namespace {

constexpr double kLeft = 78;  // room for the y tick labels and title
constexpr double kRight = 24;
constexpr double kTitleTop = 48;  // the title; then a line per subtitle line
constexpr double kLine = 16;
constexpr double kAxisBelow = 46;  // x tick labels and the x label
constexpr double kLegendRow = 20;
constexpr double kLegendGap = 12;
constexpr double kCharWidth = 6.6;  // 12 px sans-serif, roughly
constexpr double kSwatch = 22;      // swatch plus its gap
constexpr int kMostYSteps = 8;
constexpr int kMostXSteps = 12;

// One legend entry: a line swatch (or a filled box for a band).
struct LegendItem {
  std::string label, color, dash;
  double width = 2, opacity = 1;
  bool box = false;
};

std::vector<LegendItem> LegendItems(const LineChart& c) {
  std::vector<LegendItem> items;
  for (const ChartSeries& s : c.series) {
    items.push_back({s.name, s.color, "", s.width, s.opacity, false});
  }
  for (const ChartRule& r : c.rules) {
    items.push_back({r.label, r.color, r.dash, r.width, 1, false});
  }
  for (const ChartBand& b : c.bands) {
    items.push_back({b.label, b.color, "", 0, b.opacity, true});
  }
  // Unnamed lines (the 9th instance on) stay out of the legend.
  std::erase_if(items, [](const LegendItem& i) { return i.label.empty(); });
  return items;
}

double ItemWidth(const LegendItem& item) {
  return kSwatch + kCharWidth * static_cast<double>(item.label.size()) + 18;
}

// The legend's rows: item indices, laid out left to right and wrapped.
std::vector<std::vector<size_t>> LegendRows(const LineChart& c,
                                            const std::vector<LegendItem>& v) {
  std::vector<std::vector<size_t>> rows;
  const double room = c.width - kLeft - kRight;
  double used = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double w = ItemWidth(v[i]);
    // A new row when this one is full (an item wider than a row gets one
    // of its own).
    if (rows.empty() || (used + w > room && !rows.back().empty())) {
      rows.emplace_back();
      used = 0;
    }
    rows.back().push_back(i);
    used += w;
  }
  return rows;
}

// Numbers in attributes: one decimal is finer than a pixel.
std::string Px(double v) { return absl::StrFormat("%.1f", v); }

// A tick label: thousands separators for whole numbers, else %g.
std::string TickLabel(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) {
    return Commas(static_cast<int64_t>(std::llround(v)));
  }
  return absl::StrFormat("%g", v);
}

double LargestValue(const LineChart& c) {
  double m = 0;
  for (const ChartSeries& s : c.series) {
    for (const auto& [x, y] : s.points) m = std::max(m, y);
  }
  for (const ChartRule& r : c.rules) m = std::max(m, r.y);
  return m;
}

std::string Element(
    absl::string_view name,
    const std::vector<std::pair<std::string, std::string>>& attributes,
    absl::string_view text = "", bool close = true) {
  std::string out = absl::StrCat("<", name);
  for (const auto& [k, v] : attributes) {
    absl::StrAppend(&out, " ", k, "=\"", XmlEscape(v), "\"");
  }
  if (!close) return out + ">";
  if (text.empty()) return out + "/>\n";
  return absl::StrCat(out, ">", XmlEscape(text), "</", name, ">\n");
}

std::string Points(const ChartFrame& f,
                   const std::vector<std::pair<double, double>>& points) {
  std::vector<std::string> parts;
  parts.reserve(points.size());
  for (const auto& [x, y] : points) {
    parts.push_back(absl::StrCat(Px(f.X(x)), ",", Px(f.Y(y))));
  }
  return absl::StrJoin(parts, " ");
}

void AppendAxes(const LineChart& c, const ChartFrame& f, std::string& out) {
  out += "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  const std::vector<double> y_ticks = NiceTicks(f.y_top, kMostYSteps);
  for (double y : y_ticks) {
    out += Element("line", {{"x1", Px(f.left)},
                            {"y1", Px(f.Y(y))},
                            {"x2", Px(f.right)},
                            {"y2", Px(f.Y(y))}});
  }
  out += "</g>\n<g class=\"axes\" fill=\"#333\">\n";
  for (double y : y_ticks) {
    out += Element("text",
                   {{"class", "y-tick"},
                    {"x", Px(f.left - 8)},
                    {"y", Px(f.Y(y) + 4)},
                    {"text-anchor", "end"}},
                   TickLabel(y));
  }
  // x ticks over [x_min, x_max]: NiceTicks of the span, shifted.
  const double span = c.x_max - c.x_min;
  for (double dx : NiceTicks(span, kMostXSteps)) {
    if (dx > span + 1e-9) break;
    const double x = c.x_min + dx;
    out += Element("line", {{"x1", Px(f.X(x))},
                            {"y1", Px(f.bottom)},
                            {"x2", Px(f.X(x))},
                            {"y2", Px(f.bottom + 5)},
                            {"stroke", "#333"}});
    out += Element("text",
                   {{"class", "x-tick"},
                    {"x", Px(f.X(x))},
                    {"y", Px(f.bottom + 18)},
                    {"text-anchor", "middle"}},
                   TickLabel(x));
  }
  out += Element("line", {{"class", "x-axis"},
                          {"x1", Px(f.left)},
                          {"y1", Px(f.bottom)},
                          {"x2", Px(f.right)},
                          {"y2", Px(f.bottom)},
                          {"stroke", "#333"}});
  out += Element("line", {{"class", "y-axis"},
                          {"x1", Px(f.left)},
                          {"y1", Px(f.top)},
                          {"x2", Px(f.left)},
                          {"y2", Px(f.bottom)},
                          {"stroke", "#333"}});
  out += Element("text",
                 {{"class", "x-label"},
                  {"x", Px((f.left + f.right) / 2)},
                  {"y", Px(f.bottom + 38)},
                  {"text-anchor", "middle"}},
                 c.x_label);
  const double ly = (f.top + f.bottom) / 2;
  out += Element("text",
                 {{"class", "y-label"},
                  {"x", Px(18)},
                  {"y", Px(ly)},
                  {"text-anchor", "middle"},
                  {"transform", absl::StrCat("rotate(-90 18 ", Px(ly), ")")}},
                 c.y_label);
  out += "</g>\n";
}

void AppendBands(const LineChart& c, const ChartFrame& f, std::string& out) {
  out += "<g class=\"bands\">\n";
  for (const ChartBand& b : c.bands) {
    const double x0 = f.X(std::max(b.from, c.x_min));
    const double x1 = f.X(std::min(b.to, c.x_max));
    out += Element("rect", {{"class", absl::StrCat("band ", b.css_class)},
                            {"x", Px(x0)},
                            {"y", Px(f.top)},
                            {"width", Px(std::max(0.0, x1 - x0))},
                            {"height", Px(f.bottom - f.top)},
                            {"fill", b.color},
                            {"fill-opacity", absl::StrCat(b.opacity)}});
    out += Element("text",
                   {{"class", "band-label"},
                    {"x", Px((x0 + x1) / 2)},
                    {"y", Px(f.top + 16)},
                    {"text-anchor", "middle"},
                    {"fill", "#7a4100"}},
                   b.label);
  }
  out += "</g>\n";
}

void AppendRules(const LineChart& c, const ChartFrame& f, std::string& out) {
  out += "<g class=\"rules\">\n";
  for (const ChartRule& r : c.rules) {
    const double x0 = r.x_range ? std::max(r.x_range->first, c.x_min) : c.x_min;
    const double x1 =
        r.x_range ? std::min(r.x_range->second, c.x_max) : c.x_max;
    std::vector<std::pair<std::string, std::string>> a = {
        {"class", absl::StrCat("rule ", r.css_class)},
        {"x1", Px(f.X(x0))},
        {"y1", Px(f.Y(r.y))},
        {"x2", Px(f.X(x1))},
        {"y2", Px(f.Y(r.y))},
        {"stroke", r.color},
        {"stroke-width", absl::StrCat(r.width)}};
    if (!r.dash.empty()) a.push_back({"stroke-dasharray", r.dash});
    out += Element("line", a);
  }
  out += "</g>\n";
}

void AppendSeries(const LineChart& c, const ChartFrame& f, std::string& out) {
  out += "<g class=\"lines\" fill=\"none\" stroke-linejoin=\"round\">\n";
  for (const ChartSeries& s : c.series) {
    out += Element("polyline", {{"class", absl::StrCat("series ", s.css_class)},
                                {"data-name", s.name},
                                {"points", Points(f, s.points)},
                                {"stroke", s.color},
                                {"stroke-width", absl::StrCat(s.width)},
                                {"stroke-opacity", absl::StrCat(s.opacity)}});
  }
  out += "</g>\n";
}

void AppendNotes(const LineChart& c, const ChartFrame& f, std::string& out) {
  out += "<g class=\"notes\" fill=\"#222\" text-anchor=\"middle\">\n";
  for (const ChartNote& n : c.notes) {
    out += Element("text",
                   {{"class", absl::StrCat("note ", n.css_class)},
                    {"x", Px(f.X(n.x))},
                    {"y", Px(f.top + kLine * (n.row + 1))}},
                   n.text);
  }
  out += "</g>\n";
}

void AppendLegend(const LineChart& c, const ChartFrame& f, std::string& out) {
  const std::vector<LegendItem> items = LegendItems(c);
  out += "<g class=\"legend\" fill=\"#333\">\n";
  double y = f.bottom + kAxisBelow + kLegendGap;
  for (const std::vector<size_t>& row : LegendRows(c, items)) {
    double x = f.left;
    for (size_t i : row) {
      const LegendItem& it = items[i];
      if (it.box) {
        out += Element("rect", {{"x", Px(x)},
                                {"y", Px(y - 6)},
                                {"width", "16"},
                                {"height", "12"},
                                {"fill", it.color},
                                {"fill-opacity", absl::StrCat(it.opacity)}});
      } else {
        std::vector<std::pair<std::string, std::string>> a = {
            {"x1", Px(x)},
            {"y1", Px(y)},
            {"x2", Px(x + 16)},
            {"y2", Px(y)},
            {"stroke", it.color},
            {"stroke-width", absl::StrCat(std::max(it.width, 1.5))},
            {"stroke-opacity", absl::StrCat(it.opacity)}};
        if (!it.dash.empty()) a.push_back({"stroke-dasharray", "4 3"});
        out += Element("line", a);
      }
      out +=
          Element("text", {{"x", Px(x + kSwatch)}, {"y", Px(y + 4)}}, it.label);
      x += ItemWidth(it);
    }
    y += kLegendRow;
  }
  out += "</g>\n";
}

}  // namespace

double ChartFrame::X(double x) const {
  return left + (x - x_min) / (x_max - x_min) * (right - left);
}

double ChartFrame::Y(double y) const {
  return bottom - y / y_top * (bottom - top);
}

std::vector<double> NiceTicks(double max, int most) {
  if (!(max > 0)) max = 1;
  most = std::max(1, most);
  const double raw = max / most;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (std::ceil(max / step - 1e-9) <= most) break;
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    ticks.push_back(i * step);
    if (i * step >= max - 1e-9 * step) break;
  }
  return ticks;
}

ChartFrame FrameOf(const LineChart& c) {
  ChartFrame f;
  const size_t legend_rows = LegendRows(c, LegendItems(c)).size();
  f.left = kLeft;
  f.right = c.width - kRight;
  const size_t subtitle_lines =
      std::count(c.subtitle.begin(), c.subtitle.end(), '\n') + 1;
  f.top = kTitleTop + kLine * static_cast<double>(subtitle_lines);
  f.bottom = c.height - kAxisBelow - kLegendGap -
             kLegendRow * static_cast<double>(legend_rows);
  f.x_min = c.x_min;
  f.x_max = c.x_max > c.x_min ? c.x_max : c.x_min + 1;
  f.y_top =
      NiceTicks(std::max(c.y_max, 1.1 * LargestValue(c)), kMostYSteps).back();
  return f;
}

std::string XmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string RenderSvg(const LineChart& c) {
  const ChartFrame f = FrameOf(c);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += Element("svg",
                 {{"xmlns", "http://www.w3.org/2000/svg"},
                  {"version", "1.1"},
                  {"width", absl::StrCat(c.width)},
                  {"height", absl::StrCat(c.height)},
                  {"viewBox", absl::StrCat("0 0 ", c.width, " ", c.height)},
                  {"font-family", "DejaVu Sans, Helvetica, Arial, sans-serif"},
                  {"font-size", "12"}},
                 "", /*close=*/false);
  out += "\n";
  out += Element("title", {}, c.title);
  out += Element("rect", {{"class", "background"},
                          {"width", absl::StrCat(c.width)},
                          {"height", absl::StrCat(c.height)},
                          {"fill", "#ffffff"}});
  out += Element("text",
                 {{"class", "title"},
                  {"x", Px(f.left)},
                  {"y", "24"},
                  {"font-size", "16"},
                  {"font-weight", "bold"},
                  {"fill", "#222"}},
                 c.title);
  double y = 42;
  for (absl::string_view line : absl::StrSplit(c.subtitle, '\n')) {
    out += Element("text",
                   {{"class", "subtitle"},
                    {"x", Px(f.left)},
                    {"y", Px(y)},
                    {"fill", "#555"}},
                   line);
    y += kLine;
  }
  AppendBands(c, f, out);
  AppendAxes(c, f, out);
  // The rules over the lines: a line that sits on the limit must not hide
  // it.
  AppendSeries(c, f, out);
  AppendRules(c, f, out);
  AppendNotes(c, f, out);
  AppendLegend(c, f, out);
  out += "</svg>\n";
  return out;
}

}  // namespace tokenlease::tools
