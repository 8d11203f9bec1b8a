// Random specs and call sequences for the property tests (property_test.cc)
// and the script agreement test (redis/lua_vectors_test.cc). Deterministic
// on every platform (no std distributions): a seed replays its sequence.
#ifndef TOKENLEASE_TESTS_TESTING_GENERATORS_H_
#define TOKENLEASE_TESTS_TESTING_GENERATORS_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::testing {

// Nanoseconds.
inline constexpr int64_t kUs = 1000;
inline constexpr int64_t kMs = 1000 * kUs;
inline constexpr int64_t kSecond = 1000 * kMs;
inline constexpr int64_t kDay = 86400 * kSecond;
// 2026-01-01T00:00:00Z (a Thursday, like the epoch: weeks align too).
inline constexpr int64_t kEpoch2026 = int64_t{1767225600} * kSecond;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform in [lo, hi]; lo if hi <= lo (tiny modulo bias is irrelevant).
  int64_t Uniform(int64_t lo, int64_t hi);
  // True with probability p / 100.
  bool Percent(int p) { return Uniform(0, 99) < p; }
  // A uniformly chosen element of `v` (not empty).
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(
        Uniform(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 gen_;
};

struct Rate {
  int64_t limit;
  int64_t period_ns;
  int64_t burst;  // token buckets only; 0 = limit
};

// The rates random specs draw from: the extremes of the accepted ranges
// and odd ones (prime limits, emission intervals that are not whole ns).
inline constexpr Rate kRates[] = {
    {1, 7 * kDay, 0},                   // 1 per week
    {3, kSecond, 0},                    // emission interval 333333333.33 ns
    {7, 100 * kMs, 0},                  // 14285714.28 ns
    {1000000000, kSecond, 1000000000},  // 1 per ns
    {999999937, kSecond, 0},         // prime: emission interval 1e9/999999937
    {13, kSecond, 40},               // burst above limit
    {2, kUs, 3},                     // shortest period
    {int64_t{1} << 40, kSecond, 0},  // largest limit
};

// The kinds of band a random spec is made of.
enum class BandKind {
  kSmoothBucket,
  kGcra,
  kStepwise,
  kFixedAligned,
  kFixedFirstRequest,
  kCounter,
  kLogExact,     // limit <= max_log_entries
  kLogGranular,  // log_granularity > 0
  kLogBounded,   // small max_log_entries: limit may exceed it
};

// A band of `kind` at `rate`; window offsets, granules and log bounds are
// drawn from `rng`.
Band RandomBand(BandKind kind, const Rate& rate, Rng& rng);
// One band of `kind` at a rate of kRates, all drawn from Rng(seed).
LimitSpec RandomSpec(BandKind kind, uint64_t seed);
// Two to four bands drawn from Rng(seed): seed % 4 picks window + exact
// log, bucket + window, or random kinds.
LimitSpec RandomComposite(uint64_t seed);
// DescribeSpec plus the fields it leaves out (anchor, max_log_entries,
// window offset in ns).
std::string SpecString(const LimitSpec& spec);

// TryAcquire(key, cost, now) with times in ns.
struct Call {
  int64_t now;
  int64_t cost;
};

// Random arrivals shaped by the spec's own scales: gaps of 0, a few ns,
// about one emission interval T, about one period P, several periods,
// small steps back (if allowed), jumps to exactly the last retry_after (and
// 1 ns before), and to window or refill boundaries (and +-1 ns). Costs are
// mostly small, sometimes the capacity (+1), rarely -1 (invalid).
class CallGenerator {
 public:
  CallGenerator(const LimitSpec& spec, uint64_t seed, bool allow_back);
  // The next call; `last` is the decision on the previous one (null for
  // the first).
  Call Next(const Decision* last);

 private:
  struct Shape {
    int64_t P, T, O, cap;
  };
  int64_t FirstTime(const Shape& s);
  int64_t NextTime(const Shape& s, const Decision* last);
  int64_t NextCost(const Shape& s);

  Rng rng_;
  bool allow_back_;
  std::vector<Shape> shapes_;
  bool started_ = false;
  int calls_ = 0;
  int64_t first_ = 0;
  Call prev_{};
};

// A call for the Lua scripts: whole microseconds from a start time.
struct ScriptCall {
  int64_t t_us;             // offset from the start, never decreasing
  int64_t cost;             // >= 0; the first call's is 1
  int64_t max_wait_us = 0;  // > 0: Reserve (only borrowing bucket specs)
};

// `count` random calls for `spec` from Rng(seed): same-instant calls, gaps
// of up to 1 ms, about one emission interval, or up to two periods; costs
// 0-2, sometimes up to the capacity + 1.
std::vector<ScriptCall> RandomScriptCalls(const LimitSpec& spec, uint64_t seed,
                                          int count);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_GENERATORS_H_
