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

// ANSI colours, only on a terminal: by Health (none, healthy, degraded,
// down), and bold red for the outage.
constexpr const char* kHealthColors[] = {"", "\x1b[32m", "\x1b[33m",
                                         "\x1b[31m"};
constexpr char kBoldRed[] = "\x1b[1;31m";
constexpr char kReset[] = "\x1b[0m";

// The footer is redrawn at most this often between rows (the bar moves).
constexpr int64_t kFooterEveryNs = 200'000'000;
// Health transitions of one kind this close together share a line.
constexpr int64_t kEventGroupNs = 100'000'000;

std::string Colored(const std::string& text, const char* color, bool on) {
  return on && *color != '\0' ? absl::StrCat(color, text, kReset) : text;
}
std::string Colored(Health h, const std::string& text, bool on) {
  return Colored(text, kHealthColors[static_cast<int>(h) + 1], on);
}

// The columns of a row; the Redis ones only for the modes that use Redis.
// The redis column is padded by hand: it may carry colour codes.
std::string Columns(const DemoOptions& o, const std::string& t,
                    const std::string& redis, const std::string& admitted,
                    const std::string& pct, const std::string& p50,
                    const std::string& p99, const std::string& commands,
                    const std::string& per_command) {
  if (o.mode == Mode::kLocal) {
    return absl::StrFormat("%6s%12s%9s%8s%9s", t, admitted, pct, p50, p99);
  }
  return absl::StrFormat(
      "%6s  %s%s%12s%9s%8s%9s%8s%9s", t, redis,
      std::string(9 - std::min<size_t>(9, redis.size()), ' '), admitted, pct,
      p50, p99, commands, per_command);
}

// Each instance's admitted rate on the hot key with its health mark, or
// their range and a count of each state when the list would make the row
// wider than kLiveColumns.
std::string PerInstance(int64_t w, double len, size_t row_width, bool color,
                        const std::vector<InstanceReport>& reports) {
  std::string plain, shown;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  int by_health[4] = {0, 0, 0, 0};
  for (const InstanceReport& r : reports) {
    const Window& x = r.windows[w];
    const std::string rate = Fmt(x.live.hot_admitted / len);
    absl::StrAppend(&plain, plain.empty() ? "" : " ", rate,
                    HealthMark(x.health));
    absl::StrAppend(&shown, shown.empty() ? "" : " ", rate,
                    Colored(x.health, HealthMark(x.health), color));
    lo = std::min(lo, x.live.hot_admitted);
    hi = std::max(hi, x.live.hot_admitted);
    ++by_health[static_cast<int>(x.health) + 1];
  }
  if (row_width + 2 + plain.size() <= kLiveColumns) return shown;
  std::string out = absl::StrCat(Fmt(lo / len), "..", Fmt(hi / len));
  for (Health h : {Health::kHealthy, Health::kDegraded, Health::kDown}) {
    if (const int n = by_health[static_cast<int>(h) + 1]; n > 0) {
      absl::StrAppend(&out, " ", n, Colored(h, HealthMark(h), color));
    }
  }
  return out;
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
  constexpr const char* kMarks[] = {"", "+", "~", "x"};
  return kMarks[static_cast<int>(h) + 1];
}

const char* RedisColumn(const DemoOptions& o, int64_t w) {
  const double from = static_cast<double>(w) * o.window_ms / 1000.0;
  if (!o.outage || from + o.window_ms / 1000.0 <= o.outage_at ||
      from >= o.OutageEnd()) {
    return "up";
  }
  return o.outage_kind == OutageKind::kKill ? "KILLED" : "STOPPED";
}

std::string LiveHeader(const DemoOptions& o) {
  std::string legend = absl::StrFormat(
      "live: a row per %g s window as it closes; admitted = %s over all "
      "instances, limit = %% of %s/s",
      o.window_ms / 1000.0,
      o.keys == KeyDist::kHot ? "the hot key" : "the hottest key",
      Commas(o.limit));
  if (o.mode != Mode::kLocal) {
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
  for (InstanceReport& r : reports)
    std::vector<int64_t>().swap(r.windows[w].latency);
  std::sort(lat.begin(), lat.end());
  // The window's length (the last one may be shorter).
  const double len =
      std::min<double>(WindowNs(o), o.seconds * 1e9 - w * WindowNs(o)) / 1e9;
  const double rate = hot_admitted / len;
  const std::string redis = RedisColumn(o, w);
  const std::string row = Columns(
      o, absl::StrFormat("%.1fs", w * o.window_ms / 1000.0 + len),
      Colored(redis, redis == "up" ? "" : kBoldRed, color),
      Commas(std::llround(rate)),
      absl::StrFormat("%.1f%%", 100 * rate / o.limit),
      lat.empty() ? "-" : ShortNs(Percentile(lat, 0.50)),
      lat.empty() ? "-" : ShortNs(Percentile(lat, 0.99)),
      Commas(std::llround(commands / len)),
      commands > 0
          ? Commas(std::llround(static_cast<double>(offered) / commands))
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
      if (!done[j] && e.ns - first.ns <= kEventGroupNs &&
          e.from == first.from && e.to == first.to) {
        done[j] = true;
        who.push_back(sorted[j].first);
      }
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
  const int full = static_cast<int>(
      std::floor(std::clamp(fraction, 0.0, 1.0) * width + 1e-9));
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
  for (std::optional<std::string> row;
       next_row_ < NumWindows(o_) &&
       (row = LiveRow(o_, next_row_, reports, terminal_)).has_value();
       ++next_row_) {
    // The transitions that happened before this window's end.
    const int64_t end = start_ns_ + (next_row_ + 1) * WindowNs(o_);
    std::vector<std::pair<int, HealthEvent>> events;
    for (size_t i = 0; i < reports.size(); ++i) {
      const std::vector<HealthEvent>& all = reports[i].events;
      while (events_shown_[i] < all.size() && all[events_shown_[i]].ns < end) {
        events.emplace_back(static_cast<int>(i), all[events_shown_[i]++]);
      }
    }
    absl::StrAppend(&text, HealthEventLines(events, start_ns_), *row, "\n");
  }
  if (!text.empty()) PrintAboveFooter(text);
  if (terminal_ &&
      (!text.empty() || now_ns - footer_drawn_ns_ >= kFooterEveryNs)) {
    PrintAboveFooter("");
    const std::string footer = Footer(reports, outage, now_ns);
    std::fputs(footer.c_str(), stdout);
    std::fflush(stdout);
    footer_lines_ =
        static_cast<int>(std::count(footer.begin(), footer.end(), '\n'));
    footer_drawn_ns_ = now_ns;
  }
}

void LiveView::Note(const std::string& line) {
  PrintAboveFooter(absl::StrCat(line, "\n"));
}

void LiveView::Finish() { PrintAboveFooter(""); }

void LiveView::PrintAboveFooter(const std::string& text) {
  if (footer_lines_ > 0) {
    // Up to the footer's first line, then erase to the end of the screen.
    std::printf("\x1b[%dF\x1b[J", footer_lines_);
    footer_lines_ = 0;
  }
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

std::string LiveView::Footer(const std::vector<InstanceReport>& reports,
                             OutageNow outage, int64_t now_ns) const {
  const int columns = TerminalColumns();
  std::string status;
  if (outage == OutageNow::kBefore) {
    status = absl::StrFormat("redis-server up; outage at %g s for %g s",
                             o_.outage_at, o_.outage_seconds);
  } else if (outage == OutageNow::kOn) {
    status = absl::StrFormat(
        "redis-server %s since %g s, back at %g s; %s decides",
        o_.outage_kind == OutageKind::kKill ? "KILLED (kill -9)" : "STOPPED",
        o_.outage_at, o_.OutageEnd(), FailureModeName(o_.failure_mode));
  } else if (outage == OutageNow::kOver) {
    status = absl::StrFormat("redis-server back since %g s", o_.OutageEnd());
  }
  // Before the start (the instances get 200 ms to read it) the bar waits at
  // 0. A bar of a fixed width, so it does not jump when the status changes;
  // a footer line must not wrap (the footer is erased by lines, not rows):
  // the status is cut to the room left.
  const double t = std::max(0.0, static_cast<double>(now_ns - start_ns_) / 1e9);
  std::string line1 = absl::StrFormat(
      "%s %3.0f%% %5.1f of %g s  ",
      ProgressBar(t / o_.seconds, std::clamp(columns / 3, 10, 30)),
      100 * t / o_.seconds, t, o_.seconds);
  if (line1.size() >= static_cast<size_t>(columns)) line1.resize(columns - 1);
  const size_t room = columns - 1 - line1.size();
  status.resize(std::min(status.size(), room));
  absl::StrAppend(
      &line1, Colored(status, outage == OutageNow::kOn ? kBoldRed : "", true));
  if (o_.mode == Mode::kLocal) return line1 + "\n";
  // Each instance's health as of the last window it closed.
  std::string line2 = "health:";
  size_t plain = line2.size();
  for (size_t i = 0; i < reports.size(); ++i) {
    Health h = Health::kNone;
    for (const Window& w : reports[i].windows) {
      if (w.closed) h = w.health;
    }
    // Nothing heard yet: the first window has not closed.
    const std::string name = h == Health::kNone ? "starting" : HealthName(h);
    const std::string item = absl::StrCat(" ", i, " ", name);
    if (plain + item.size() + 1 >= static_cast<size_t>(columns)) break;
    plain += item.size();
    absl::StrAppend(&line2, " ", i, " ", Colored(h, name, true));
  }
  return absl::StrCat(line1, "\n", line2, "\n");
}

}  // namespace tokenlease::tools
