// Formatting helpers (format.h).
#include "demo/format.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tokenlease::tools {

int64_t Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(
      sorted.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) -
          (q > 0 ? 1 : 0));
  return sorted[i];
}

std::string Fmt(double v) { return absl::StrFormat("%.0f", v); }

std::string Commas(int64_t v) {
  const std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string ShortNs(int64_t ns) {
  if (ns < 1'000) return absl::StrCat(ns, "ns");
  // Three significant digits: enough to compare runs, narrow enough for a
  // column.
  const bool us = ns < 1'000'000;
  const double v = ns / (us ? 1e3 : 1e6);
  return absl::StrFormat(v < 10    ? "%.2f%s"
                         : v < 100 ? "%.1f%s"
                                   : "%.0f%s",
                         v, us ? "us" : "ms");
}

std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string line;
  if (!std::getline(f, line)) return "?";
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  fields.resize(std::min<size_t>(fields.size(), 3));
  return absl::StrJoin(fields, " ");
}

}  // namespace tokenlease::tools
