// The run's chart (chart.h).
#include "demo/chart.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/format.h"
#include "demo/phases.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

constexpr char kGlobalColor[] = "#1f4e9c";
constexpr char kLimitColor[] = "#d62728";
constexpr char kShareColor[] = "#555555";
constexpr char kOutageColor[] = "#f4a259";
// Instances: distinct hues that stay apart from the global line's blue and
// the limit's red.
constexpr const char* kInstanceColors[] = {"#e6862e", "#2e9e4f", "#9a5bbd",
                                           "#17becf", "#b8860b", "#8c564b",
                                           "#e377c2", "#7f7f7f"};
constexpr size_t kNamedInstances = std::size(kInstanceColors);
// A phase shorter than this fraction of the run is too narrow for its note
// on the same row as its neighbours'.
constexpr double kNarrowPhase = 0.2;

// A step per window: the window's count over its length, held across it.
// The run ended at `end_s` (the last window may be partial).
std::vector<std::pair<double, double>> Steps(
    const DemoOptions& o, int64_t windows, double end_s,
    const std::vector<int64_t>& per_window) {
  std::vector<std::pair<double, double>> points;
  const double len = o.window_ms / 1000.0;
  for (int64_t w = 0; w < windows; ++w) {
    const double from = static_cast<double>(w) * len;
    const double to = std::min(from + len, end_s);
    if (to <= from) break;
    const double rate = static_cast<double>(per_window[w]) / (to - from);
    points.emplace_back(from, rate);
    points.emplace_back(to, rate);
  }
  return points;
}

std::string Title(const DemoOptions& o) {
  std::string out = absl::StrFormat(
      "tokenlease: %d instance%s share %s", o.instances,
      o.instances == 1 ? "" : "s",
      o.keys == KeyDist::kHot
          ? absl::StrCat("one limit of ", Commas(o.limit), "/s")
          : absl::StrCat("limits of ", Commas(o.limit), "/s on ",
                         Commas(o.zipf_keys), " keys"));
  if (o.outage && o.mode != Mode::kLocal) {
    absl::StrAppendFormat(
        &out, "; Redis %s from %g s to %g s",
        o.outage_kind == OutageKind::kKill ? "killed" : "stopped", o.outage_at,
        o.OutageEnd());
  }
  return out;
}

// Two lines: what is drawn, then the verdict.
std::string Subtitle(const DemoOptions& o, const PhaseRow& whole) {
  std::string out = absl::StrFormat(
      "%s's admitted rate per %g s window, over all instances and each; %s "
      "mode, burst %s, offered %s/s",
      o.keys == KeyDist::kHot ? "the hot key" : "the hottest key",
      o.window_ms / 1000.0, ModeName(o.mode), Commas(o.burst),
      Commas(static_cast<int64_t>(o.offered)));
  out += "\n";
  if (o.outage && o.mode != Mode::kLocal) {
    absl::StrAppendFormat(
        &out, "%s while Redis is away%s; ", FailureModeName(o.failure_mode),
        o.failure_mode == FailureMode::kFailLocal
            ? absl::StrCat(" (each instance enforces limit / ",
                           o.FallbackInstances(), ")")
            : "");
  }
  absl::StrAppendFormat(&out, "whole run: %.1f%% of the limit",
                        100.0 * whole.Rate() / o.limit);
  if (whole.checked) {
    absl::StrAppend(&out,
                    static_cast<double>(whole.hot_admitted) <= whole.bound
                        ? ", within its bound ("
                        : ", OVER its bound (",
                    whole.formula.substr(0, whole.formula.find(" = ")), ")");
  }
  return out;
}

}  // namespace

LineChart RunChart(const DemoOptions& o, const RunRecord& run,
                   const Totals& t) {
  LineChart c;
  const bool hot = o.keys == KeyDist::kHot;
  const std::vector<PhaseRow> rows =
      PhaseRows(o, t.duration_s, t.hot_offered, t.hot_admitted, t.phases,
                t.latency_phase, t.latency, t.health_events, run.start_ns);
  c.title = Title(o);
  c.subtitle = Subtitle(o, rows.back());
  // Each outage phase's rate against the limit, over the phase; in
  // alternate rows when a phase is too narrow for its note.
  bool narrow = false;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    narrow |= rows[i].Seconds() < kNarrowPhase * o.seconds;
  }
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const PhaseRow& r = rows[i];
    const std::string name = r.name.substr(0, r.name.find_first_of(" :"));
    c.notes.push_back(ChartNote{(r.from_s + r.to_s) / 2,
                                narrow ? 1 + static_cast<int>(i % 2) : 1,
                                absl::StrFormat("%s: %.1f%% of the limit", name,
                                                100.0 * r.Rate() / o.limit),
                                "phase"});
  }
  c.x_label = absl::StrFormat("seconds since the start (windows of %g s)",
                              o.window_ms / 1000.0);
  c.y_label = hot ? "admitted per second" : "admitted per second (rank 0)";
  c.x_min = 0;
  // An interrupted run ends at the interruption.
  const double end_s =
      run.interrupted_ns > run.start_ns
          ? std::min(
                o.seconds,
                static_cast<double>(run.interrupted_ns - run.start_ns) / 1e9)
          : o.seconds;
  c.x_max =
      std::min(end_s, static_cast<double>(run.windows) * o.window_ms / 1000.0);
  if (o.outage && o.mode != Mode::kLocal && o.outage_at < c.x_max) {
    c.bands.push_back(ChartBand{
        o.outage_at, std::min(o.OutageEnd(), c.x_max),
        absl::StrCat("redis-server ",
                     o.outage_kind == OutageKind::kKill ? "killed (kill -9)"
                                                        : "stopped (SIGSTOP)",
                     ": ", FailureModeName(o.failure_mode)),
        kOutageColor, 0.28, "outage"});
  }
  c.rules.push_back(ChartRule{static_cast<double>(o.limit),
                              absl::StrCat("limit ", Commas(o.limit), "/s"),
                              kLimitColor, "8 5", 2.0, "limit", std::nullopt});
  const double share = static_cast<double>(o.limit / o.FallbackInstances());
  if (o.mode == Mode::kLocal) {
    c.rules.push_back(
        ChartRule{static_cast<double>(o.limit / o.instances),
                  absl::StrCat("one instance's limit: limit / ", o.instances),
                  kShareColor, "3 3", 1.5, "share", std::nullopt});
  } else if (!c.bands.empty() && o.failure_mode == FailureMode::kFailLocal) {
    c.rules.push_back(ChartRule{
        share,
        absl::StrCat("one instance's share while Redis is away: limit / ",
                     o.FallbackInstances()),
        kShareColor, "3 3", 1.5, "share",
        std::make_pair(c.bands[0].from, c.bands[0].to)});
  }
  std::vector<int64_t> counts(run.windows);
  for (int64_t w = 0; w < run.windows; ++w) counts[w] = t.all[w].hot_admitted;
  c.series.push_back(ChartSeries{"all instances", kGlobalColor, 2.6, 1,
                                 "global",
                                 Steps(o, run.windows, end_s, counts)});
  for (size_t i = 0; i < run.reports.size(); ++i) {
    for (int64_t w = 0; w < run.windows; ++w) {
      counts[w] = run.reports[i].windows[w].hot_admitted;
    }
    const bool named = i < kNamedInstances;
    c.series.push_back(ChartSeries{named ? absl::StrCat("instance ", i) : "",
                                   named ? kInstanceColors[i] : "#bbbbbb", 1.3,
                                   0.9, "instance",
                                   Steps(o, run.windows, end_s, counts)});
  }
  return c;
}

absl::Status WriteChart(const DemoOptions& o, const RunRecord& run,
                        const Totals& t) {
  const std::string svg = RenderSvg(RunChart(o, run, t));
  auto error = [&](int err) {
    return absl::ErrnoToStatus(
        err, absl::StrCat("cannot write the chart to ", o.chart,
                          " (--chart=PATH to choose another file, --chart= "
                          "for none)"));
  };
  std::FILE* f = std::fopen(o.chart.c_str(), "w");
  if (f == nullptr) return error(errno);
  const bool wrote = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0) return error(errno);
  if (!wrote) return error(write_errno);
  return absl::OkStatus();
}

}  // namespace tokenlease::tools
