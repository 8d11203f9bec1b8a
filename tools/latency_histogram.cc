#include "latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tokenlease::tools {

int BucketIndex(uint64_t value) {
  if (value < 2 * kSubBuckets) return static_cast<int>(value);
  const int msb = std::bit_width(value) - 1;  // >= kSubBucketBits + 1
  const int shift = msb - kSubBucketBits;
  // value >> shift is in [kSubBuckets, 2 * kSubBuckets).
  return shift * kSubBuckets + static_cast<int>(value >> shift);
}

uint64_t BucketLow(int index) {
  if (index < 2 * kSubBuckets) return static_cast<uint64_t>(index);
  const int shift = index / kSubBuckets - 1;
  const uint64_t sub = index % kSubBuckets + kSubBuckets;
  return sub << shift;
}

uint64_t BucketHigh(int index) {
  if (index < 2 * kSubBuckets) return static_cast<uint64_t>(index);
  const int shift = index / kSubBuckets - 1;
  return BucketLow(index) + ((uint64_t{1} << shift) - 1);
}

void HistogramCounts::Merge(const HistogramCounts& other) {
  for (int i = 0; i < kHistogramBuckets; ++i) buckets[i] += other.buckets[i];
  count += other.count;
  max = std::max(max, other.max);
}

void HistogramCounts::Subtract(const HistogramCounts& earlier) {
  for (int i = 0; i < kHistogramBuckets; ++i) {
    buckets[i] -= std::min(buckets[i], earlier.buckets[i]);
  }
  count -= std::min(count, earlier.count);
}

uint64_t HistogramCounts::Percentile(double q) const {
  // Sum the buckets rather than trusting `count`: in a racy snapshot the two
  // may differ by one.
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (int i = 0; i < kHistogramBuckets; ++i) {
    seen += buckets[i];
    if (seen >= rank) {
      const uint64_t low = BucketLow(i);
      const uint64_t mid = low + (BucketHigh(i) - low) / 2;
      return max > 0 ? std::min(mid, max) : mid;
    }
  }
  return max;
}

HistogramCounts LatencyHistogram::Snapshot() const {
  HistogramCounts s;
  for (int i = 0; i < kHistogramBuckets; ++i) {
    s.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  s.count = count_.load(std::memory_order_relaxed);
  s.max = max_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tokenlease::tools
