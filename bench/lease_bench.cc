// The leased decision (LeasedLimiter::TryAcquire through a
// LeasedLimiter::Handle: one relaxed fetch_sub on the key's balance, no
// clock, no I/O) next to the local engine (Limiter::TryAcquire(handle,
// cost, now)), the mutex baseline (support/mutex_baseline.h) and a bare
// fetch_sub, in one binary (docs/benchmarks.md, "Hot key" and "By name").
// Target: the leased decision within 1.2x of the bare fetch_sub.
//
// Names are "<impl>/<case>/<load>[/real_time/threads:N]", impl "lease",
// "local" or "mutex". Every case reports the admitted fraction as the
// "allowed" counter; a lease case that was not served entirely from its
// lease (allowed < 1 under "admit") is labelled "RAN DRY".
//
// Needs a Redis for the lease: the URL comes from --url or
// TOKENLEASE_BENCH_REDIS_URL; without it, the binary starts a private
// redis-server for the run (support/redis_server.h) and stops it at the
// end. --transport=tcp,tls (bench_redis.h): that server also listens with
// mutual TLS, and every lease case runs over both, the TLS ones named
// "lease_tls/..." (a leased decision never touches the connection: the
// two should match). --tls: TLS only; a rediss:// URL takes --tls_*_file.
//
// "admit": token bucket 1e12 per second, burst 1e12 (the Redis scripts
// accept up to burst x period/limit < 2^51 units; 2^40 is the largest limit
// a Band takes), LeaseOptions with max_lease_fraction 1, remaining_share 1
// and lease_ttl 1 h: the first lease is 10 ms of the rate (1e10 tokens,
// asked for by a denied decision of that cost before timing), far more than
// any run takes, and it never expires during the run. "deny": 1 per hour;
// its one token is spent before timing and Redis's refusal is cached, so
// every timed call is the local denial path.
//
// "lease/handle_uncounted" makes the same decisions on the same limiter
// without counting them
// (LimiterStats::decisions, docs/metrics.md): the ratio to their counted
// twins is what counting costs.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_redis.h"
#include "benchmark/benchmark.h"
#include "support/mutex_baseline.h"
#include "support/redis_server.h"
#include "tokenlease/internal/lease_benchmark_access.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease_bench {
namespace {

using tokenlease::Decision;
using tokenlease::LeasedLimiter;
using tokenlease::Limiter;
using KeyHandle = tokenlease::Limiter::Handle;
using LeaseHandle = tokenlease::LeasedLimiter::Handle;
using tokenlease::LimitSpec;
using tokenlease_bench::Transport;

constexpr int64_t kHuge = 1'000'000'000'000;  // 1e12 per second
// A 32-byte key, as in hot_path_bench.
constexpr char kKey[] = "ratelimit:user:00000000000000042";
static_assert(sizeof(kKey) == 33);

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "lease_bench: %s\n", what.c_str());
  std::exit(1);
}

enum class Load { kAdmit, kDeny };
const char* LoadName(Load l) { return l == Load::kAdmit ? "admit" : "deny"; }

LimitSpec SpecFor(Load l) {
  return l == Load::kAdmit
             ? LimitSpec::TokenBucket(kHuge, absl::Seconds(1), kHuge)
             : LimitSpec::TokenBucket(1, absl::Hours(1), 1);
}

struct LeaseCase {
  std::unique_ptr<LeasedLimiter> limiter;
  LeaseHandle handle;
  Load load;
};

// What a lease case is made of (MakeLeaseCase).
// `sliced`: false turns hot keys' slices off (LeaseOptions::
// slice_threshold = 0), to compare with the balance's path in one run;
// `single_thread`: LeaseOptions::slice_single_thread.
struct LeaseCaseSpec {
  Transport transport;
  Load load;
  int n;  // tells the cases' key prefixes apart
  bool sliced = true;
  bool single_thread = tokenlease::LeaseOptions{}.slice_single_thread;
};

// A leased limiter whose key holds its first lease (admit) or a cached
// refusal (deny) before anything is timed.
std::unique_ptr<LeaseCase> MakeLeaseCase(const LeaseCaseSpec& spec) {
  const Transport& t = spec.transport;
  const Load load = spec.load;
  tokenlease::LeasedLimiterOptions options;
  if (!spec.sliced) options.lease.slice_threshold = 0;
  options.lease.slice_single_thread = spec.single_thread;
  options.redis.url = t.url;
  options.redis.tls = t.tls;
  options.key_prefix =
      absl::StrCat("bench:lease:", t.name, ":", LoadName(load), ":", spec.n,
                   ":", absl::GetCurrentTimeNanos(), ":");
  options.lease.lease_ttl = absl::Hours(1);
  options.lease.idle_evict = absl::Hours(3);
  options.lease.max_lease_fraction = 1.0;
  options.lease.remaining_share = 1.0;
  // The lease's path is measured: no decision from the local credit (the
  // loop below waits for the lease itself).
  options.lease.cold_key_policy = tokenlease::ColdKeyPolicy::kDeny;
  auto limiter = LeasedLimiter::Create(SpecFor(load), options);
  if (!limiter.ok()) {
    Die(absl::StrCat("LeasedLimiter::Create(",
                     tokenlease::DescribeSpec(SpecFor(load)),
                     "): ", limiter.status().ToString()));
  }
  auto c =
      std::make_unique<LeaseCase>(LeaseCase{*std::move(limiter), {}, load});
  auto handle = c->limiter->Resolve(kKey);
  if (!handle.ok()) Die(handle.status().ToString());
  c->handle = *std::move(handle);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  if (load == Load::kAdmit) {
    // A lease starts at one token and doubles each time the key runs dry:
    // at a few ns per decision the first repetition would time the lease's
    // growth (denials and refills). A denied cost of kWarmLease makes the
    // first request ask for at least that much (the sizing rule's cost
    // hint), so the key holds it before anything is timed.
    constexpr int64_t kWarmLease = 10'000'000'000;  // 1e10: 10 ms of the rate
    c->limiter->TryAcquire(c->handle, kWarmLease);
    if (!c->limiter->Sync(absl::Seconds(10)).ok()) {
      Die("no lease within 10 s; is Redis up?");
    }
    auto info = c->limiter->Inspect(kKey);
    if (!info.ok() || info->balance < kWarmLease) {
      Die(absl::StrCat("the first lease holds ", info.ok() ? info->balance : -1,
                       " tokens, not ", kWarmLease));
    }
    while (!c->limiter->TryAcquire(c->handle, 1).allowed) {
      if (absl::Now() > deadline) Die("no lease within 10 s; is Redis up?");
      absl::SleepFor(absl::Milliseconds(1));
    }
  } else {
    // Take the one token, then let Redis refuse the next lease.
    for (int i = 0; i < 50; ++i) {
      c->limiter->TryAcquire(c->handle, 1);
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (c->limiter->stats().lease.denied_by_redis == 0) {
      Die("deny case: Redis never refused a lease");
    }
  }
  return c;
}

// The lease case under measurement, the only leased limiter alive: each
// case is made when the first benchmark that uses it starts, and destroyed
// (its lease returned, its threads stopped) when a benchmark of another
// case starts. Every limiter has a reconciler and a Redis client thread
// that wake each LeaseOptions::tick; with every case alive for the whole
// run, a dozen idle limiters woke about 6,000 times a second (perf stat:
// 8,300 context switches a second), and on 2 cores that CPU came out of
// the measured threads whenever they were as many as the cores.
std::mutex live_mu;
const LeaseCaseSpec* live_spec = nullptr;  // guarded by live_mu
LeaseCase* live_case = nullptr;            // guarded by live_mu

// `spec`'s case, made now unless it is the live one. Any benchmark
// thread, before its timed loop; the first makes it, the others wait.
LeaseCase* LiveLeaseCase(const LeaseCaseSpec* spec) {
  std::lock_guard<std::mutex> lock(live_mu);
  if (live_spec != spec) {
    delete live_case;
    live_case = MakeLeaseCase(*spec).release();
    live_spec = spec;
  }
  return live_case;
}

// Destroys the live case while its Redis is still up.
void StopLiveLeaseCase() {
  std::lock_guard<std::mutex> lock(live_mu);
  delete live_case;
  live_case = nullptr;
  live_spec = nullptr;
}

// Calls `acquire()` once per iteration and reports the admitted fraction.
template <typename F>
void RunLoop(benchmark::State& state, F acquire,
             const char* lease_admit = nullptr) {
  int64_t allowed = 0;
  for (auto _ : state) {
    auto d = acquire();
    if constexpr (std::is_same_v<decltype(d), bool>) {
      benchmark::DoNotOptimize(d);
      allowed += d ? 1 : 0;
    } else {
      // What a caller reads, kept in registers: DoNotOptimize on the whole
      // 32-byte Decision stored it to the stack on every call, four stores
      // that the next decision's locked instruction waited for (the bare
      // fetch_sub it is compared with keeps its result in a register).
      benchmark::DoNotOptimize(d.allowed);
      benchmark::DoNotOptimize(d.remaining);
      allowed += d.allowed ? 1 : 0;
    }
  }
  state.counters["allowed"] = benchmark::Counter(
      static_cast<double>(allowed), benchmark::Counter::kAvgIterations);
  if (lease_admit != nullptr &&
      allowed != static_cast<int64_t>(state.iterations())) {
    state.SetLabel("RAN DRY");
    std::fprintf(stderr,
                 "note: %s ran dry: %lld of %lld calls admitted; the lease "
                 "did not cover the run\n",
                 lease_admit, static_cast<long long>(allowed),
                 static_cast<long long>(state.iterations()));
  }
}

struct LocalCase {
  std::unique_ptr<Limiter> limiter;
  KeyHandle handle;
};

LocalCase* MakeLocalCase(Load load) {
  auto limiter = Limiter::Create(SpecFor(load));
  if (!limiter.ok()) Die(limiter.status().ToString());
  auto* c = new LocalCase{*std::move(limiter), {}};
  auto h = c->limiter->Resolve(kKey);
  if (!h.ok()) Die(h.status().ToString());
  c->handle = *std::move(h);
  if (load == Load::kDeny) c->limiter->TryAcquire(c->handle, 1);
  return c;
}

struct MutexCase {
  explicit MutexCase(Load load)
      : limiter(load == Load::kAdmit ? kHuge : 1,
                load == Load::kAdmit ? absl::Seconds(1) : absl::Hours(1),
                load == Load::kAdmit ? kHuge : 1),
        bucket(limiter.Resolve(kKey)) {
    if (load == Load::kDeny) limiter.TryAcquire(bucket, 1);
  }
  MutexTokenBucketLimiter limiter;
  MutexTokenBucketLimiter::Bucket* bucket;
};

std::string Name(absl::string_view impl, const char* test, Load load) {
  return absl::StrCat(impl, "/", test, "/", LoadName(load));
}

// The lease cases' impl over `t`: "lease" (plaintext), "lease_tls".
std::string LeaseImpl(const Transport& t) {
  return t.name == "tls" ? "lease_tls" : "lease";
}

// Registers `name`: `c`'s key from 1 to 8 threads (wall time), each
// thread deciding through its own copy of the handle (as the header
// advises) with `decide`, which must be always_inline: a call returns the
// 32-byte Decision through memory, and the next decision's locked
// instruction waits for those stores (3.6 ns a decision became 6).
template <typename Decide>
void RegisterOneKeyHandle(const std::string& name, const LeaseCaseSpec* spec,
                          Decide decide) {
  const bool admit = spec->load == Load::kAdmit;
  benchmark::RegisterBenchmark(
      name.c_str(),
      [spec, admit, name, decide](benchmark::State& s) {
        LeaseCase* c = LiveLeaseCase(spec);
        const LeaseHandle h = c->handle;
        RunLoop(
            s, [c, &h, decide] { return decide(*c->limiter, h); },
            admit ? name.c_str() : nullptr);
      })
      ->ThreadRange(1, 8)
      ->UseRealTime();
}

void Register(const std::vector<Transport>& transports, Load load) {
  using benchmark::RegisterBenchmark;
  using benchmark::State;
  const bool admit = load == Load::kAdmit;
  // Single thread through a handle. The lease reads no clock; "now" cases
  // pass the caller's time (a counter), "clock" cases read the clock.
  for (const Transport& t : transports) {
    const auto* c = new LeaseCaseSpec{t, load, 0};
    const std::string handle = Name(LeaseImpl(t), "handle", load);
    RegisterBenchmark(handle.c_str(), [c, admit, handle](State& s) {
      LeaseCase* lc = LiveLeaseCase(c);
      RunLoop(
          s, [lc] { return lc->limiter->TryAcquire(lc->handle); },
          admit ? handle.c_str() : nullptr);
    });
    // The same decision on a key without slices (every thread on the
    // key's balance: one locked fetch_sub).
    const auto* u = new LeaseCaseSpec{t, load, 3, /*sliced=*/false};
    const std::string unsliced = Name(LeaseImpl(t), "handle_unsliced", load);
    RegisterBenchmark(unsliced.c_str(), [u, admit, unsliced](State& s) {
      LeaseCase* lc = LiveLeaseCase(u);
      RunLoop(
          s, [lc] { return lc->limiter->TryAcquire(lc->handle); },
          admit ? unsliced.c_str() : nullptr);
    });
    // The same decision on the same key without counting it
    // (LimiterStats::decisions): the code differs in nothing else, so the
    // ratio to lease/handle is what counting costs.
    const std::string uncounted = Name(LeaseImpl(t), "handle_uncounted", load);
    RegisterBenchmark(uncounted.c_str(), [c, admit, uncounted](State& s) {
      LeaseCase* lc = LiveLeaseCase(c);
      RunLoop(
          s,
          [lc] {
            return tokenlease::internal::LeaseBenchmarkAccess::
                TryAcquireUncounted(*lc->limiter, lc->handle);
          },
          admit ? uncounted.c_str() : nullptr);
    });
  }
  {
    LocalCase* c = MakeLocalCase(load);
    RegisterBenchmark(Name("local", "handle_now", load).c_str(), [c](State& s) {
      int64_t now = absl::GetCurrentTimeNanos();
      RunLoop(
          s, [c, &now] { return c->limiter->TryAcquire(c->handle, 1, now++); });
    });
    RegisterBenchmark(
        Name("local", "handle_clock", load).c_str(), [c](State& s) {
          RunLoop(s, [c] { return c->limiter->TryAcquire(c->handle, 1); });
        });
  }
  {
    auto* c = new MutexCase(load);
    RegisterBenchmark(Name("mutex", "handle_now", load).c_str(), [c](State& s) {
      int64_t now = absl::GetCurrentTimeNanos();
      RunLoop(s,
              [c, &now] { return c->limiter.TryAcquire(c->bucket, 1, now++); });
    });
    RegisterBenchmark(
        Name("mutex", "handle_clock", load).c_str(), [c](State& s) {
          RunLoop(s, [c] { return c->limiter.TryAcquire(c->bucket, 1); });
        });
  }
  // By a 32-byte name (hash lookup).
  {
    for (const Transport& t : transports) {
      const auto* c = new LeaseCaseSpec{t, load, 1};
      const std::string name = Name(LeaseImpl(t), "string", load);
      RegisterBenchmark(name.c_str(), [c, admit, name](State& s) {
        LeaseCase* lc = LiveLeaseCase(c);
        const std::string key = kKey;
        RunLoop(
            s, [lc, &key] { return lc->limiter->TryAcquire(key); },
            admit ? name.c_str() : nullptr);
      });
    }
    LocalCase* l = MakeLocalCase(load);
    RegisterBenchmark(Name("local", "string_now", load).c_str(), [l](State& s) {
      const std::string key = kKey;
      int64_t now = absl::GetCurrentTimeNanos();
      RunLoop(
          s, [l, &key, &now] { return l->limiter->TryAcquire(key, 1, now++); });
    });
    auto* m = new MutexCase(load);
    RegisterBenchmark(Name("mutex", "string_now", load).c_str(), [m](State& s) {
      const std::string key = kKey;
      int64_t now = absl::GetCurrentTimeNanos();
      RunLoop(s,
              [m, &key, &now] { return m->limiter.TryAcquire(key, 1, now++); });
    });
  }
  // One shared key, 1, 2, 4 and 8 threads, wall time (on 2 cores, 4 and 8
  // threads show what oversubscription does). A hot key's lease is spread
  // over per-thread slices (LeaseOptions::slice_threshold).
  {
    for (const Transport& t : transports) {
      const auto* c = new LeaseCaseSpec{t, load, 2};
      RegisterOneKeyHandle(
          Name(LeaseImpl(t), "one_key_handle", load), c,
          [](LeasedLimiter & l, const LeaseHandle& h)
              __attribute__((always_inline)) { return l.TryAcquire(h); });
      RegisterOneKeyHandle(
          Name(LeaseImpl(t), "one_key_handle_uncounted", load), c,
          [](LeasedLimiter & l, const LeaseHandle& h)
              __attribute__((always_inline)) {
                return tokenlease::internal::LeaseBenchmarkAccess::
                    TryAcquireUncounted(l, h);
              });
      const auto* u = new LeaseCaseSpec{t, load, 4, /*sliced=*/false};
      RegisterOneKeyHandle(
          Name(LeaseImpl(t), "one_key_handle_unsliced", load), u,
          [](LeasedLimiter & l, const LeaseHandle& h)
              __attribute__((always_inline)) { return l.TryAcquire(h); });
      // Slices only once several threads decide on the key: one thread
      // decides from the balance (LeaseOptions::slice_single_thread false).
      const auto* lone = new LeaseCaseSpec{t, load, 5, /*sliced=*/true,
                                           /*single_thread=*/false};
      RegisterOneKeyHandle(
          Name(LeaseImpl(t), "one_key_handle_lone_balance", load), lone,
          [](LeasedLimiter & l, const LeaseHandle& h)
              __attribute__((always_inline)) { return l.TryAcquire(h); });
      const std::string by_name = Name(LeaseImpl(t), "one_key_string", load);
      RegisterBenchmark(
          by_name.c_str(),
          [c, admit, by_name](State& s) {
            LeaseCase* lc = LiveLeaseCase(c);
            const std::string key = kKey;
            RunLoop(
                s, [lc, &key] { return lc->limiter->TryAcquire(key); },
                admit ? by_name.c_str() : nullptr);
          })
          ->ThreadRange(1, 8)
          ->UseRealTime();
    }
    LocalCase* l = MakeLocalCase(load);
    RegisterBenchmark(
        Name("local", "one_key_handle_clock", load).c_str(),
        [l](State& s) {
          RunLoop(s, [l] { return l->limiter->TryAcquire(l->handle, 1); });
        })
        ->ThreadRange(1, 8)
        ->UseRealTime();
    auto* m = new MutexCase(load);
    RegisterBenchmark(
        Name("mutex", "one_key_handle_clock", load).c_str(),
        [m](State& s) {
          RunLoop(s, [m] { return m->limiter.TryAcquire(m->bucket, 1); });
        })
        ->ThreadRange(1, 8)
        ->UseRealTime();
    RegisterBenchmark(
        Name("mutex", "one_key_string_clock", load).c_str(),
        [m](State& s) {
          const std::string key = kKey;
          RunLoop(s, [m, &key] { return m->limiter.TryAcquire(key, 1); });
        })
        ->ThreadRange(1, 8)
        ->UseRealTime();
  }
}

// The floor of the leased decision's design: one uncontended locked
// read-modify-write on the key's balance (what the admission does), and the
// plain load that precedes it.
void RegisterReferences() {
  static std::atomic<int64_t>* balance = new std::atomic<int64_t>(kHuge);
  benchmark::RegisterBenchmark("ref/atomic_fetch_sub", [](benchmark::State& s) {
    for (auto _ : s) {
      benchmark::DoNotOptimize(
          balance->fetch_sub(1, std::memory_order_relaxed));
    }
  });
  // The same fetch_sub from 1 to 8 threads on the one atomic: what a hot
  // key without slices would cost at best.
  benchmark::RegisterBenchmark("ref/shared_fetch_sub",
                               [](benchmark::State& s) {
                                 for (auto _ : s) {
                                   benchmark::DoNotOptimize(balance->fetch_sub(
                                       1, std::memory_order_relaxed));
                                 }
                               })
      ->ThreadRange(1, 8)
      ->UseRealTime();
  benchmark::RegisterBenchmark("ref/atomic_load", [](benchmark::State& s) {
    for (auto _ : s) {
      benchmark::DoNotOptimize(balance->load(std::memory_order_relaxed));
    }
  });
  // Work that shares nothing: each thread adds to eight registers of its
  // own, 32 additions a call, with no memory access inside the loop. Its
  // throughput from 1 to 8 threads is what the machine allows
  // independent threads in this run, the ceiling of the hot key's scaling
  // with slices (on a VM, the host's other load moves it: benchmarks.md
  // "Hot key").
  benchmark::RegisterBenchmark(
      "ref/independent_adds",
      [](benchmark::State& s) {
        uint64_t r[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        for (auto _ : s) {
          for (int i = 0; i < 4; ++i) {
            asm volatile(
                "add $1, %0\n\tadd $1, %1\n\tadd $1, %2\n\tadd $1, %3\n\t"
                "add $1, %4\n\tadd $1, %5\n\tadd $1, %6\n\tadd $1, %7"
                : "+r"(r[0]), "+r"(r[1]), "+r"(r[2]), "+r"(r[3]), "+r"(r[4]),
                  "+r"(r[5]), "+r"(r[6]), "+r"(r[7]));
          }
        }
        benchmark::DoNotOptimize(r);
      })
      ->ThreadRange(1, 8)
      ->UseRealTime();
}

}  // namespace
}  // namespace tokenlease_bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // The Redis flags (bench_redis.h); Google Benchmark's were taken above.
  tokenlease_bench::BenchRedisFlags redis_flags;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string error;
    if (!tokenlease_bench::ParseRedisFlag(argv[i], redis_flags, &error)) {
      argv[kept++] = argv[i];
    } else if (!error.empty()) {
      std::fprintf(stderr, "lease_bench: %s\n", error.c_str());
      return 2;
    }
  }
  argc = kept;
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    std::fprintf(stderr, "lease_bench flags: %s\n",
                 tokenlease_bench::kRedisFlagsUsage);
    return 1;
  }
  // Without a URL, a private server, stopped when main returns.
  auto redis = tokenlease_bench::BenchRedis::Start(redis_flags);
  if (!redis.ok()) {
    std::fprintf(stderr, "lease_bench: %s\n",
                 redis.status().ToString().c_str());
    return 1;
  }
  for (const tokenlease_bench::Transport& t : (*redis)->transports()) {
    // The endpoint without credentials (the URL may carry a password).
    tokenlease::RedisOptions redis_options;
    redis_options.url = t.url;
    redis_options.tls = t.tls;
    auto conn = tokenlease::RedisConnection::Create(redis_options);
    if (!conn.ok()) {
      std::fprintf(stderr, "lease_bench: %s\n",
                   conn.status().ToString().c_str());
      return 1;
    }
    benchmark::AddCustomContext(absl::StrCat("redis/", t.name),
                                (*conn)->endpoint());
  }
  benchmark::AddCustomContext(
      "spec/admit", tokenlease::DescribeSpec(tokenlease_bench::SpecFor(
                        tokenlease_bench::Load::kAdmit)));
  benchmark::AddCustomContext(
      "spec/deny", tokenlease::DescribeSpec(tokenlease_bench::SpecFor(
                       tokenlease_bench::Load::kDeny)));
  tokenlease_bench::Register((*redis)->transports(),
                             tokenlease_bench::Load::kAdmit);
  tokenlease_bench::Register((*redis)->transports(),
                             tokenlease_bench::Load::kDeny);
  tokenlease_bench::RegisterReferences();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  tokenlease_bench::StopLiveLeaseCase();
  return 0;
}
