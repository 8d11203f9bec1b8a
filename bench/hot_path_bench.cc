// Hot-path benchmarks: tokenlease's TryAcquire next to the obvious
// mutex-and-unordered_map token bucket (support/mutex_baseline.h), in one
// binary.
//
// Names are "<impl>/<case>/<load>[/real_time/threads:N]" with impl
// "tokenlease" or "baseline" (bench/ratios.py pairs them by the rest of the
// name) or "clock" for reference clock reads. <load> is "admit" (a limit far
// above the offered load: nearly every call is admitted) or "deny" (a tiny
// limit: nearly every call is denied, as under overload). Every case reports
// the admitted fraction as the "allowed" counter.
//
// Run with bench/run_hot_path.sh (median of 5 repetitions); see
// docs/benchmarks.md.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "support/mutex_baseline.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease_bench {
namespace {

using tokenlease::Decision;
using tokenlease::Limiter;
using KeyHandle = tokenlease::Limiter::Handle;
using tokenlease::LimiterOptions;
using tokenlease::LimitSpec;

enum class Load { kAdmit, kDeny };
constexpr Load kLoads[] = {Load::kAdmit, Load::kDeny};

const char* LoadName(Load load) {
  return load == Load::kAdmit ? "admit" : "deny";
}

constexpr int64_t kBig = 1'000'000'000;
constexpr int kKeyLength = 32;
constexpr int kMillionKeys = 1'000'000;

// Token-bucket parameters shared by tokenlease and the baseline.
struct BucketParams {
  int64_t limit;
  absl::Duration period;
  int64_t burst;
};

BucketParams ParamsFor(Load load) {
  if (load == Load::kAdmit) return {kBig, absl::Seconds(1), kBig};
  return {1, absl::Hours(1), 1};
}

LimitSpec TokenBucketSpec(Load load) {
  const BucketParams p = ParamsFor(load);
  return LimitSpec::TokenBucket(p.limit, p.period, p.burst);
}

// Key `i` as exactly 32 bytes, e.g. "ratelimit:user:00000000000000042".
std::string MakeKey(int64_t i) {
  std::string key = absl::StrFormat("ratelimit:user:%017d", i);
  if (key.size() != kKeyLength) std::abort();
  return key;
}

std::unique_ptr<Limiter> MakeLimiter(const LimitSpec& spec,
                                     int64_t max_keys = 1 << 20) {
  LimiterOptions options;
  options.max_keys = max_keys;
  auto limiter = Limiter::Create(spec, options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "Limiter::Create(%s): %s\n",
                 tokenlease::DescribeSpec(spec).c_str(),
                 limiter.status().ToString().c_str());
    std::abort();
  }
  return *std::move(limiter);
}

// A tokenlease Limiter with `n` keys, each resolved to a handle.
struct TokenleaseCase {
  TokenleaseCase(const LimitSpec& spec, int n) : limiter(MakeLimiter(spec)) {
    for (int i = 0; i < n; ++i) {
      keys.push_back(MakeKey(i));
      auto handle = limiter->Resolve(keys.back());
      if (!handle.ok()) {
        std::fprintf(stderr, "Resolve: %s\n",
                     handle.status().ToString().c_str());
        std::abort();
      }
      handles.push_back(*std::move(handle));
    }
  }

  std::unique_ptr<Limiter> limiter;
  std::vector<std::string> keys;
  std::vector<KeyHandle> handles;  // Declared last: destroyed first.
};

// The baseline with `n` keys, each resolved to a bucket pointer.
struct BaselineCase {
  BaselineCase(Load load, int n) {
    const BucketParams p = ParamsFor(load);
    limiter =
        std::make_unique<MutexTokenBucketLimiter>(p.limit, p.period, p.burst);
    for (int i = 0; i < n; ++i) {
      keys.push_back(MakeKey(i));
      buckets.push_back(limiter->Resolve(keys.back()));
    }
  }

  std::unique_ptr<MutexTokenBucketLimiter> limiter;
  std::vector<std::string> keys;
  std::vector<MutexTokenBucketLimiter::Bucket*> buckets;
};

// Benchmark state lives until main() clears it, after the run.
std::vector<std::shared_ptr<void>>& Kept() {
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  return *kept;
}

template <typename T, typename... Args>
T* Keep(Args&&... args) {
  auto p = std::make_shared<T>(std::forward<Args>(args)...);
  Kept().push_back(p);
  return p.get();
}

std::string Name(const char* impl, const char* test, Load load) {
  return absl::StrCat(impl, "/", test, "/", LoadName(load));
}

bool Allowed(const Decision& d) { return d.allowed; }
bool Allowed(bool allowed) { return allowed; }

// Calls `acquire()` once per iteration and reports the admitted fraction.
template <typename F>
void RunLoop(benchmark::State& state, F acquire) {
  int64_t allowed = 0;
  for (auto _ : state) {
    auto decision = acquire();
    benchmark::DoNotOptimize(decision);
    allowed += Allowed(decision) ? 1 : 0;
  }
  state.counters["allowed"] = benchmark::Counter(
      static_cast<double>(allowed), benchmark::Counter::kAvgIterations);
}

// Single thread, one key: through a handle or a 32-byte string key, with the
// limiter's clock or the caller's time (a counter: excludes the clock read).
void RegisterSingleThread(Load load) {
  using benchmark::RegisterBenchmark;
  using benchmark::State;
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 1);
    RegisterBenchmark(
        Name("tokenlease", "handle_clock", load).c_str(), [c](State& s) {
          RunLoop(s, [c] { return c->limiter->TryAcquire(c->handles[0], 1); });
        });
    auto* b = Keep<BaselineCase>(load, 1);
    RegisterBenchmark(
        Name("baseline", "handle_clock", load).c_str(), [b](State& s) {
          RunLoop(s, [b] { return b->limiter->TryAcquire(b->buckets[0], 1); });
        });
  }
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 1);
    RegisterBenchmark(
        Name("tokenlease", "handle_now", load).c_str(), [c](State& s) {
          int64_t now = absl::GetCurrentTimeNanos();
          RunLoop(s, [c, &now] {
            return c->limiter->TryAcquire(c->handles[0], 1, now++);
          });
        });
    auto* b = Keep<BaselineCase>(load, 1);
    RegisterBenchmark(
        Name("baseline", "handle_now", load).c_str(), [b](State& s) {
          int64_t now = absl::GetCurrentTimeNanos();
          RunLoop(s, [b, &now] {
            return b->limiter->TryAcquire(b->buckets[0], 1, now++);
          });
        });
  }
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 1);
    RegisterBenchmark(
        Name("tokenlease", "string_clock", load).c_str(), [c](State& s) {
          RunLoop(s, [c] { return c->limiter->TryAcquire(c->keys[0], 1); });
        });
    auto* b = Keep<BaselineCase>(load, 1);
    RegisterBenchmark(
        Name("baseline", "string_clock", load).c_str(), [b](State& s) {
          RunLoop(s, [b] { return b->limiter->TryAcquire(b->keys[0], 1); });
        });
  }
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 1);
    RegisterBenchmark(Name("tokenlease", "string_now", load).c_str(),
                      [c](State& s) {
                        int64_t now = absl::GetCurrentTimeNanos();
                        RunLoop(s, [c, &now] {
                          return c->limiter->TryAcquire(c->keys[0], 1, now++);
                        });
                      });
    auto* b = Keep<BaselineCase>(load, 1);
    RegisterBenchmark(Name("baseline", "string_now", load).c_str(),
                      [b](State& s) {
                        int64_t now = absl::GetCurrentTimeNanos();
                        RunLoop(s, [b, &now] {
                          return b->limiter->TryAcquire(b->keys[0], 1, now++);
                        });
                      });
  }
}

// Threads on one shared key (1 and 2 threads) and 2 threads on two different
// keys, with the limiter's clock; wall time.
void RegisterThreaded(Load load) {
  using benchmark::RegisterBenchmark;
  using benchmark::State;
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 1);
    RegisterBenchmark(
        Name("tokenlease", "one_key_handle", load).c_str(),
        [c](State& s) {
          RunLoop(s, [c] { return c->limiter->TryAcquire(c->handles[0], 1); });
        })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
    auto* b = Keep<BaselineCase>(load, 1);
    RegisterBenchmark(
        Name("baseline", "one_key_handle", load).c_str(),
        [b](State& s) {
          RunLoop(s, [b] { return b->limiter->TryAcquire(b->buckets[0], 1); });
        })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 1);
    RegisterBenchmark(
        Name("tokenlease", "one_key_string", load).c_str(),
        [c](State& s) {
          RunLoop(s, [c] { return c->limiter->TryAcquire(c->keys[0], 1); });
        })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
    auto* b = Keep<BaselineCase>(load, 1);
    RegisterBenchmark(
        Name("baseline", "one_key_string", load).c_str(),
        [b](State& s) {
          RunLoop(s, [b] { return b->limiter->TryAcquire(b->keys[0], 1); });
        })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  }
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 2);
    RegisterBenchmark(
        Name("tokenlease", "two_keys_handle", load).c_str(),
        [c](State& s) {
          const KeyHandle& h = c->handles[s.thread_index()];
          RunLoop(s, [c, &h] { return c->limiter->TryAcquire(h, 1); });
        })
        ->Threads(2)
        ->UseRealTime();
    auto* b = Keep<BaselineCase>(load, 2);
    RegisterBenchmark(
        Name("baseline", "two_keys_handle", load).c_str(),
        [b](State& s) {
          auto* bucket = b->buckets[s.thread_index()];
          RunLoop(s, [b, bucket] { return b->limiter->TryAcquire(bucket, 1); });
        })
        ->Threads(2)
        ->UseRealTime();
  }
  {
    auto* c = Keep<TokenleaseCase>(TokenBucketSpec(load), 2);
    RegisterBenchmark(
        Name("tokenlease", "two_keys_string", load).c_str(),
        [c](State& s) {
          const std::string& key = c->keys[s.thread_index()];
          RunLoop(s, [c, &key] { return c->limiter->TryAcquire(key, 1); });
        })
        ->Threads(2)
        ->UseRealTime();
    auto* b = Keep<BaselineCase>(load, 2);
    RegisterBenchmark(
        Name("baseline", "two_keys_string", load).c_str(),
        [b](State& s) {
          const std::string& key = b->keys[s.thread_index()];
          RunLoop(s, [b, &key] { return b->limiter->TryAcquire(key, 1); });
        })
        ->Threads(2)
        ->UseRealTime();
  }
}

// 1M distinct 32-byte keys, shuffled once; shared by the million-key cases.
const std::vector<std::string>& MillionKeys() {
  static const auto* keys = [] {
    auto* v = new std::vector<std::string>;
    v->reserve(kMillionKeys);
    for (int i = 0; i < kMillionKeys; ++i) v->push_back(MakeKey(i));
    std::shuffle(v->begin(), v->end(), std::mt19937_64(20260101));
    return v;
  }();
  return *keys;
}

// Per-key limits of the million-key cases. kAdmit keeps every key busy (a
// token takes 36 s to come back and each key is revisited far sooner), so no
// key is idle and all 1M stay registered: the case measures lookups.
// kDeny is the usual 1 per hour. kChurn is the 1e9/s bucket of the other
// cases: a key is idle (bucket full) 1 ns after its call, so the registry
// may evict it as it grows and the next visit re-creates it.
enum class MillionLoad { kAdmit, kDeny, kChurn };

const char* MillionName(MillionLoad load) {
  switch (load) {
    case MillionLoad::kAdmit:
      return "million_keys_string/admit";
    case MillionLoad::kDeny:
      return "million_keys_string/deny";
    case MillionLoad::kChurn:
      return "million_keys_idle_string/admit";
  }
  return "?";
}

BucketParams MillionParams(MillionLoad load) {
  switch (load) {
    case MillionLoad::kAdmit:
      return {1000, absl::Hours(10), 1000};
    case MillionLoad::kDeny:
      return ParamsFor(Load::kDeny);
    case MillionLoad::kChurn:
      return ParamsFor(Load::kAdmit);
  }
  return {};
}

// Built on first use (outside the timed loop), so that a --benchmark_filter
// that skips these cases does not pay for 1M keys.
struct MillionTokenlease {
  explicit MillionTokenlease(MillionLoad load) : load(load) {}
  Limiter& Get() {
    if (limiter == nullptr) {
      const BucketParams p = MillionParams(load);
      limiter = MakeLimiter(LimitSpec::TokenBucket(p.limit, p.period, p.burst),
                            int64_t{1} << 21);
      for (const std::string& key : MillionKeys()) limiter->TryAcquire(key, 1);
      if (limiter->key_count() != kMillionKeys) {
        std::fprintf(
            stderr, "note: tokenlease/%s holds %lld keys after inserting %d\n",
            MillionName(load), static_cast<long long>(limiter->key_count()),
            kMillionKeys);
      }
    }
    return *limiter;
  }
  MillionLoad load;
  std::unique_ptr<Limiter> limiter;
};

struct MillionBaseline {
  explicit MillionBaseline(MillionLoad load) : load(load) {}
  MutexTokenBucketLimiter& Get() {
    if (limiter == nullptr) {
      const BucketParams p = MillionParams(load);
      limiter =
          std::make_unique<MutexTokenBucketLimiter>(p.limit, p.period, p.burst);
      for (const std::string& key : MillionKeys()) limiter->TryAcquire(key, 1);
    }
    return *limiter;
  }
  MillionLoad load;
  std::unique_ptr<MutexTokenBucketLimiter> limiter;
};

// Each iteration takes the next of 1M pre-populated keys (by name, with the
// limiter's clock), cycling. Reports the keys registered after the run.
void RegisterMillionKeys(MillionLoad load) {
  using benchmark::RegisterBenchmark;
  using benchmark::State;
  const BucketParams p = MillionParams(load);
  benchmark::AddCustomContext(absl::StrCat("spec/", MillionName(load)),
                              tokenlease::DescribeSpec(LimitSpec::TokenBucket(
                                  p.limit, p.period, p.burst)));
  auto* c = Keep<MillionTokenlease>(load);
  RegisterBenchmark(
      absl::StrCat("tokenlease/", MillionName(load)).c_str(), [c](State& s) {
        Limiter& limiter = c->Get();
        const std::vector<std::string>& keys = MillionKeys();
        size_t i = 0;
        RunLoop(s, [&] {
          Decision d = limiter.TryAcquire(keys[i], 1);
          if (++i == keys.size()) i = 0;
          return d;
        });
        s.counters["keys"] = static_cast<double>(limiter.key_count());
      });
  auto* b = Keep<MillionBaseline>(load);
  RegisterBenchmark(absl::StrCat("baseline/", MillionName(load)).c_str(),
                    [b](State& s) {
                      MutexTokenBucketLimiter& limiter = b->Get();
                      const std::vector<std::string>& keys = MillionKeys();
                      size_t i = 0;
                      RunLoop(s, [&] {
                        bool allowed = limiter.TryAcquire(keys[i], 1);
                        if (++i == keys.size()) i = 0;
                        return allowed;
                      });
                      s.counters["keys"] = static_cast<double>(limiter.size());
                    });
}

// Every algorithm, single-band and one two-band composite, through a handle
// at the caller's time.
void RegisterAlgorithms(Load load) {
  using tokenlease::Band;
  using tokenlease::Refill;
  const bool admit = load == Load::kAdmit;
  const int64_t limit = admit ? kBig : 1;
  const absl::Duration period = admit ? absl::Seconds(1) : absl::Hours(1);

  LimitSpec two_band = LimitSpec::TokenBucket(limit, period, limit);
  Band second;
  second.algorithm = tokenlease::Algorithm::kTokenBucket;
  second.limit = admit ? 60 * kBig : 24;
  second.period = admit ? absl::Minutes(1) : absl::Hours(24);
  two_band.bands.push_back(second);

  const std::pair<const char*, LimitSpec> cases[] = {
      {"algo_token_bucket_smooth",
       LimitSpec::TokenBucket(limit, period, limit, Refill::kSmooth)},
      {"algo_token_bucket_stepwise",
       LimitSpec::TokenBucket(limit, period, limit, Refill::kStepwise)},
      {"algo_gcra", LimitSpec::Gcra(limit, period, limit)},
      {"algo_fixed_window", LimitSpec::FixedWindow(limit, period)},
      {"algo_sliding_counter", LimitSpec::SlidingWindowCounter(limit, period)},
      {"algo_sliding_log", LimitSpec::SlidingWindowLog(limit, period)},
      {"algo_two_band", two_band},
  };
  for (const auto& [name, spec] : cases) {
    auto* c = Keep<TokenleaseCase>(spec, 1);
    benchmark::AddCustomContext(Name("spec", name, load),
                                tokenlease::DescribeSpec(spec));
    benchmark::RegisterBenchmark(
        Name("tokenlease", name, load).c_str(), [c](benchmark::State& s) {
          int64_t now = absl::GetCurrentTimeNanos();
          RunLoop(s, [c, &now] {
            return c->limiter->TryAcquire(c->handles[0], 1, now++);
          });
        });
  }
}

// Bare clock reads, for reference.
void RegisterClocks() {
  benchmark::RegisterBenchmark(
      "clock/absl_GetCurrentTimeNanos", [](benchmark::State& s) {
        for (auto _ : s) benchmark::DoNotOptimize(absl::GetCurrentTimeNanos());
      });
  benchmark::RegisterBenchmark(
      "clock/std_steady_clock_now", [](benchmark::State& s) {
        for (auto _ : s) {
          benchmark::DoNotOptimize(std::chrono::steady_clock::now());
        }
      });
  benchmark::RegisterBenchmark(
      "clock/tokenlease_DefaultClock", [](benchmark::State& s) {
        tokenlease::Clock* clock = tokenlease::DefaultClock();
        for (auto _ : s) benchmark::DoNotOptimize(clock->NowNanos());
      });
}

// Costs of the primitives the two implementations are built from, for
// reference: one uncontended 16-byte compare-and-swap (tokenlease's state
// update), the same on 8 bytes (what 8-byte cells, issue 10 item 5, would
// use instead: the two differ by about what such cells could save, the
// instruction's difference in isolation), a std::mutex lock/unlock pair (the
// baseline), an absl::Mutex reader lock/unlock pair (what the registry
// lookup took before it became lock-free), and the 16-byte one after 0, 8,
// 16 and 32 plain stores (what stores before a locked instruction cost).
void RegisterPrimitives() {
  benchmark::RegisterBenchmark("ref/cmpxchg16b", [](benchmark::State& s) {
    alignas(16) static unsigned __int128 cell = 0;
    unsigned __int128 cur = cell;
    for (auto _ : s) {
      const unsigned __int128 prev =
          __sync_val_compare_and_swap(&cell, cur, cur + 1);
      cur = prev == cur ? cur + 1 : prev;
      benchmark::DoNotOptimize(cur);
    }
  });
  // One 16-byte compare-and-swap after N plain stores, to show why the
  // local decision stores nothing before its CAS (docs/design.md, "The hot
  // path"): a locked instruction completes only once every earlier store
  // has left the store buffer. Register operands, as AtomicCell's.
  benchmark::RegisterBenchmark(
      "ref/cmpxchg16b_after_stores",
      [](benchmark::State& s) {
        alignas(16) static unsigned __int128 cell = 0;
        static std::atomic<int64_t> sink[64];
        const int64_t stores = s.range(0);
        int64_t lo = 0;
        int64_t hi = 0;
        for (auto _ : s) {
          // Relaxed: plain stores, only their number matters.
          for (int64_t i = 0; i < stores; ++i) {
            sink[i].store(lo, std::memory_order_relaxed);
          }
          bool swapped;
          asm volatile("lock cmpxchg16b %[cell]"
                       : "=@ccz"(swapped), [cell] "+m"(cell), "+a"(lo), "+d"(hi)
                       : "b"(lo + 1), "c"(hi)
                       : "memory");
          if (swapped) ++lo;
          benchmark::DoNotOptimize(lo);
        }
      })
      ->Arg(0)
      ->Arg(8)
      ->Arg(16)
      ->Arg(32);
  benchmark::RegisterBenchmark("ref/cmpxchg8", [](benchmark::State& s) {
    static std::atomic<uint64_t> cell{0};
    uint64_t cur = cell.load(std::memory_order_relaxed);
    for (auto _ : s) {
      // Relaxed: a reference timing of the instruction, nothing published.
      if (cell.compare_exchange_strong(cur, cur + 1,
                                       std::memory_order_relaxed)) {
        ++cur;
      }
      benchmark::DoNotOptimize(cur);
    }
  });
  benchmark::RegisterBenchmark("ref/std_mutex_lock_unlock",
                               [](benchmark::State& s) {
                                 static std::mutex mu;
                                 static int64_t counter = 0;
                                 for (auto _ : s) {
                                   std::lock_guard<std::mutex> lock(mu);
                                   benchmark::DoNotOptimize(++counter);
                                 }
                               });
  benchmark::RegisterBenchmark("ref/absl_mutex_reader_lock_unlock",
                               [](benchmark::State& s) {
                                 static absl::Mutex mu;
                                 for (auto _ : s) {
                                   absl::ReaderMutexLock lock(&mu);
                                   benchmark::ClobberMemory();
                                 }
                               });
}

void RegisterAll() {
  RegisterClocks();
  RegisterPrimitives();
  for (Load load : kLoads) {
    benchmark::AddCustomContext(
        Name("spec", "token_bucket", load),
        tokenlease::DescribeSpec(TokenBucketSpec(load)));
    RegisterSingleThread(load);
    RegisterThreaded(load);
    RegisterMillionKeys(load == Load::kAdmit ? MillionLoad::kAdmit
                                             : MillionLoad::kDeny);
    RegisterAlgorithms(load);
  }
  RegisterMillionKeys(MillionLoad::kChurn);
}

}  // namespace
}  // namespace tokenlease_bench

// --no_absl_deadlock_detection turns off absl::Mutex deadlock detection,
// which Debian's libabsl (built without NDEBUG) enables by default and which
// every absl::Mutex lock then pays; it shows that cost on the by-name paths.
int main(int argc, char** argv) {
  bool detection = true;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--no_absl_deadlock_detection") {
      detection = false;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!detection) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  benchmark::AddCustomContext("absl_mutex_deadlock_detection",
                              detection ? "library default" : "off");
  tokenlease_bench::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  tokenlease_bench::Kept().clear();
  return 0;
}
