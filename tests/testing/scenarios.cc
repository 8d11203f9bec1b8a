#include "testing/scenarios.h"

#include <algorithm>

namespace tokenlease::testing {

std::vector<int64_t> DoubleBurstArrivals(int64_t t0, int64_t second) {
  const int per_second[] = {10, 10, 980, 900, 100};
  std::vector<int64_t> t;
  for (int s = 0; s < 5; ++s) {
    for (int i = 0; i < per_second[s]; ++i) {
      t.push_back(t0 + s * second + (2 * i + 1) * second / (2 * per_second[s]));
    }
  }
  return t;
}

int64_t MaxInAnySpan(std::vector<int64_t> times, int64_t span) {
  std::sort(times.begin(), times.end());
  int64_t best = 0;
  size_t lo = 0;
  for (size_t hi = 0; hi < times.size(); ++hi) {
    while (times[hi] - times[lo] >= span) ++lo;
    best = std::max<int64_t>(best, static_cast<int64_t>(hi - lo + 1));
  }
  return best;
}

int64_t CountIn(const std::vector<int64_t>& times, int64_t from, int64_t to) {
  return std::count_if(times.begin(), times.end(),
                       [&](int64_t t) { return t >= from && t < to; });
}

}  // namespace tokenlease::testing
