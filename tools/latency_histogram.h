// A log-linear latency histogram with one writer and any number of readers.
#ifndef TOKENLEASE_TOOLS_LATENCY_HISTOGRAM_H_
#define TOKENLEASE_TOOLS_LATENCY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstdint>

namespace tokenlease::tools {

// Buckets: values below 32 are exact; above, each power of two is split into
// 16 equal sub-buckets, so a bucket spans at most 1/16 of its lower bound
// (a reported percentile is within about 3% of the true value).
inline constexpr int kSubBucketBits = 4;
inline constexpr int kSubBuckets = 1 << kSubBucketBits;
inline constexpr int kHistogramBuckets =
    (64 - kSubBucketBits) * kSubBuckets;  // up to 2^64 - 1

// Returns the bucket of `value`.
int BucketIndex(uint64_t value);
// Returns the smallest and largest value that fall in bucket `index`.
uint64_t BucketLow(int index);
uint64_t BucketHigh(int index);

// Plain (non-atomic) counts: a snapshot, a difference of two snapshots, or a
// merge of several threads.
struct HistogramCounts {
  std::array<uint64_t, kHistogramBuckets> buckets{};
  uint64_t count = 0;
  uint64_t max = 0;

  // Adds `other` bucket by bucket (max is the larger of both).
  void Merge(const HistogramCounts& other);
  // Subtracts an earlier snapshot of the same histogram. `max` is kept as
  // is (the all-time max cannot be diffed).
  void Subtract(const HistogramCounts& earlier);
  // The value at quantile q in [0, 1]: the midpoint of the bucket holding
  // the ceil(q * count)-th smallest sample, capped at `max`; 0 if empty.
  uint64_t Percentile(double q) const;
};

// Written by exactly one thread (Record), read concurrently by others
// (Snapshot) with relaxed atomics: no locks and no read-modify-write
// instructions on the hot path. A snapshot taken while Record runs may be
// off by the sample in flight.
class LatencyHistogram {
 public:
  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Owner thread only.
  void Record(uint64_t value) {
    Bump(buckets_[BucketIndex(value)]);
    Bump(count_);
    if (value > max_.load(std::memory_order_relaxed)) {
      max_.store(value, std::memory_order_relaxed);
    }
  }

  // Any thread.
  HistogramCounts Snapshot() const;

 private:
  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  std::array<std::atomic<uint64_t>, kHistogramBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> max_{0};
};

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_LATENCY_HISTOGRAM_H_
