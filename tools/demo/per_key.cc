// Per-key counts, ideal admission and bound (per_key.h).
#include "demo/per_key.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/format.h"
#include "demo/report.h"

namespace tokenlease::tools {
namespace {

// The first rank of each group; the last group has no end.
constexpr int64_t kGroupFirst[] = {0, 100, 1000, 10000};

}  // namespace

KeyCounter::KeyCounter(int64_t keys)
    : dense_(static_cast<size_t>(std::clamp<int64_t>(keys, 0, kDenseKeys))) {}

void KeyCounter::AppendTo(std::vector<KeyCount>& out) const {
  for (size_t i = 0; i < dense_.size(); ++i) {
    if (dense_[i].offered > 0) {
      out.push_back(
          {static_cast<int64_t>(i), dense_[i].offered, dense_[i].admitted});
    }
  }
  for (const auto& [rank, p] : sparse_) {
    out.push_back({static_cast<int64_t>(rank), p.offered, p.admitted});
  }
}

std::vector<KeyCount> SumByRank(std::vector<KeyCount> counts) {
  std::sort(
      counts.begin(), counts.end(),
      [](const KeyCount& a, const KeyCount& b) { return a.rank < b.rank; });
  size_t out = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (out > 0 && counts[out - 1].rank == counts[i].rank) {
      counts[out - 1].offered += counts[i].offered;
      counts[out - 1].admitted += counts[i].admitted;
    } else {
      counts[out++] = counts[i];
    }
  }
  counts.resize(out);
  return counts;
}

double PerKeyBound::Ideal() const {
  return static_cast<double>(burst) + static_cast<double>(limit) * duration_s;
}

double PerKeyBound::Value() const {
  return Ideal() + static_cast<double>(instances * (local_allowance + held));
}

std::string PerKeyBound::Formula() const {
  return absl::StrFormat(
      "burst + limit x duration + instances x (A + M) = %d + %d x %.3f + %d x "
      "(%d + %d) = %s",
      burst, limit, duration_s, instances, local_allowance, held, Fmt(Value()));
}

PerKeyBound ComputePerKeyBound(const DemoOptions& o, double duration_s) {
  const Bounds b = ComputeBounds(o);
  PerKeyBound k;
  k.burst = b.burst;
  k.limit = o.limit;
  k.instances = o.instances;
  k.local_allowance = b.local_allowance;
  k.held = b.held / o.instances;
  k.duration_s = duration_s;
  return k;
}

std::string RankGroup::Label() const {
  return end < 0 ? absl::StrCat(first, "+") : absl::StrCat(first, "-", end - 1);
}

PerKeySummary SummarisePerKey(const DemoOptions& o,
                              const std::vector<KeyCount>& counts,
                              double duration_s, size_t worst) {
  PerKeySummary s;
  s.bound = ComputePerKeyBound(o, duration_s);
  const int64_t keys = o.keys == KeyDist::kHot ? 1 : o.zipf_keys;
  for (size_t g = 0; g < std::size(kGroupFirst); ++g) {
    if (kGroupFirst[g] >= keys) break;
    RankGroup group;
    group.first = kGroupFirst[g];
    group.end = g + 1 < std::size(kGroupFirst) ? kGroupFirst[g + 1] : -1;
    s.groups.push_back(group);
  }
  const double ideal_cap = s.bound.Ideal(), bound = s.bound.Value();
  std::vector<KeyCount> over;
  size_t g = 0;
  for (const KeyCount& k : counts) {
    const double ideal = std::min(static_cast<double>(k.offered), ideal_cap);
    ++s.keys;
    s.offered += k.offered;
    s.admitted += k.admitted;
    s.ideal += ideal;
    while (g + 1 < s.groups.size() && k.rank >= s.groups[g + 1].first) ++g;
    if (g < s.groups.size()) {
      RankGroup& group = s.groups[g];
      ++group.keys;
      group.offered += k.offered;
      group.admitted += k.admitted;
      group.ideal += ideal;
    }
    const double ratio = static_cast<double>(k.admitted) / bound;
    if (ratio > s.max_ratio) {
      s.max_ratio = ratio;
      s.max_key = k;
    }
    if (static_cast<double>(k.admitted) > bound) over.push_back(k);
  }
  s.over = static_cast<int64_t>(over.size());
  std::stable_sort(over.begin(), over.end(),
                   [](const KeyCount& a, const KeyCount& b) {
                     return a.admitted > b.admitted;
                   });
  over.resize(std::min(over.size(), worst));
  s.worst = std::move(over);
  return s;
}

}  // namespace tokenlease::tools
