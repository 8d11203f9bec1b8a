// The key set with its Zipf CDF, windows and phases, per-key counts, and
// the pacing of a load thread (workload.h).
#include "demo/workload.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tokenlease::tools {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The unnormalised Zipf weight of rank i (0-based).
double ZipfWeight(int i, double s) {
  return std::pow(static_cast<double>(i + 1), -s);
}

// start + span x this thread's place among all threads: the instances'
// threads spread their first calls evenly over one span.
double Spread(const DemoOptions& o, int instance, int t, int64_t start_ns,
              double span_ns) {
  const int global = instance * o.threads + t;
  return static_cast<double>(start_ns) +
         span_ns * global / static_cast<double>(o.instances * o.threads);
}

}  // namespace

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t NumWindows(const DemoOptions& o) {
  return static_cast<int64_t>(
      std::ceil(o.seconds * 1000.0 / static_cast<double>(o.window_ms) - 1e-9));
}

int64_t WindowNs(const DemoOptions& o) {
  return int64_t{o.window_ms} * 1'000'000;
}

int64_t WindowAt(const DemoOptions& o, int64_t elapsed_ns) {
  return std::clamp<int64_t>(elapsed_ns / WindowNs(o), 0, NumWindows(o) - 1);
}

OutagePhase PhaseAt(const DemoOptions& o, int64_t elapsed_ns) {
  const double t = static_cast<double>(elapsed_ns) / 1e9;
  if (t < o.outage_at) return kBeforeOutage;
  return t < o.OutageEnd() ? kDuringOutage : kAfterOutage;
}

size_t KeySet::Draw(std::mt19937_64& rng) const {
  if (cdf.empty()) return 0;
  const double u = std::uniform_real_distribution<double>(0, cdf.back())(rng);
  const size_t i = static_cast<size_t>(
      std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
  return std::min(i, cdf.size() - 1);
}

KeySet MakeKeys(const DemoOptions& o) {
  KeySet k;
  if (o.keys == KeyDist::kHot) {
    k.names.push_back("hot");
    return k;
  }
  k.names.reserve(o.zipf_keys);
  k.cdf.reserve(o.zipf_keys);
  double sum = 0;
  for (int i = 0; i < o.zipf_keys; ++i) {
    k.names.push_back(KeyName(o, i));
    sum += ZipfWeight(i, o.zipf_s);
    k.cdf.push_back(sum);
  }
  return k;
}

std::string KeyName(const DemoOptions& o, int64_t rank) {
  if (o.keys == KeyDist::kHot) return "hot";
  return absl::StrFormat("user:%08d", rank);
}

double ZipfP0(const DemoOptions& o) {
  if (o.keys == KeyDist::kHot) return 1.0;
  double sum = 0;
  for (int i = 0; i < o.zipf_keys; ++i) sum += ZipfWeight(i, o.zipf_s);
  return 1.0 / sum;
}

int64_t HotKeys(const DemoOptions& o) {
  if (o.keys == KeyDist::kHot) return 1;
  // Rank i's rate is p0 x weight(i) x offered; weight(0) = 1.
  const double p0_rate = ZipfP0(o) * o.offered;
  const double threshold = kHotFraction * static_cast<double>(o.limit);
  if (p0_rate < threshold) return 0;
  // weight(i) = (i + 1)^-s >= threshold / p0_rate  <=>
  // i + 1 <= (p0_rate / threshold)^(1/s); checked around the estimate
  // against rounding.
  int64_t n = static_cast<int64_t>(std::pow(p0_rate / threshold, 1 / o.zipf_s));
  n = std::clamp<int64_t>(n, 1, o.zipf_keys);
  auto hot = [&](int64_t i) {
    return p0_rate * ZipfWeight(static_cast<int>(i), o.zipf_s) >= threshold;
  };
  while (n < o.zipf_keys && hot(n)) ++n;
  while (n > 0 && !hot(n - 1)) --n;
  return n;
}

KeyCounter::KeyCounter(int64_t keys)
    : dense_(static_cast<size_t>(std::clamp<int64_t>(keys, 0, kDenseKeys))) {
  for (size_t i = 0; i < dense_.size(); ++i) {
    dense_[i].rank = static_cast<int64_t>(i);
  }
}

void KeyCounter::AppendTo(std::vector<KeyCount>& out) const {
  for (const KeyCount& k : dense_) {
    if (k.offered > 0) out.push_back(k);
  }
  for (const auto& [rank, k] : sparse_) {
    out.push_back({static_cast<int64_t>(rank), k.offered, k.admitted});
  }
}

std::vector<KeyCount> SumByRank(std::vector<KeyCount> counts) {
  std::sort(
      counts.begin(), counts.end(),
      [](const KeyCount& a, const KeyCount& b) { return a.rank < b.rank; });
  size_t out = 0;
  for (const KeyCount& k : counts) {
    if (out > 0 && counts[out - 1].rank == k.rank) {
      counts[out - 1].offered += k.offered;
      counts[out - 1].admitted += k.admitted;
    } else {
      counts[out++] = k;
    }
  }
  counts.resize(out);
  return counts;
}

std::string LoadThreadName(int t) { return absl::StrCat("tl-load-", t); }

bool Pacer::DueOrWait(int64_t now_ns) const {
  const double gap = next_ - static_cast<double>(now_ns);
  if (gap <= 0) return true;
  if (pacing_ == Pacing::kTick) {
    // An absolute sleep: a late wake-up does not push the grid.
    const int64_t wake = static_cast<int64_t>(std::ceil(WakeNs(next_)));
    const timespec ts{static_cast<time_t>(wake / 1'000'000'000),
                      static_cast<long>(wake % 1'000'000'000)};
    // steady_clock is CLOCK_MONOTONIC on Linux. EINTR: the caller looks
    // at the clock again and comes back.
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  } else if (pacing_ == Pacing::kSleep && gap > 30'000) {
    // Give the core away; the absolute schedule makes up for the wake-up
    // delay (within kMaxLagNs).
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(static_cast<int64_t>(gap) - 20'000));
  } else if (pacing_ != Pacing::kBusy && gap > 20'000) {
    // Yield the core to Redis and the reconcilers.
    sched_yield();
  } else {
    CpuRelax();
  }
  return false;
}

double Pacer::WakeNs(double due_ns) const {
  if (tick_ <= 0) return due_ns;
  return tick_origin_ + std::ceil((due_ns - tick_origin_) / tick_) * tick_;
}

void Pacer::Book(int64_t now_ns) {
  const double now = static_cast<double>(now_ns);
  if (now - next_ > MaxLagNs()) next_ = now;
  next_ += interval_;
}

double CallIntervalNs(const DemoOptions& o) {
  const double rate = o.offered / (o.instances * o.threads);
  return 1e9 / rate;
}

double TickOriginNs(const DemoOptions& o, int instance, int t,
                    int64_t start_ns) {
  return Spread(o, instance, t, start_ns, 1000.0 * o.tick_us);
}

double FirstCallNs(const DemoOptions& o, int instance, int t,
                   int64_t start_ns) {
  return Spread(o, instance, t, start_ns, CallIntervalNs(o));
}

}  // namespace tokenlease::tools
