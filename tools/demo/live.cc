// The --live rows (live.h).
#include "demo/live.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/format.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

// The columns of a row; the Redis ones only for the modes that use Redis.
std::string Columns(const std::string& t, const std::string& admitted,
                    const std::string& pct, const std::string& offered,
                    const std::string& p50, const std::string& p99,
                    const std::string& redis, const std::string& per_cmd,
                    bool with_redis) {
  return with_redis ? absl::StrFormat("%6s%12s%8s%12s%9s%9s%9s%9s", t, admitted,
                                      pct, offered, p50, p99, redis, per_cmd)
                    : absl::StrFormat("%6s%12s%8s%12s%9s%9s", t, admitted, pct,
                                      offered, p50, p99);
}

// Each instance's admitted rate on the hot key, or their range when the
// list would make the row wider than kLiveColumns.
std::string PerInstance(int64_t w, double len, size_t row_width,
                        const std::vector<InstanceReport>& reports) {
  std::string per;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (const InstanceReport& r : reports) {
    const int64_t ha = r.live[w].hot_admitted;
    absl::StrAppend(&per, per.empty() ? "" : " ",
                    Fmt(static_cast<double>(ha) / len));
    lo = std::min(lo, ha);
    hi = std::max(hi, ha);
  }
  if (row_width + 2 + per.size() <= kLiveColumns) return per;
  return absl::StrCat(Fmt(lo / len), "..", Fmt(hi / len));
}

}  // namespace

std::string LiveHeader(const DemoOptions& o) {
  const bool redis = o.mode != Mode::kLocal;
  return absl::StrFormat(
      "live: a line per %g s window as it closes; admitted = %s, %%limit = "
      "of %s/s\n%s  per instance\n",
      o.window_ms / 1000.0,
      o.keys == KeyDist::kHot ? "the hot key" : "hottest key", Commas(o.limit),
      Columns("t", "admitted/s", "%limit", "offered/s", "p50", "p99",
              redis ? "redis/s" : "", redis ? "dec/cmd" : "", redis));
}

std::optional<std::string> LiveRow(const DemoOptions& o, int64_t w,
                                   std::vector<InstanceReport>& reports) {
  for (const InstanceReport& r : reports) {
    if (!r.live[w].got) return std::nullopt;
  }
  // The last window may be shorter than --window_ms.
  const int64_t run_ns = static_cast<int64_t>(o.seconds * 1e9 + 0.5);
  const double len =
      static_cast<double>(std::min(WindowNs(o), run_ns - w * WindowNs(o))) /
      1e9;
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
  const std::string row =
      Columns(absl::StrFormat(
                  "%.1fs", static_cast<double>(w) * o.window_ms / 1000.0 + len),
              Commas(std::llround(admitted_rate)),
              absl::StrFormat("%.1f%%", 100.0 * admitted_rate / o.limit),
              Commas(std::llround(static_cast<double>(offered) / len)),
              lat.empty() ? "-" : ShortNs(Percentile(lat, 0.50)),
              lat.empty() ? "-" : ShortNs(Percentile(lat, 0.99)),
              Commas(std::llround(static_cast<double>(commands) / len)),
              commands > 0 ? Fmt(static_cast<double>(offered) / commands) : "-",
              o.mode != Mode::kLocal);
  return absl::StrCat(row, "  ", PerInstance(w, len, row.size(), reports));
}

void PrintLiveRows(const DemoOptions& o, std::vector<InstanceReport>& reports,
                   int64_t* next) {
  for (; *next < NumWindows(o); ++*next) {
    const std::optional<std::string> row = LiveRow(o, *next, reports);
    if (!row.has_value()) return;
    std::printf("%s\n", row->c_str());
    std::fflush(stdout);
  }
}

}  // namespace tokenlease::tools
