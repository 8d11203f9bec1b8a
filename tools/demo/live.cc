// The --live rows and the terminal footer (live.h).
#include "demo/live.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "demo/format.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

// ANSI colours, only on a terminal.
constexpr char kReset[] = "\x1b[0m";
constexpr char kGreen[] = "\x1b[32m";
constexpr char kYellow[] = "\x1b[33m";
constexpr char kRed[] = "\x1b[31m";
constexpr char kBoldRed[] = "\x1b[1;31m";

// The footer is redrawn at most this often between rows (the bar moves).
constexpr int64_t kFooterEveryNs = 200'000'000;
// Health transitions of one kind this close together share a line.
constexpr int64_t kEventGroupNs = 100'000'000;

bool UsesRedis(const DemoOptions& o) { return o.mode != Mode::kLocal; }

const char* HealthColor(Health h) {
  switch (h) {
    case Health::kHealthy:
      return kGreen;
    case Health::kDegraded:
      return kYellow;
    case Health::kDown:
      return kRed;
    case Health::kNone:
      break;
  }
  return "";
}

std::string Colored(const std::string& text, const char* color, bool on) {
  return on && *color != '\0' ? absl::StrCat(color, text, kReset) : text;
}

// The columns of a row; the Redis ones only for the modes that use Redis.
std::string Columns(const DemoOptions& o, const std::string& t,
                    const std::string& redis, const std::string& admitted,
                    const std::string& pct, const std::string& p50,
                    const std::string& p99, const std::string& commands,
                    const std::string& per_cmd) {
  if (!UsesRedis(o)) {
    return absl::StrFormat("%6s%12s%9s%8s%9s", t, admitted, pct, p50, p99);
  }
  // The redis column is padded by hand: it may carry colour codes.
  return absl::StrFormat(
      "%6s  %s%s%12s%9s%8s%9s%8s%9s", t, redis,
      std::string(9 - std::min<size_t>(9, redis.size()), ' '), admitted, pct,
      p50, p99, commands, per_cmd);
}

// Each instance's admitted rate on the hot key with its health mark, or
// their range and a count of each state when the list would make the row
// wider than kLiveColumns.
std::string PerInstance(int64_t w, double len, size_t row_width, bool color,
                        const std::vector<InstanceReport>& reports) {
  std::string plain, shown;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  int by_health[3] = {0, 0, 0};
  for (const InstanceReport& r : reports) {
    const LiveWindow& x = r.live[w];
    const std::string rate = Fmt(static_cast<double>(x.hot_admitted) / len);
    const char* mark = HealthMark(x.health);
    absl::StrAppend(&plain, plain.empty() ? "" : " ", rate, mark);
    absl::StrAppend(&shown, shown.empty() ? "" : " ", rate,
                    Colored(mark, HealthColor(x.health), color));
    lo = std::min(lo, x.hot_admitted);
    hi = std::max(hi, x.hot_admitted);
    if (x.health != Health::kNone) ++by_health[static_cast<int>(x.health)];
  }
  if (row_width + 2 + plain.size() <= kLiveColumns) return shown;
  std::string out = absl::StrCat(Fmt(lo / len), "..", Fmt(hi / len));
  for (Health h : {Health::kHealthy, Health::kDegraded, Health::kDown}) {
    if (by_health[static_cast<int>(h)] == 0) continue;
    absl::StrAppend(&out, " ", by_health[static_cast<int>(h)],
                    Colored(HealthMark(h), HealthColor(h), color));
  }
  return out;
}

// The window's length in seconds (the last one may be shorter).
double WindowSecondsAt(const DemoOptions& o, int64_t w) {
  const int64_t run_ns = static_cast<int64_t>(o.seconds * 1e9 + 0.5);
  return static_cast<double>(std::min(WindowNs(o), run_ns - w * WindowNs(o))) /
         1e9;
}

int TerminalColumns() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  return 80;
}

}  // namespace

const char* HealthMark(Health h) {
  switch (h) {
    case Health::kHealthy:
      return "+";
    case Health::kDegraded:
      return "~";
    case Health::kDown:
      return "x";
    case Health::kNone:
      break;
  }
  return "";
}

const char* RedisColumn(const DemoOptions& o, int64_t w) {
  if (!o.outage) return "up";
  const double from = static_cast<double>(w) * o.window_ms / 1000.0;
  const double to = from + o.window_ms / 1000.0;
  if (to <= o.outage_at || from >= o.OutageEnd()) return "up";
  return o.outage_kind == OutageKind::kKill ? "KILLED" : "STOPPED";
}

std::string LiveHeader(const DemoOptions& o) {
  std::string legend = absl::StrFormat(
      "live: a row per %g s window as it closes; admitted = %s over all "
      "instances, limit = %% of %s/s",
      o.window_ms / 1000.0,
      o.keys == KeyDist::kHot ? "the hot key" : "the hottest key",
      Commas(o.limit));
  if (UsesRedis(o)) {
    absl::StrAppend(&legend,
                    "\n      redis = the server's state (an outage row says "
                    "so); cmd/s = Redis commands the instances sent; per "
                    "instance: admitted/s and health (+ healthy, ~ degraded, "
                    "x down)");
  }
  return absl::StrCat(legend, "\n",
                      Columns(o, "t", "redis", "admitted/s", "limit", "p50",
                              "p99", "cmd/s", "dec/cmd"),
                      "  per instance\n");
}

std::optional<std::string> LiveRow(const DemoOptions& o, int64_t w,
                                   std::vector<InstanceReport>& reports,
                                   bool color) {
  for (const InstanceReport& r : reports) {
    if (!r.live[w].got) return std::nullopt;
  }
  const double len = WindowSecondsAt(o, w);
  int64_t offered = 0, hot_admitted = 0, commands = 0;
  std::vector<int64_t> lat;
  for (InstanceReport& r : reports) {
    LiveWindow& x = r.live[w];
    offered += x.offered;
    hot_admitted += x.hot_admitted;
    commands += x.commands_in_window;
    lat.insert(lat.end(), x.latency.begin(), x.latency.end());
    std::vector<int64_t>().swap(x.latency);
  }
  std::sort(lat.begin(), lat.end());
  const double admitted_rate = static_cast<double>(hot_admitted) / len;
  const std::string redis = RedisColumn(o, w);
  const std::string row =
      Columns(o,
              absl::StrFormat(
                  "%.1fs", static_cast<double>(w) * o.window_ms / 1000.0 + len),
              Colored(redis, redis == "up" ? "" : kBoldRed, color),
              Commas(std::llround(admitted_rate)),
              absl::StrFormat("%.1f%%", 100.0 * admitted_rate / o.limit),
              lat.empty() ? "-" : ShortNs(Percentile(lat, 0.50)),
              lat.empty() ? "-" : ShortNs(Percentile(lat, 0.99)),
              Commas(std::llround(static_cast<double>(commands) / len)),
              commands > 0 ? Commas(std::llround(static_cast<double>(offered) /
                                                 static_cast<double>(commands)))
                           : "-");
  // The width as printed, without the colour codes.
  const size_t width =
      row.size() - (Colored(redis, kBoldRed, color).size() - redis.size());
  return absl::StrCat(row, "  ", PerInstance(w, len, width, color, reports));
}

std::string HealthEventLines(
    const std::vector<std::pair<int, HealthEvent>>& events, int64_t start_ns) {
  std::vector<std::pair<int, HealthEvent>> sorted = events;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const auto& a, const auto& b) { return a.second.ns < b.second.ns; });
  std::string out;
  std::vector<bool> done(sorted.size(), false);
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (done[i]) continue;
    const HealthEvent& first = sorted[i].second;
    std::vector<int> who;
    for (size_t j = i; j < sorted.size(); ++j) {
      const HealthEvent& e = sorted[j].second;
      if (done[j] || e.ns - first.ns > kEventGroupNs || e.from != first.from ||
          e.to != first.to) {
        continue;
      }
      done[j] = true;
      who.push_back(sorted[j].first);
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

std::string ProgressBar(double fraction, int width) {
  const double f = std::clamp(fraction, 0.0, 1.0);
  const int full = static_cast<int>(std::floor(f * width + 1e-9));
  return absl::StrCat("[", std::string(full, '#'),
                      std::string(width - full, '-'), "]");
}

LiveView::LiveView(const DemoOptions& o, bool terminal)
    : o_(o), terminal_(terminal) {}

bool LiveView::StdoutIsTerminal() {
  const char* term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) == 1 && term != nullptr && *term != '\0' &&
         std::string(term) != "dumb";
}

void LiveView::Start(int64_t start_ns) {
  start_ns_ = start_ns;
  PrintAboveFooter(LiveHeader(o_));
}

void LiveView::Update(std::vector<InstanceReport>& reports, OutageNow outage,
                      int64_t now_ns) {
  events_shown_.resize(reports.size(), 0);
  std::string text;
  for (; next_row_ < NumWindows(o_); ++next_row_) {
    const std::optional<std::string> row =
        LiveRow(o_, next_row_, reports, terminal_);
    if (!row.has_value()) break;
    // The transitions that happened before this window's end.
    const int64_t end = start_ns_ + (next_row_ + 1) * WindowNs(o_);
    std::vector<std::pair<int, HealthEvent>> events;
    for (size_t i = 0; i < reports.size(); ++i) {
      const std::vector<HealthEvent>& all = reports[i].health_events;
      while (events_shown_[i] < all.size() && all[events_shown_[i]].ns < end) {
        events.emplace_back(static_cast<int>(i), all[events_shown_[i]++]);
      }
    }
    absl::StrAppend(&text, HealthEventLines(events, start_ns_), *row, "\n");
  }
  if (!text.empty()) PrintAboveFooter(text);
  if (terminal_ &&
      (!text.empty() || now_ns - footer_drawn_ns_ >= kFooterEveryNs)) {
    DrawFooter(reports, outage, now_ns);
  }
}

void LiveView::Note(const std::string& line) {
  PrintAboveFooter(absl::StrCat(line, "\n"));
}

void LiveView::Finish() {
  ClearFooter();
  std::fflush(stdout);
}

void LiveView::PrintAboveFooter(const std::string& text) {
  ClearFooter();
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

void LiveView::ClearFooter() {
  if (footer_lines_ == 0) return;
  // Up to the footer's first line, then erase to the end of the screen.
  std::printf("\x1b[%dF\x1b[J", footer_lines_);
  footer_lines_ = 0;
}

void LiveView::DrawFooter(const std::vector<InstanceReport>& reports,
                          OutageNow outage, int64_t now_ns) {
  ClearFooter();
  const std::string footer = Footer(reports, outage, now_ns);
  std::fputs(footer.c_str(), stdout);
  std::fflush(stdout);
  footer_lines_ =
      static_cast<int>(std::count(footer.begin(), footer.end(), '\n'));
  footer_drawn_ns_ = now_ns;
}

std::string LiveView::Footer(const std::vector<InstanceReport>& reports,
                             OutageNow outage, int64_t now_ns) const {
  const int columns = TerminalColumns();
  const double t = static_cast<double>(now_ns - start_ns_) / 1e9;
  std::string status;
  const char* what =
      o_.outage_kind == OutageKind::kKill ? "KILLED (kill -9)" : "STOPPED";
  switch (outage) {
    case OutageNow::kBefore:
      status = absl::StrFormat("redis-server up; outage at %g s for %g s",
                               o_.outage_at, o_.outage_seconds);
      break;
    case OutageNow::kOn:
      status = absl::StrFormat(
          "redis-server %s since %g s, back at %g s; %s "
          "decides",
          what, o_.outage_at, o_.OutageEnd(), FailureModeName(o_.failure_mode));
      break;
    case OutageNow::kOver:
      status = absl::StrFormat("redis-server back since %g s", o_.OutageEnd());
      break;
    case OutageNow::kNone:
      break;
  }
  // Before the start (the instances get 200 ms to read it) the bar waits
  // at 0.
  const double shown_t = std::max(0.0, t);
  const std::string time =
      absl::StrFormat(" %3.0f%% %5.1f of %g s  ", 100 * shown_t / o_.seconds,
                      shown_t, o_.seconds);
  // A bar of a fixed width for the terminal, so it does not jump when the
  // status changes; the status is cut if the line is too short for it.
  const int bar = std::clamp(columns / 3, 10, 30);
  std::string line1 =
      absl::StrCat(ProgressBar(shown_t / o_.seconds, bar), time);
  // A footer line must not wrap: ClearFooter counts lines, not rows.
  if (line1.size() >= static_cast<size_t>(columns)) line1.resize(columns - 1);
  const int room = columns - 1 - static_cast<int>(line1.size());
  if (room > 0 && !status.empty()) {
    status.resize(std::min<size_t>(status.size(), room));
    absl::StrAppend(&line1, outage == OutageNow::kOn
                                ? Colored(status, kBoldRed, true)
                                : status);
  }
  if (!UsesRedis(o_)) return line1 + "\n";
  // Each instance's health as of the last window it sent.
  std::string line2 = "health:";
  size_t plain = line2.size();
  // Windows arrive in order: look back from the one closing now.
  const int64_t newest = std::clamp<int64_t>(
      (now_ns - start_ns_) / WindowNs(o_), 0, NumWindows(o_) - 1);
  for (size_t i = 0; i < reports.size(); ++i) {
    Health h = Health::kNone;
    for (int64_t w = newest; w >= 0; --w) {
      if (reports[i].live[w].got) {
        h = reports[i].live[w].health;
        break;
      }
    }
    // Nothing heard yet: the first window has not closed.
    const char* name = h == Health::kNone ? "starting" : HealthName(h);
    const std::string item = absl::StrCat(" ", i, " ", name);
    if (plain + item.size() + 1 >= static_cast<size_t>(columns)) break;
    plain += item.size();
    absl::StrAppend(&line2, " ", i, " ", Colored(name, HealthColor(h), true));
  }
  return absl::StrCat(line1, "\n", line2, "\n");
}

}  // namespace tokenlease::tools
