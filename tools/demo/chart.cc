// The run's SVG chart (report.h, RunChartSvg).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "demo/report.h"

namespace tokenlease::tools {
namespace {

constexpr int kWidth = 1000, kHeight = 580;
// The plot's margins: the y tick labels, the title and the subtitle's lines,
// the x tick labels and label; then a 20 px row per legend row.
constexpr double kLeft = 78, kRight = 976, kTop = 80, kBelow = 58;
constexpr double kCharWidth = 6.6;  // 12 px sans-serif, roughly
// Instances: hues apart from the global line's blue and the limit's red;
// instances after these are grey and left out of the legend.
constexpr const char* kInstanceColors[] = {"#e6862e", "#2e9e4f", "#9a5bbd",
                                           "#17becf", "#b8860b", "#8c564b",
                                           "#e377c2", "#7f7f7f"};

// A step series (dash ""), a horizontal rule from points[0] to points[1]
// (dash set), or the outage band (box) over points[0].first to [1].first.
struct Item {
  std::string name, color, css, dash;
  double width = 1.5, opacity = 1;
  std::vector<std::pair<double, double>> points;
  bool box = false;
};

Item Rule(std::string name, const char* css, const char* color,
          const char* dash, double width, double from, double to, double y) {
  return {std::move(name), color, css, dash, width, 1, {{from, y}, {to, y}}};
}

// Whole numbers with thousands separators, else %g.
std::string TickLabel(double v) {
  return std::fabs(v - std::round(v)) < 1e-9 ? Commas(std::llround(v))
                                             : absl::StrFormat("%g", v);
}

// The items in the legend's order: the lines (all instances, then each:
// its rate per window held across the window), the rules, the band.
std::vector<Item> Items(const DemoOptions& o, const RunRecord& run,
                        const Totals& t, double end_s, double x_max) {
  std::vector<Item> items;
  const double len = o.window_ms / 1000.0;
  for (size_t i = 0; i <= run.reports.size(); ++i) {
    const bool all = i == 0, named = i <= std::size(kInstanceColors);
    Item line{all     ? "all instances"
              : named ? absl::StrCat("instance ", i - 1)
                      : "",
              all     ? "#1f4e9c"
              : named ? kInstanceColors[i - 1]
                      : "#bbbbbb",
              all ? "global" : "instance",
              "",
              all ? 2.6 : 1.3,
              all ? 1 : 0.9,
              {}};
    for (int64_t w = 0; w < run.windows && w * len < end_s; ++w) {
      const double to = std::min((w + 1) * len, end_s);
      const Window& x = all ? t.windows[w] : run.reports[i - 1].windows[w];
      const double rate = x.counts.hot_admitted / (to - w * len);
      line.points.insert(line.points.end(), {{w * len, rate}, {to, rate}});
    }
    items.push_back(std::move(line));
  }
  items.push_back(Rule(absl::StrCat("limit ", Commas(o.limit), "/s"), "limit",
                       "#d62728", "8 5", 2, 0, x_max, o.limit));
  const double share = o.limit / o.FallbackInstances();
  if (o.mode == Mode::kLocal) {
    items.push_back(
        Rule(absl::StrCat("one instance's limit: limit / ", o.instances),
             "share", "#555555", "3 3", 1.5, 0, x_max, share));
  }
  if (!o.HasOutage() || o.outage_at >= x_max) return items;
  const double to = std::min(o.OutageEnd(), x_max);
  if (o.failure_mode == FailureMode::kFailLocal) {
    items.push_back(
        Rule(absl::StrCat("one instance's share while Redis is away: limit / ",
                          o.FallbackInstances()),
             "share", "#555555", "3 3", 1.5, o.outage_at, to, share));
  }
  Item band = Rule(
      absl::StrCat(OutageTarget(o), " ",
                   o.outage_kind == OutageKind::kKill ? "killed (kill -9)"
                                                      : "stopped (SIGSTOP)",
                   ": ", FailureModeName(o.failure_mode)),
      "outage", "#f4a259", "", 0, o.outage_at, to, 0);
  band.opacity = 0.28;
  band.box = true;
  items.push_back(std::move(band));
  return items;
}

// The title, and the subtitle's lines: what is drawn, and the verdict.
std::array<std::string, 3> Titles(const DemoOptions& o, const PhaseRow& whole) {
  std::string title = absl::StrFormat(
      "tokenlease: %d instance%s share %s", o.instances,
      o.instances == 1 ? "" : "s",
      o.keys == KeyDist::kHot
          ? absl::StrCat("one limit of ", Commas(o.limit), "/s")
          : absl::StrCat("limits of ", Commas(o.limit), "/s on ",
                         Commas(o.zipf_keys), " keys"));
  std::string sub = absl::StrFormat(
      "%s's admitted rate per %g s window, over all instances and each",
      o.keys == KeyDist::kHot ? "the hot key" : "the hottest key",
      o.window_ms / 1000.0);
  if (o.HasOutage()) {
    absl::StrAppendFormat(
        &title, "; %s %s from %g s to %g s",
        o.redis == RedisKind::kCluster ? "its Redis primary" : "Redis",
        o.outage_kind == OutageKind::kKill ? "killed" : "stopped", o.outage_at,
        o.OutageEnd());
    absl::StrAppend(&sub, "; ", FailureModeName(o.failure_mode),
                    " while Redis is away",
                    o.failure_mode == FailureMode::kFailLocal
                        ? absl::StrCat(" (each instance enforces limit / ",
                                       o.FallbackInstances(), ")")
                        : "");
  }
  std::string verdict = absl::StrFormat("whole run: %.1f%% of the limit",
                                        100.0 * whole.Rate() / o.limit);
  if (whole.bound.value >= 0) {
    absl::StrAppend(&verdict,
                    whole.admitted <= whole.bound.value ? ", within" : ", OVER",
                    " its bound (", whole.bound.formula, ")");
  }
  return {title, sub, verdict};
}

}  // namespace

std::vector<double> NiceTicks(double max, int most) {
  if (!(max > 0)) max = 1;
  most = std::max(1, most);
  const double magnitude = std::pow(10, std::floor(std::log10(max / most)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (std::ceil(max / step - 1e-9) <= most) break;
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    ticks.push_back(i * step);
    if (i * step >= max - 1e-9 * step) return ticks;
  }
}

std::string XmlEscape(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"},
                                    {"<", "&lt;"},
                                    {">", "&gt;"},
                                    {"\"", "&quot;"},
                                    {"'", "&apos;"}});
}

std::string RunChartSvg(const DemoOptions& o, const RunRecord& run,
                        const Totals& t) {
  // The outage's phases, then the whole run (and the busiest second).
  const std::vector<PhaseRow> rows = PhaseRows(o, t);
  const size_t phases =
      std::find_if(rows.begin(), rows.end(),
                   [](const PhaseRow& r) { return r.name == "whole run"; }) -
      rows.begin();
  // An interrupted run ends at the interruption.
  double end_s = o.seconds;
  if (run.interrupted_ns > run.start_ns) {
    end_s = std::min(end_s, (run.interrupted_ns - run.start_ns) / 1e9);
  }
  const double x_max =
      std::max(1e-9, std::min(end_s, run.windows * o.window_ms / 1000.0));
  const std::vector<Item> items = Items(o, run, t, end_s, x_max);
  // The legend's rows, left to right and wrapped (an item wider than a row
  // gets one of its own); the plot takes the height left.
  std::vector<std::vector<const Item*>> legend;
  double used = 0, largest = 0;
  for (const Item& it : items) {
    for (const auto& [x, y] : it.points) largest = std::max(largest, y);
    if (it.name.empty()) continue;
    const double w = 40 + kCharWidth * it.name.size();
    if (legend.empty() || (used > 0 && used + w > kRight - kLeft)) {
      legend.emplace_back();
      used = 0;
    }
    legend.back().push_back(&it);
    used += w;
  }
  const double bottom = kHeight - kBelow - 20.0 * legend.size();
  const std::vector<double> y_ticks = NiceTicks(1.1 * largest, 8);
  auto X = [&](double x) { return kLeft + x / x_max * (kRight - kLeft); };
  auto Y = [&](double y) {
    return bottom - y / y_ticks.back() * (bottom - kTop);
  };
  // A <text> element at (x, y), `more` its other attributes.
  auto text = [](absl::string_view more, double x, double y,
                 absl::string_view body) {
    return absl::StrFormat("<text %s x=\"%.1f\" y=\"%.1f\">%s</text>\n", more,
                           x, y, XmlEscape(body));
  };

  const auto [title, subtitle, verdict] = Titles(o, rows[phases]);
  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://"
      "www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
      "sans-serif\" font-size=\"12\">\n<title>%s</title>\n<rect "
      "class=\"background\" width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
      kWidth, kHeight, kWidth, kHeight, XmlEscape(title));
  out += text("class=\"title\" font-size=\"16\" font-weight=\"bold\"", kLeft,
              24, title);
  out += text("class=\"subtitle\" fill=\"#555\"", kLeft, 42, subtitle);
  out += text("class=\"subtitle\" fill=\"#555\"", kLeft, 58, verdict);
  // Under the lines: the band, the grid and the axes.
  for (const Item& b : items) {
    if (!b.box) continue;
    const double x0 = X(b.points[0].first), x1 = X(b.points[1].first);
    absl::StrAppendFormat(
        &out,
        "<rect class=\"band outage\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"%.1f\" fill=\"%s\" fill-opacity=\"%g\"/>\n",
        x0, kTop, x1 - x0, bottom - kTop, b.color, b.opacity);
  }
  out += "<g class=\"axes\" fill=\"#333\">\n";
  for (double y : y_ticks) {
    absl::StrAppendFormat(&out,
                          "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
                          kLeft, Y(y), kRight, Y(y));
    out += text("class=\"y-tick\" text-anchor=\"end\"", kLeft - 8, Y(y) + 4,
                TickLabel(y));
  }
  for (double x : NiceTicks(x_max, 12)) {
    if (x > x_max + 1e-9) break;
    out += text("class=\"x-tick\" text-anchor=\"middle\"", X(x), bottom + 18,
                TickLabel(x));
  }
  const double mid = (kTop + bottom) / 2;
  absl::StrAppendFormat(&out,
                        "<path class=\"axis\" fill=\"none\" stroke=\"#333\" "
                        "d=\"M%.1f %.1fV%.1fH%.1f\"/>\n",
                        kLeft, kTop, bottom, kRight);
  out += text("class=\"x-label\" text-anchor=\"middle\"", (kLeft + kRight) / 2,
              bottom + 38,
              absl::StrFormat("seconds since the start (windows of %g s)",
                              o.window_ms / 1000.0));
  out += text(absl::StrFormat("class=\"y-label\" text-anchor=\"middle\" "
                              "transform=\"rotate(-90 18 %.1f)\"",
                              mid),
              18, mid, "admitted per second");
  out += "</g>\n";
  // The lines, then the rules over them (Items puts them in that order: a
  // line on the limit must not hide it).
  for (const Item& it : items) {
    if (it.box) continue;
    if (!it.dash.empty()) {
      absl::StrAppendFormat(
          &out,
          "<line class=\"rule %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
          "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%g\" "
          "stroke-dasharray=\"%s\"/>\n",
          it.css, X(it.points[0].first), Y(it.points[0].second),
          X(it.points[1].first), Y(it.points[1].second), it.color, it.width,
          it.dash);
      continue;
    }
    std::vector<std::string> xy;
    for (const auto& [x, y] : it.points) {
      xy.push_back(absl::StrFormat("%.1f,%.1f", X(x), Y(y)));
    }
    absl::StrAppendFormat(
        &out,
        "<polyline class=\"series %s\" data-name=\"%s\" points=\"%s\" "
        "fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" "
        "stroke-opacity=\"%g\"/>\n",
        it.css, XmlEscape(it.name), absl::StrJoin(xy, " "), it.color, it.width,
        it.opacity);
  }
  // Each outage phase's rate over it, in alternate rows (a short phase's
  // note would run into its neighbours').
  for (size_t i = 0; i < phases; ++i) {
    out +=
        text("class=\"note phase\" text-anchor=\"middle\"",
             X((rows[i].from_s + rows[i].to_s) / 2), kTop + 32 + 16 * (i % 2),
             absl::StrFormat("%s: %.1f%% of the limit", rows[i].name,
                             100.0 * rows[i].Rate() / o.limit));
  }
  out += "<g class=\"legend\" fill=\"#333\">\n";
  for (size_t row = 0; row < legend.size(); ++row) {
    const double y = bottom + kBelow + 20.0 * row;
    double x = kLeft;
    for (const Item* it : legend[row]) {
      absl::StrAppendFormat(
          &out,
          it->box ? "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"12\" "
                    "fill=\"%s\" fill-opacity=\"%g\"/>\n"
                  : "<path d=\"M%.1f %.1fh16\" stroke=\"%s\" "
                    "stroke-opacity=\"%g\" stroke-width=\"2\" "
                    "stroke-dasharray=\"%s\"/>\n",
          x, it->box ? y - 6 : y, it->color, it->opacity,
          it->dash.empty() ? "none" : "4 3");
      out += text("", x + 22, y + 4, it->name);
      x += 40 + kCharWidth * it->name.size();
    }
  }
  return out + "</g>\n</svg>\n";
}

}  // namespace tokenlease::tools
