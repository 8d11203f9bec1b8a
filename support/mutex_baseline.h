// The obvious baseline that the benchmarks (bench/hot_path_bench.cc,
// bench/lease_bench.cc and `tokenlease bench`) compare tokenlease against:
// what a typical service writes before reaching for a library. One
// smoothly refilling token bucket (double tokens) per key, in a
// std::unordered_map guarded by a single std::mutex.
//
// It returns only a bool: it computes less than tokenlease's Decision
// (remaining, retry_after, reset_after), so the comparison is, if anything,
// generous to the baseline.
#ifndef TOKENLEASE_SUPPORT_MUTEX_BASELINE_H_
#define TOKENLEASE_SUPPORT_MUTEX_BASELINE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tokenlease_bench {

// Thread-safe (one std::mutex around every call); admits exactly what a
// double-precision smooth token bucket per key admits.
class MutexTokenBucketLimiter {
 public:
  // One bucket. Node-based map: a pointer to it stays valid while the
  // limiter lives (keys are never erased).
  struct Bucket {
    double tokens;
    int64_t last_ns;
  };

  // Each key gains `limit` tokens per `period`, smoothly, up to `burst`;
  // buckets start full.
  MutexTokenBucketLimiter(int64_t limit, absl::Duration period, int64_t burst)
      : rate_per_ns_(static_cast<double>(limit) /
                     static_cast<double>(absl::ToInt64Nanoseconds(period))),
        burst_(static_cast<double>(burst)) {}

  MutexTokenBucketLimiter(const MutexTokenBucketLimiter&) = delete;
  MutexTokenBucketLimiter& operator=(const MutexTokenBucketLimiter&) = delete;

  // By name: one hash lookup under the lock (creating the key on first use).
  // True if `cost` tokens were taken at `now_ns` (or at the current time).
  bool TryAcquire(const std::string& key, int64_t cost, int64_t now_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = buckets_.try_emplace(key, Bucket{burst_, now_ns});
    return Take(it->second, cost, now_ns);
  }
  bool TryAcquire(const std::string& key, int64_t cost) {
    return TryAcquire(key, cost, absl::GetCurrentTimeNanos());
  }

  // The handle-like path: resolve once, then skip the lookup but still take
  // the one mutex on every call. The bucket lives as long as the limiter.
  Bucket* Resolve(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] =
        buckets_.try_emplace(key, Bucket{burst_, absl::GetCurrentTimeNanos()});
    return &it->second;
  }
  bool TryAcquire(Bucket* bucket, int64_t cost, int64_t now_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    return Take(*bucket, cost, now_ns);
  }
  bool TryAcquire(Bucket* bucket, int64_t cost) {
    return TryAcquire(bucket, cost, absl::GetCurrentTimeNanos());
  }

  // The number of keys seen so far.
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return buckets_.size();
  }

 private:
  // Refills for the time since the last call (a clock that went backwards
  // adds nothing), then takes `cost` if the bucket has it.
  bool Take(Bucket& b, int64_t cost, int64_t now_ns) {
    if (now_ns > b.last_ns) {
      b.tokens =
          std::min(burst_, b.tokens + static_cast<double>(now_ns - b.last_ns) *
                                          rate_per_ns_);
      b.last_ns = now_ns;
    }
    const double c = static_cast<double>(cost);
    if (b.tokens < c) return false;
    b.tokens -= c;
    return true;
  }

  const double rate_per_ns_;
  const double burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace tokenlease_bench

#endif  // TOKENLEASE_SUPPORT_MUTEX_BASELINE_H_
