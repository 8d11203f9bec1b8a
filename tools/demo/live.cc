// The --live rows (live.h).
#include "demo/live.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "demo/report.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

// Health transitions of one kind this close together share a line.
constexpr int64_t kEventGroupNs = 100'000'000;

// By Health: none, healthy, degraded, down.
const char* HealthMark(Health h) {
  constexpr const char* kMarks[] = {"", "+", "~", "x"};
  return kMarks[static_cast<int>(h) + 1];
}

// The columns of the header and of every row: time, the server's state by
// the outage's schedule, the hot key's rate and % of the limit, latency
// p50 and p99, Redis commands per second and decisions per command.
constexpr char kColumns[] = "%6s  %-9s%12s%9s%8s%9s%8s%9s";

}  // namespace

std::string LiveHeader(const DemoOptions& o) {
  return absl::StrCat(
      absl::StrFormat(
          "live: a row per %g s window as it closes; admitted = %s over all "
          "instances, limit = %% of %s/s\n      redis = %s state; "
          "cmd/s = Redis commands the instances sent; per instance: "
          "admitted/s and health (+ healthy, ~ degraded, x down)\n",
          o.window_ms / 1000.0,
          o.keys == KeyDist::kHot ? "the hot key" : "the hottest key",
          Commas(o.limit),
          o.redis == RedisKind::kSingle ? "the server's" : "the outage node's"),
      absl::StrFormat(kColumns, "t", "redis", "admitted/s", "limit", "p50",
                      "p99", "cmd/s", "dec/cmd"),
      "  per instance\n");
}

std::optional<std::string> LiveRow(const DemoOptions& o, int64_t w,
                                   std::vector<InstanceReport>& reports) {
  int64_t offered = 0, hot_admitted = 0, commands = 0;
  std::vector<int64_t> lat;
  for (InstanceReport& r : reports) {
    Window& x = r.windows[w];
    if (!x.closed) return std::nullopt;
    offered += x.live.offered;
    hot_admitted += x.live.hot_admitted;
    commands += x.commands_in_window;
    lat.insert(lat.end(), x.latency.begin(), x.latency.end());
  }
  for (InstanceReport& r : reports) {
    std::vector<int64_t>().swap(r.windows[w].latency);
  }
  std::sort(lat.begin(), lat.end());
  // The window's length (the last one may be shorter).
  const double len =
      std::min<double>(WindowNs(o), o.seconds * 1e9 - w * WindowNs(o)) / 1e9;
  const double rate = hot_admitted / len;
  const double from = w * o.window_ms / 1000.0;
  const std::string row = absl::StrFormat(
      kColumns, absl::StrFormat("%.1fs", from + len),
      o.mode == Mode::kLocal                                            ? "none"
      : !o.outage || from + len <= o.outage_at || from >= o.OutageEnd() ? "up"
      : o.outage_kind == OutageKind::kKill ? "KILLED"
                                           : "STOPPED",
      Commas(std::llround(rate)),
      absl::StrFormat("%.1f%%", 100 * rate / o.limit),
      lat.empty() ? "-" : ShortNs(Percentile(lat, 0.50)),
      lat.empty() ? "-" : ShortNs(Percentile(lat, 0.99)),
      Commas(std::llround(commands / len)),
      commands > 0
          ? Commas(std::llround(static_cast<double>(offered) / commands))
          : "-");
  // Each instance's rate and health, or their range and a count of each
  // health when the list would not fit.
  std::vector<std::string> each;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  int by_health[4] = {0, 0, 0, 0};
  for (const InstanceReport& r : reports) {
    const Window& x = r.windows[w];
    each.push_back(
        absl::StrCat(Fmt(x.live.hot_admitted / len), HealthMark(x.health)));
    lo = std::min(lo, x.live.hot_admitted);
    hi = std::max(hi, x.live.hot_admitted);
    ++by_health[static_cast<int>(x.health) + 1];
  }
  std::string instances = absl::StrJoin(each, " ");
  if (row.size() + 2 + instances.size() > kLiveColumns) {
    instances = absl::StrCat(Fmt(lo / len), "..", Fmt(hi / len));
    for (Health h : {Health::kHealthy, Health::kDegraded, Health::kDown}) {
      if (const int n = by_health[static_cast<int>(h) + 1]; n > 0) {
        absl::StrAppend(&instances, " ", n, HealthMark(h));
      }
    }
  }
  return absl::StrCat(row, "  ", instances);
}

std::string HealthEventLines(std::vector<std::pair<int, HealthEvent>> events,
                             int64_t start_ns) {
  std::stable_sort(
      events.begin(), events.end(),
      [](const auto& a, const auto& b) { return a.second.ns < b.second.ns; });
  std::string out;
  for (size_t i = 0, j = 0; i < events.size(); i = j) {
    const HealthEvent& first = events[i].second;
    std::vector<int> who;
    for (; j < events.size(); ++j) {
      const HealthEvent& e = events[j].second;
      if (e.ns - first.ns > kEventGroupNs || e.from != first.from ||
          e.to != first.to) {
        break;
      }
      who.push_back(events[j].first);
    }
    std::sort(who.begin(), who.end());
    absl::StrAppendFormat(
        &out, "  # %.2fs instance%s %s: %s -> %s%s\n",
        static_cast<double>(first.ns - start_ns) / 1e9,
        who.size() == 1 ? "" : "s", absl::StrJoin(who, " "),
        HealthName(first.from), HealthName(first.to),
        first.reason.empty()
            ? ""
            : absl::StrCat(" (", who.size() == 1 ? "" : "the first: ",
                           first.reason, ")"));
  }
  return out;
}

std::string LiveView::NewRows(std::vector<InstanceReport>& reports,
                              int64_t start_ns) {
  events_shown_.resize(reports.size(), 0);
  std::string text;
  for (std::optional<std::string> row;
       next_row_ < NumWindows(o_) &&
       (row = LiveRow(o_, next_row_, reports)).has_value();
       ++next_row_) {
    // The transitions that happened before this window's end.
    const int64_t end = start_ns + (next_row_ + 1) * WindowNs(o_);
    std::vector<std::pair<int, HealthEvent>> events;
    for (size_t i = 0; i < reports.size(); ++i) {
      const std::vector<HealthEvent>& all = reports[i].events;
      while (events_shown_[i] < all.size() && all[events_shown_[i]].ns < end) {
        events.emplace_back(static_cast<int>(i), all[events_shown_[i]++]);
      }
    }
    absl::StrAppend(&text, HealthEventLines(events, start_ns), *row, "\n");
  }
  return text;
}

}  // namespace tokenlease::tools
