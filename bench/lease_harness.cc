// Accuracy harness for the shared modes (issue 4's acceptance): N instance
// processes with T threads each offer a paced load on one hot key (or on
// Zipf-distributed keys) against one limit shared through Redis, and the
// parent reports what was admitted per window against the limit's bound,
// the decision latency, and what it cost in Redis commands and memory.
//
// Usage (normally through bench/run_lease_harness.sh, which starts a private
// redis-server and passes --url):
//   lease_harness --url=redis://127.0.0.1:PORT --mode=leased|local|direct
//       [--instances=4] [--threads=2] [--limit=10000] [--offered=10*limit]
//       [--seconds=30] [--keys=hot|zipf] [--zipf_keys=100000] [--zipf_s=1.1]
//       [--window_ms=1000] [--csv=PATH] [--use_handle] [--pacing=spin|sleep]
//       [--lease_ttl_ms=1000] [--max_lease_fraction=0.1]
//       [--idle_evict_ms=30000]
//       [--cold_key_policy=deny|wait|local_share] [--live]
//
// Offered load: each thread paces its calls to offered / (N * T) per second
// on an absolute steady_clock schedule, spread evenly over the threads. A
// thread more than 1 ms behind drops the missed calls rather than bursting,
// so the achieved rate is reported next to the target. --pacing=spin (the
// default) busy-waits (sched_yield when the next call is > 20 us away), so
// every load thread holds a core: on a small machine that takes CPU from
// redis-server and the reconcilers. --pacing=sleep sleeps until ~20 us
// before each call instead (timer slack 1 us), to separate the library's
// behaviour from the harness's CPU use. Every --sample_every-th (64th)
// decision of a thread is timed with steady_clock around the call.
//
// CSV (--csv): one row per window and instance plus an "all" row:
// window_start_s, instance, offered, admitted, limit_bound (limit x window,
// the hot key's share of the limit in that window), hot_offered,
// hot_admitted (the hot key, or Zipf rank 0), keys (keys in memory at the
// window's end), rss_kb (current RSS at the window's end),
// redis_commands_total (commands the instance had sent by then,
// cumulative), redis_used_memory (INFO memory, "all" rows only).
//
// The parent forks and execs itself once per instance (--instance=i) and
// talks to each over two pipes: it sends the common start time, the
// instance sends its per-window counts, latency samples and counters when
// it is done. The exit code is 0 whenever the run completed, even if a
// bound was exceeded ("BOUND EXCEEDED" lines say so); 1 if an instance
// failed, 2 on bad flags.
//
// Live mode (--live; the live multi-instance demo): as each window closes,
// each instance sends that window's counts, the latency samples taken in it
// (at most 4096 per instance, evenly thinned) and its Redis commands so
// far ("V" lines), and the parent prints one line per window once every
// instance has sent it: the hot key's admitted rate against the limit, the
// offered rate, latency p50/p99 over all instances, Redis commands per
// second and decisions per command, and each instance's admitted rate. An
// instance sends a window once each of its threads has moved past the
// window's end (or 100 ms after it, so a stuck thread does not hold the
// line back; the end-of-run counts, which the summary uses, are exact
// either way). The summary is printed at the end as without --live.
//
// Ctrl-C (SIGINT) in the parent stops the run early: the parent closes the
// instances' control pipes, each instance stops its threads, sends its
// results as at the end of a run and exits, and the parent prints the
// summary of the windows that ran (the last one partial) and exits 0. The
// instances ignore SIGINT (the terminal sends it to the whole process
// group) and leave the stopping to the parent. A second SIGINT kills the
// instances and exits 130.
//
// Bounds (token bucket, limit L per second, burst B = L, run of D seconds,
// window W):
//   total admitted on the hot key  <= B + L * D
//   admitted in any 1 s            <= L + B + H
// where H is what the instances may hold in leases at the start of the span
// (tokens taken from Redis but not yet spent): each instance holds at most
// M = 2 * max_lease - 1 tokens for unit costs (docs/design.md, "Accuracy
// bound": a grant of at most max_lease = max_lease_fraction * B on top of
// what is left below the low-water mark), so H = N * M for leased mode and
// 0 for local and direct mode. After the first second the bucket's
// burst is spent under overload, so a 1 s span should see about L + H; that
// is printed as information, not checked.
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "redis/endpoint.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"
#include "tokenlease/limiter.h"

namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

// Every --sample_every-th decision of a thread is timed.
constexpr int kDefaultSampleEvery = 64;
// A thread that falls behind its schedule by more than this drops the missed
// calls instead of bursting to catch up (the achieved rate is reported).
constexpr int64_t kMaxLagNs = 1'000'000;

struct Flags {
  std::string mode = "leased";
  int instances = 4;
  int threads = 2;
  int64_t limit = 10000;
  double offered = -1;  // default: 10 * limit
  double seconds = 30;
  std::string keys = "hot";
  int zipf_keys = 100000;
  double zipf_s = 1.1;
  int window_ms = 1000;
  std::string csv;
  std::string url;
  bool use_handle = false;
  bool pacing_sleep = false;  // --pacing=sleep (default spin)
  int sample_every = kDefaultSampleEvery;
  int lease_ttl_ms = 1000;
  int idle_evict_ms = 30000;  // LeaseOptions::idle_evict (>= 2 x lease_ttl)
  double max_lease_fraction = 0.1;
  std::string cold_key_policy = "deny";
  bool live = false;  // --live: one line per window as it closes
  // Internal (parent -> instance).
  int instance = -1;
  int ctl_fd = -1;
  int data_fd = -1;
  std::string prefix;
};

void Usage() {
  std::fprintf(
      stderr,
      "usage: lease_harness --url=redis://127.0.0.1:PORT "
      "[--mode=leased|local|direct]\n"
      "  [--instances=4] [--threads=2] [--limit=10000] [--offered=10*limit]\n"
      "  [--seconds=30] [--keys=hot|zipf] [--zipf_keys=100000] "
      "[--zipf_s=1.1]\n"
      "  [--window_ms=1000] [--csv=PATH] [--use_handle] "
      "[--sample_every=64] [--pacing=spin|sleep]\n"
      "  [--lease_ttl_ms=1000] [--max_lease_fraction=0.1]\n"
      "  [--idle_evict_ms=30000]\n"
      "  [--cold_key_policy=deny|wait|local_share] [--live]\n"
      "(bench/run_lease_harness.sh starts a private redis-server and passes "
      "--url)\n");
}

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    auto val = [&](absl::string_view name, absl::string_view& out) {
      absl::string_view x = a;
      if (!absl::ConsumePrefix(&x, name) || !absl::ConsumePrefix(&x, "=")) {
        return false;
      }
      out = x;
      return true;
    };
    absl::string_view v;
    bool ok = true;
    if (val("--mode", v)) {
      f.mode = std::string(v);
    } else if (val("--instances", v)) {
      ok = absl::SimpleAtoi(v, &f.instances);
    } else if (val("--threads", v)) {
      ok = absl::SimpleAtoi(v, &f.threads);
    } else if (val("--limit", v)) {
      ok = absl::SimpleAtoi(v, &f.limit);
    } else if (val("--offered", v)) {
      ok = absl::SimpleAtod(v, &f.offered);
    } else if (val("--seconds", v)) {
      ok = absl::SimpleAtod(v, &f.seconds);
    } else if (val("--keys", v)) {
      f.keys = std::string(v);
    } else if (val("--zipf_keys", v)) {
      ok = absl::SimpleAtoi(v, &f.zipf_keys);
    } else if (val("--zipf_s", v)) {
      ok = absl::SimpleAtod(v, &f.zipf_s);
    } else if (val("--window_ms", v)) {
      ok = absl::SimpleAtoi(v, &f.window_ms);
    } else if (val("--csv", v)) {
      f.csv = std::string(v);
    } else if (val("--url", v)) {
      f.url = std::string(v);
    } else if (val("--pacing", v)) {
      ok = v == "spin" || v == "sleep";
      f.pacing_sleep = v == "sleep";
    } else if (a == "--use_handle") {
      f.use_handle = true;
    } else if (a == "--live") {
      f.live = true;
    } else if (val("--sample_every", v)) {
      ok = absl::SimpleAtoi(v, &f.sample_every);
    } else if (val("--lease_ttl_ms", v)) {
      ok = absl::SimpleAtoi(v, &f.lease_ttl_ms);
    } else if (val("--idle_evict_ms", v)) {
      ok = absl::SimpleAtoi(v, &f.idle_evict_ms);
    } else if (val("--max_lease_fraction", v)) {
      ok = absl::SimpleAtod(v, &f.max_lease_fraction);
    } else if (val("--cold_key_policy", v)) {
      f.cold_key_policy = std::string(v);
    } else if (val("--instance", v)) {
      ok = absl::SimpleAtoi(v, &f.instance);
    } else if (val("--ctl_fd", v)) {
      ok = absl::SimpleAtoi(v, &f.ctl_fd);
    } else if (val("--data_fd", v)) {
      ok = absl::SimpleAtoi(v, &f.data_fd);
    } else if (val("--prefix", v)) {
      f.prefix = std::string(v);
    } else {
      std::fprintf(stderr, "unknown flag '%s'\n", argv[i]);
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad value in '%s'\n", argv[i]);
      return false;
    }
  }
  if (f.offered < 0) f.offered = 10.0 * static_cast<double>(f.limit);
  const char* bad = nullptr;
  if (f.mode != "leased" && f.mode != "local" && f.mode != "direct") {
    bad = "--mode must be leased, local or direct";
  } else if (f.keys != "hot" && f.keys != "zipf") {
    bad = "--keys must be hot or zipf";
  } else if (f.instances < 1 || f.instances > 64) {
    bad = "--instances must be 1..64";
  } else if (f.threads < 1 || f.threads > 64) {
    bad = "--threads must be 1..64";
  } else if (f.limit < f.instances) {
    bad = "--limit must be at least --instances";
  } else if (!(f.offered > 0)) {
    bad = "--offered must be > 0";
  } else if (!(f.seconds > 0) || f.seconds > 3600) {
    bad = "--seconds must be in (0, 3600]";
  } else if (f.window_ms < 1 || f.window_ms > 60000) {
    bad = "--window_ms must be 1..60000";
  } else if (f.zipf_keys < 1 || f.zipf_keys > 100'000'000) {
    bad = "--zipf_keys must be 1..1e8";
  } else if (!(f.zipf_s > 0)) {
    bad = "--zipf_s must be > 0";
  } else if (f.sample_every < 1) {
    bad = "--sample_every must be >= 1";
  } else if (f.mode != "local" && f.url.empty()) {
    bad = "--url is required for leased and direct mode";
  } else if (f.cold_key_policy != "deny" && f.cold_key_policy != "wait" &&
             f.cold_key_policy != "local_share") {
    bad = "--cold_key_policy must be deny, wait or local_share";
  }
  if (bad != nullptr) {
    std::fprintf(stderr, "%s\n", bad);
    return false;
  }
  return true;
}

int64_t NumWindows(const Flags& f) {
  return static_cast<int64_t>(
      std::ceil(f.seconds * 1000.0 / static_cast<double>(f.window_ms) - 1e-9));
}

int64_t WindowNs(const Flags& f) { return int64_t{f.window_ms} * 1'000'000; }

tokenlease::LeaseOptions MakeLeaseOptions(const Flags& f) {
  tokenlease::LeaseOptions o;
  o.lease_ttl = absl::Milliseconds(f.lease_ttl_ms);
  o.min_batch = std::min(o.min_batch, o.lease_ttl);
  o.idle_evict = std::max(absl::Milliseconds(f.idle_evict_ms), 2 * o.lease_ttl);
  o.max_lease_fraction = f.max_lease_fraction;
  if (f.cold_key_policy == "wait") {
    o.cold_key_policy = tokenlease::ColdKeyPolicy::kWait;
  } else if (f.cold_key_policy == "local_share") {
    o.cold_key_policy = tokenlease::ColdKeyPolicy::kLocalShare;
  }
  return o;
}

int64_t MaxLease(const Flags& f) {
  return std::max<int64_t>(1,
                           static_cast<int64_t>(f.max_lease_fraction *
                                                static_cast<double>(f.limit)));
}

// ---------------------------------------------------------------------------
// Instance process.

// Current resident set size in KiB (/proc/self/statm).
int64_t CurrentRssKb() {
  FILE* fp = std::fopen("/proc/self/statm", "r");
  if (fp == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(fp, "%ld %ld", &size, &resident);
  std::fclose(fp);
  if (n != 2) return -1;
  return static_cast<int64_t>(resident) * (sysconf(_SC_PAGESIZE) / 1024);
}

int64_t PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Keys and the Zipf CDF, built once per process.
struct KeySet {
  std::vector<std::string> names;
  std::vector<double> cdf;  // cumulative, not normalised; empty for "hot"

  size_t Draw(std::mt19937_64& rng) const {
    if (cdf.empty()) return 0;
    const double u = std::uniform_real_distribution<double>(0, cdf.back())(rng);
    const size_t i = static_cast<size_t>(
        std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    return std::min(i, cdf.size() - 1);
  }
};

KeySet MakeKeys(const Flags& f) {
  KeySet k;
  if (f.keys == "hot") {
    k.names.push_back("hot");
    return k;
  }
  k.names.reserve(f.zipf_keys);
  k.cdf.reserve(f.zipf_keys);
  double sum = 0;
  for (int i = 0; i < f.zipf_keys; ++i) {
    k.names.push_back(absl::StrFormat("user:%08d", i));
    sum += std::pow(static_cast<double>(i + 1), -f.zipf_s);
    k.cdf.push_back(sum);
  }
  return k;
}

// The probability of Zipf rank 0 (the hot key in zipf mode).
double ZipfP0(const Flags& f) {
  if (f.keys == "hot") return 1.0;
  double sum = 0;
  for (int i = 0; i < f.zipf_keys; ++i) {
    sum += std::pow(static_cast<double>(i + 1), -f.zipf_s);
  }
  return 1.0 / sum;
}

// The per-window counters and the progress mark are written by their thread
// only, through atomic_ref (relaxed: plain loads and stores on x86), so the
// instance's monitor can read them while the thread runs (--live).
int64_t LoadRelaxed(int64_t& x) {
  return std::atomic_ref<int64_t>(x).load(std::memory_order_relaxed);
}
void Bump(int64_t& x) {
  std::atomic_ref<int64_t>(x).store(LoadRelaxed(x) + 1,
                                    std::memory_order_relaxed);
}

// What each thread counts. Only its own thread writes it; the per-window
// counts and progress_ns may be read while it runs (see Bump), the rest
// after join.
struct alignas(64) ThreadResult {
  std::vector<int64_t> offered, admitted, hot_offered, hot_admitted;
  std::vector<int64_t> latency_ns;
  int64_t errors = 0;
  int64_t first_ns = 0, last_ns = 0;
  // --live: a steady_clock time such that every decision the thread will
  // still count is at or after it (INT64_MAX once the thread has ended).
  // Published with release order after the counts it covers.
  int64_t progress_ns = 0;
};

// --live: the latency samples a thread took since the monitor last looked,
// with their window.
struct LiveLatency {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> samples;  // (window, ns)
};

// The value of `v`, or exits after printing what failed.
template <typename T>
T OrDie(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "lease_harness: %s: %s\n", what,
                 v.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(v);
}

// The decision maker of one instance, whatever the mode.
class Target {
 public:
  virtual ~Target() = default;
  // Returns 1 admitted, 0 denied, -1 error.
  virtual int Decide(size_t key_index) = 0;
  virtual int64_t Keys() = 0;
  virtual int64_t CommandsSent() = 0;
  virtual std::string FinalStats() = 0;  // "C ..." line, after Stop()
  virtual void Stop() = 0;
};

class LocalTarget : public Target {
 public:
  LocalTarget(const Flags& f, const KeySet& keys) : keys_(keys) {
    const int64_t per = f.limit / f.instances;
    limiter_ =
        OrDie(tokenlease::Limiter::Create(tokenlease::LimitSpec::TokenBucket(
                  per, absl::Seconds(1), per)),
              "Limiter::Create");
    if (f.use_handle) {
      handle_ = OrDie(limiter_->Resolve(keys.names[0]), "Resolve");
    }
  }
  int Decide(size_t i) override {
    if (i == 0 && handle_.valid()) {
      return limiter_->TryAcquire(handle_, 1).allowed ? 1 : 0;
    }
    return limiter_->TryAcquire(keys_.names[i], 1).allowed ? 1 : 0;
  }
  int64_t Keys() override { return limiter_->key_count(); }
  int64_t CommandsSent() override { return 0; }
  std::string FinalStats() override { return "C 0 0 0 0 0 0 0 0 0 0 0\n"; }
  void Stop() override {
    handle_ = tokenlease::KeyHandle();
    keys_at_stop_ = limiter_->key_count();
  }

 private:
  const KeySet& keys_;
  std::unique_ptr<tokenlease::Limiter> limiter_;
  tokenlease::KeyHandle handle_;
  int64_t keys_at_stop_ = 0;
};

class LeasedTarget : public Target {
 public:
  LeasedTarget(const Flags& f, const KeySet& keys) : keys_(keys) {
    tokenlease::RedisOptions redis;
    redis.url = f.url;
    connection_ = OrDie(tokenlease::RedisConnection::Create(redis),
                        "RedisConnection::Create");
    tokenlease::LeasedLimiterOptions options;
    options.connection = connection_;
    options.key_prefix = f.prefix;
    options.lease = MakeLeaseOptions(f);
    limiter_ =
        OrDie(tokenlease::LeasedLimiter::Create(
                  tokenlease::LimitSpec::TokenBucket(f.limit, absl::Seconds(1)),
                  options),
              "LeasedLimiter::Create");
    if (f.use_handle) {
      handle_ = OrDie(limiter_->Resolve(keys.names[0]), "Resolve");
    }
  }
  int Decide(size_t i) override {
    if (i == 0 && handle_.valid()) {
      return limiter_->TryAcquire(handle_, 1).allowed ? 1 : 0;
    }
    return limiter_->TryAcquire(keys_.names[i], 1).allowed ? 1 : 0;
  }
  int64_t Keys() override {
    return static_cast<int64_t>(limiter_->stats().keys);
  }
  int64_t CommandsSent() override {
    return static_cast<int64_t>(connection_->stats().commands_sent);
  }
  void Stop() override {
    // Counters as the run ended, then the destructor returns every lease.
    before_ = limiter_->stats();
    handle_ = tokenlease::LeaseHandle();
    limiter_.reset();
  }
  std::string FinalStats() override {
    // Lease counters as the run ended; connection counters after the
    // shutdown's returns.
    const tokenlease::RedisStats r = connection_->stats();
    const tokenlease::LeaseStats& s = before_;
    return absl::StrCat(
        "C ", r.commands_sent, " ", r.replies, " ", s.lease_requests, " ",
        s.tokens_granted, " ", s.tokens_returned, " ", s.denied_by_redis, " ",
        s.charges, " ", s.tokens_charged, " ", s.redis_errors, " ", s.keys, " ",
        r.flushes, " ", s.redis.commands_sent, " ", r.timeouts, "\n");
  }

 private:
  const KeySet& keys_;
  std::shared_ptr<tokenlease::RedisConnection> connection_;
  std::unique_ptr<tokenlease::LeasedLimiter> limiter_;
  tokenlease::LeaseHandle handle_;
  tokenlease::LeaseStats before_;
};

class DirectTarget : public Target {
 public:
  DirectTarget(const Flags& f, const KeySet& keys) : keys_(keys) {
    tokenlease::DirectLimiterOptions options;
    options.redis.url = f.url;
    options.redis.command_timeout = absl::Seconds(2);
    options.key_prefix = f.prefix;
    limiter_ =
        OrDie(tokenlease::DirectLimiter::Create(
                  tokenlease::LimitSpec::TokenBucket(f.limit, absl::Seconds(1)),
                  options),
              "DirectLimiter::Create");
  }
  int Decide(size_t i) override {
    auto d = limiter_->TryAcquire(keys_.names[i], 1);
    if (!d.ok()) return -1;
    return d->allowed ? 1 : 0;
  }
  int64_t Keys() override { return 0; }
  int64_t CommandsSent() override {
    return static_cast<int64_t>(limiter_->connection().stats().commands_sent);
  }
  void Stop() override { stats_ = limiter_->connection().stats(); }
  std::string FinalStats() override {
    return absl::StrCat("C ", stats_.commands_sent, " ", stats_.replies,
                        " 0 0 0 0 0 0 0 0 ", stats_.flushes, " ",
                        stats_.commands_sent, " ", stats_.timeouts, "\n");
  }

 private:
  const KeySet& keys_;
  std::unique_ptr<tokenlease::DirectLimiter> limiter_;
  tokenlease::RedisStats stats_;
};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void RunThread(const Flags& f, int t, const KeySet& keys, Target& target,
               int64_t start_ns, const std::atomic<bool>& stop,
               LiveLatency* live, ThreadResult& r) {
  const int64_t nwin = NumWindows(f);
  const int64_t window_ns = WindowNs(f);
  const int64_t end_ns = start_ns + static_cast<int64_t>(f.seconds * 1e9 + 0.5);
  // r's per-window vectors were sized before the thread started.
  const int total_threads = f.instances * f.threads;
  const double rate = f.offered / total_threads;  // per thread, per second
  const double interval = 1e9 / rate;
  r.latency_ns.reserve(
      static_cast<size_t>(rate * f.seconds / f.sample_every * 1.1) + 16);
  std::mt19937_64 rng(static_cast<uint64_t>(f.instance) * 1000003 + t + 1);
  // Threads are spread evenly over one interval.
  const int global = f.instance * f.threads + t;
  double next = static_cast<double>(start_ns) +
                interval * global / static_cast<double>(total_threads);
  int64_t calls = 0;
  r.first_ns = 0;
  std::atomic_ref<int64_t> progress(r.progress_ns);
  for (;;) {
    int64_t now = SteadyNs();
    if (live != nullptr) progress.store(now, std::memory_order_release);
    if (now >= end_ns || stop.load(std::memory_order_relaxed)) break;
    if (static_cast<double>(now) < next) {
      // Busy-wait, yielding the core to Redis and the reconciler when the
      // next call is more than 20 us away (2 cores, 8+ spinning threads).
      const double gap = next - static_cast<double>(now);
      if (f.pacing_sleep && gap > 30'000) {
        // --pacing=sleep: give the core away; the absolute schedule makes
        // up for the wake-up delay (within kMaxLagNs).
        std::this_thread::sleep_for(
            std::chrono::nanoseconds(static_cast<int64_t>(gap) - 20'000));
      } else if (gap > 20'000) {
        sched_yield();
      } else {
        CpuRelax();
      }
      continue;
    }
    if (static_cast<double>(now) - next > kMaxLagNs) {
      next = static_cast<double>(now);
    }
    next += interval;
    const size_t k = keys.Draw(rng);
    int res;
    int64_t sample = -1;
    if (calls % f.sample_every == 0) {
      const int64_t a = SteadyNs();
      res = target.Decide(k);
      const int64_t b = SteadyNs();
      sample = b - a;
      r.latency_ns.push_back(sample);
      now = b;
    } else {
      res = target.Decide(k);
    }
    ++calls;
    if (r.first_ns == 0) r.first_ns = now;
    r.last_ns = now;
    const int64_t w =
        std::clamp<int64_t>((now - start_ns) / window_ns, 0, nwin - 1);
    Bump(r.offered[w]);
    if (res < 0) ++r.errors;
    if (res > 0) Bump(r.admitted[w]);
    if (k == 0) {
      Bump(r.hot_offered[w]);
      if (res > 0) Bump(r.hot_admitted[w]);
    }
    if (live != nullptr && sample >= 0) {
      std::lock_guard<std::mutex> lock(live->mu);
      live->samples.emplace_back(w, sample);
    }
  }
  if (live != nullptr) {
    progress.store(std::numeric_limits<int64_t>::max(),
                   std::memory_order_release);
  }
}

// Waits until steady_clock time `at`; false early if the parent closed the
// control pipe (its stop request; also EOF if the parent died).
bool WaitUntilOrStop(int ctl_fd, int64_t at) {
  for (;;) {
    const int64_t left = at - SteadyNs();
    if (left <= 0) return true;
    const timespec ts{static_cast<time_t>(left / 1'000'000'000),
                      static_cast<long>(left % 1'000'000'000)};
    pollfd p{ctl_fd, POLLIN, 0};
    const int n = ppoll(&p, 1, &ts, nullptr);
    if (n > 0) return false;
    if (n < 0 && errno != EINTR) {
      // Cannot watch the pipe: sleep instead (the parent can still kill us).
      std::this_thread::sleep_for(std::chrono::nanoseconds(left));
      return true;
    }
  }
}

// --live: once every thread has moved past `at` (the end of window w; at
// most 100 ms after it), the window's counts over the threads, its latency
// samples (at most kMaxLiveSamples, evenly thinned) and the commands sent.
constexpr size_t kMaxLiveSamples = 4096;

std::string LiveLine(int64_t w, int64_t at, int64_t keys, int64_t rss_kb,
                     int64_t commands, int64_t commands_in_window,
                     std::vector<ThreadResult>& results,
                     std::vector<LiveLatency>& live) {
  const int64_t give_up = at + 100'000'000;
  for (;;) {
    bool passed = true;
    for (ThreadResult& r : results) {
      passed &= std::atomic_ref<int64_t>(r.progress_ns)
                    .load(std::memory_order_acquire) >= at;
    }
    if (passed || SteadyNs() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  int64_t o = 0, a = 0, ho = 0, ha = 0;
  for (ThreadResult& r : results) {
    o += LoadRelaxed(r.offered[w]);
    a += LoadRelaxed(r.admitted[w]);
    ho += LoadRelaxed(r.hot_offered[w]);
    ha += LoadRelaxed(r.hot_admitted[w]);
  }
  std::vector<int64_t> lat;
  for (LiveLatency& l : live) {
    std::lock_guard<std::mutex> lock(l.mu);
    size_t keep = 0;
    for (const auto& [sw, ns] : l.samples) {
      if (sw == w) {
        lat.push_back(ns);
      } else if (sw > w) {
        l.samples[keep++] = {sw, ns};  // the next window's
      }                                // older ones came too late to be sent
    }
    l.samples.resize(keep);
  }
  std::string out =
      absl::StrCat("V ", w, " ", o, " ", a, " ", ho, " ", ha, " ", commands,
                   " ", commands_in_window, " ", keys, " ", rss_kb, " ");
  const size_t step = (lat.size() + kMaxLiveSamples - 1) / kMaxLiveSamples;
  absl::StrAppend(&out, step > 0 ? (lat.size() + step - 1) / step : 0);
  for (size_t i = 0; step > 0 && i < lat.size(); i += step) {
    absl::StrAppend(&out, " ", lat[i]);
  }
  out += "\n";
  return out;
}

int RunInstance(const Flags& f) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // Ctrl-C reaches the whole process group; the parent decides what to do
  // and tells the instances by closing their control pipes. The parent
  // forked this process with SIGINT blocked, so none got through before
  // this.
  signal(SIGINT, SIG_IGN);
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  sigprocmask(SIG_UNBLOCK, &sigint, nullptr);
  if (f.pacing_sleep) prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us
  if (getppid() == 1) return 1;
  const KeySet keys = MakeKeys(f);
  std::unique_ptr<Target> target;
  if (f.mode == "local") {
    target = std::make_unique<LocalTarget>(f, keys);
  } else if (f.mode == "leased") {
    target = std::make_unique<LeasedTarget>(f, keys);
  } else {
    target = std::make_unique<DirectTarget>(f, keys);
  }
  if (!WriteAll(f.data_fd, "R\n")) return 1;
  // The parent answers with the common start time (steady clock, ns).
  std::string line;
  char c;
  while (read(f.ctl_fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  int64_t start_ns = 0;
  if (!absl::SimpleAtoi(line, &start_ns)) {
    std::fprintf(stderr, "instance %d: no start time from the parent\n",
                 f.instance);
    return 1;
  }

  const int64_t nwin = NumWindows(f);
  std::vector<ThreadResult> results(f.threads);
  for (ThreadResult& r : results) {
    r.offered.assign(nwin, 0);
    r.admitted.assign(nwin, 0);
    r.hot_offered.assign(nwin, 0);
    r.hot_admitted.assign(nwin, 0);
  }
  std::vector<LiveLatency> live(f.live ? f.threads : 0);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  int64_t commands_before = target->CommandsSent();
  for (int t = 0; t < f.threads; ++t) {
    threads.emplace_back([&, t] {
      RunThread(f, t, keys, *target, start_ns, stop,
                f.live ? &live[t] : nullptr, results[t]);
    });
  }
  // Monitor: keys in memory, RSS and commands sent at each window's end
  // (and with --live the window's counts, sent at once). Stops early when
  // the parent closes the control pipe.
  std::string samples;
  int64_t win = 0;
  for (; win < nwin; ++win) {
    const int64_t at = start_ns + (win + 1) * WindowNs(f);
    if (!WaitUntilOrStop(f.ctl_fd, at)) {
      stop.store(true, std::memory_order_relaxed);
      break;
    }
    const int64_t k = target->Keys(), rss = CurrentRssKb(),
                  commands = target->CommandsSent();
    absl::StrAppend(&samples, "S ", win, " ", k, " ", rss, " ", commands, "\n");
    if (f.live) {
      const std::string v = LiveLine(win, at, k, rss, commands,
                                     commands - commands_before, results, live);
      commands_before = commands;
      if (!WriteAll(f.data_fd, v)) {
        stop.store(true, std::memory_order_relaxed);
        win = nwin;
        break;
      }
    }
  }
  for (std::thread& th : threads) th.join();
  if (win < nwin) {
    // Stopped early: the partial window's sample, at the stop.
    absl::StrAppend(&samples, "S ", win, " ", target->Keys(), " ",
                    CurrentRssKb(), " ", target->CommandsSent(), "\n");
  }
  target->Stop();

  std::string out = samples;
  int64_t first = 0, last = 0, errors = 0;
  for (int64_t w = 0; w < nwin; ++w) {
    int64_t o = 0, a = 0, ho = 0, ha = 0;
    for (const ThreadResult& r : results) {
      o += r.offered[w];
      a += r.admitted[w];
      ho += r.hot_offered[w];
      ha += r.hot_admitted[w];
    }
    absl::StrAppend(&out, "W ", w, " ", o, " ", a, " ", ho, " ", ha, "\n");
  }
  for (const ThreadResult& r : results) {
    if (r.first_ns != 0 && (first == 0 || r.first_ns < first)) {
      first = r.first_ns;
    }
    last = std::max(last, r.last_ns);
    errors += r.errors;
    for (size_t i = 0; i < r.latency_ns.size(); i += 1000) {
      out += "L";
      for (size_t j = i; j < std::min(r.latency_ns.size(), i + 1000); ++j) {
        absl::StrAppend(&out, " ", r.latency_ns[j]);
      }
      out += "\n";
    }
  }
  absl::StrAppend(&out, "T ", first, " ", last, " ", errors, " ", PeakRssKb(),
                  "\n");
  out += target->FinalStats();
  out += "E\n";
  target.reset();
  if (!WriteAll(f.data_fd, out)) return 1;
  close(f.data_fd);
  return 0;
}

// ---------------------------------------------------------------------------
// Parent process.

struct WindowCounts {
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  int64_t keys = -1, rss_kb = -1, commands = -1;  // sampled at the end
};

struct FinalStats {
  int64_t commands_sent = 0, replies = 0, lease_requests = 0,
          tokens_granted = 0, tokens_returned = 0, denied_by_redis = 0,
          charges = 0, tokens_charged = 0, redis_errors = 0, keys = 0,
          flushes = 0, commands_at_end_of_run = 0, timeouts = 0;
};

// --live: one instance's counts of one window, as it closed ("V" line).
struct LiveWindow {
  bool got = false;
  int64_t offered = 0, admitted = 0, hot_offered = 0, hot_admitted = 0;
  int64_t commands = 0, commands_in_window = 0, keys = 0, rss_kb = 0;
  std::vector<int64_t> latency;  // this window's samples (maybe thinned)
};

struct Child {
  pid_t pid = -1;
  int ctl_fd = -1;   // parent writes
  int data_fd = -1;  // parent reads
  std::string buf;
  bool ready = false;
  bool done = false;  // "E" seen
  bool eof = false;
  std::vector<WindowCounts> windows;
  std::vector<LiveWindow> live;  // --live
  std::vector<int64_t> latency;
  int64_t first_ns = 0, last_ns = 0, errors = 0, peak_rss_kb = 0;
  FinalStats stats;
};

void HandleLine(Child& c, const std::string& line) {
  std::vector<absl::string_view> p =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (p.empty()) return;
  auto I = [&](size_t i) {
    int64_t v = 0;
    if (i < p.size()) (void)absl::SimpleAtoi(p[i], &v);
    return v;
  };
  if (p[0] == "R") {
    c.ready = true;
  } else if (p[0] == "E") {
    c.done = true;
  } else if (p[0] == "W" || p[0] == "S") {
    const int64_t w = I(1);
    if (w < 0 || w >= static_cast<int64_t>(c.windows.size())) return;
    WindowCounts& wc = c.windows[w];
    if (p[0] == "W") {
      wc.offered = I(2);
      wc.admitted = I(3);
      wc.hot_offered = I(4);
      wc.hot_admitted = I(5);
    } else {
      wc.keys = I(2);
      wc.rss_kb = I(3);
      wc.commands = I(4);
    }
  } else if (p[0] == "V") {
    const int64_t w = I(1);
    if (w < 0 || w >= static_cast<int64_t>(c.live.size())) return;
    LiveWindow& lw = c.live[w];
    lw.got = true;
    lw.offered = I(2);
    lw.admitted = I(3);
    lw.hot_offered = I(4);
    lw.hot_admitted = I(5);
    lw.commands = I(6);
    lw.commands_in_window = I(7);
    lw.keys = I(8);
    lw.rss_kb = I(9);
    const int64_t n = std::min<int64_t>(I(10), p.size() - 11);
    lw.latency.clear();
    for (int64_t i = 0; i < n; ++i) lw.latency.push_back(I(11 + i));
  } else if (p[0] == "L") {
    for (size_t i = 1; i < p.size(); ++i) c.latency.push_back(I(i));
  } else if (p[0] == "T") {
    c.first_ns = I(1);
    c.last_ns = I(2);
    c.errors = I(3);
    c.peak_rss_kb = I(4);
  } else if (p[0] == "C") {
    FinalStats& s = c.stats;
    s.commands_sent = I(1);
    s.replies = I(2);
    s.lease_requests = I(3);
    s.tokens_granted = I(4);
    s.tokens_returned = I(5);
    s.denied_by_redis = I(6);
    s.charges = I(7);
    s.tokens_charged = I(8);
    s.redis_errors = I(9);
    s.keys = I(10);
    s.flushes = I(11);
    s.commands_at_end_of_run = I(12);
    s.timeouts = I(13);
  }
}

// Reads what is available on the child's pipe; false at EOF.
bool ReadChild(Child& c) {
  char buf[65536];
  const ssize_t n = read(c.data_fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    c.eof = true;
    return false;
  }
  c.buf.append(buf, static_cast<size_t>(n));
  size_t pos;
  while ((pos = c.buf.find('\n')) != std::string::npos) {
    HandleLine(c, c.buf.substr(0, pos));
    c.buf.erase(0, pos + 1);
  }
  return true;
}

// A synchronous hiredis connection of the parent (INFO, CONFIG RESETSTAT).
class RedisProbe {
 public:
  explicit RedisProbe(const std::string& url) {
    if (url.empty()) return;
    auto ep = tokenlease::internal::ParseRedisUrl(url);
    if (!ep.ok()) return;
    timeval tv{2, 0};
    ctx_ = ep->socket_path.empty()
               ? redisConnectWithTimeout(ep->host.c_str(), ep->port, tv)
               : redisConnectUnixWithTimeout(ep->socket_path.c_str(), tv);
    if (ctx_ != nullptr && ctx_->err) {
      redisFree(ctx_);
      ctx_ = nullptr;
    }
  }
  ~RedisProbe() {
    if (ctx_ != nullptr) redisFree(ctx_);
  }
  bool ok() const { return ctx_ != nullptr; }
  std::string Command(const char* cmd) {
    if (ctx_ == nullptr) return "";
    auto* r = static_cast<redisReply*>(redisCommand(ctx_, cmd));
    if (r == nullptr) return "";
    std::string s = r->str != nullptr ? std::string(r->str, r->len) : "";
    freeReplyObject(r);
    return s;
  }
  int64_t Integer(const char* cmd) {
    if (ctx_ == nullptr) return -1;
    auto* r = static_cast<redisReply*>(redisCommand(ctx_, cmd));
    if (r == nullptr) return -1;
    const int64_t v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return v;
  }
  // A numeric field "name:value" of an INFO section; -1 if absent.
  int64_t InfoField(const char* section, const char* name) {
    const std::string info = Command(absl::StrCat("INFO ", section).c_str());
    const std::string key = absl::StrCat(name, ":");
    for (absl::string_view l : absl::StrSplit(info, "\r\n")) {
      if (absl::ConsumePrefix(&l, key)) {
        int64_t v = 0;
        if (absl::SimpleAtoi(l, &v)) return v;
      }
    }
    return -1;
  }
  // calls= of cmdstat_<cmd> in INFO commandstats; 0 if absent.
  int64_t CommandCalls(const char* cmd) {
    const std::string info = Command("INFO commandstats");
    const std::string key = absl::StrCat("cmdstat_", cmd, ":calls=");
    for (absl::string_view l : absl::StrSplit(info, "\r\n")) {
      if (absl::ConsumePrefix(&l, key)) {
        int64_t v = 0;
        const size_t comma = l.find(',');
        if (absl::SimpleAtoi(l.substr(0, comma), &v)) return v;
      }
    }
    return 0;
  }

 private:
  redisContext* ctx_ = nullptr;
};

int64_t Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(
      sorted.size() - 1,
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) -
          (q > 0 ? 1 : 0));
  return sorted[i];
}

void KillAll(std::vector<Child>& children) {
  for (Child& c : children) {
    if (c.pid > 0) kill(c.pid, SIGTERM);
  }
  for (Child& c : children) {
    if (c.pid > 0) waitpid(c.pid, nullptr, 0);
    c.pid = -1;
  }
}

std::string Fmt(double v) { return absl::StrFormat("%.0f", v); }

// 1234567 -> "1,234,567".
std::string Commas(int64_t v) {
  std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// A latency for a narrow column: "240ns", "23.9us", "1.2ms".
std::string ShortNs(int64_t ns) {
  if (ns < 1'000) return absl::StrCat(ns, "ns");
  if (ns < 1'000'000) return absl::StrFormat("%.1fus", ns / 1e3);
  return absl::StrFormat("%.1fms", ns / 1e6);
}

// --live output: one line per window, at most kLiveColumns wide.
constexpr size_t kLiveColumns = 100;

std::string LiveRow(const std::string& t, const std::string& admitted,
                    const std::string& pct, const std::string& offered,
                    const std::string& p50, const std::string& p99,
                    const std::string& redis, const std::string& per_cmd,
                    bool with_redis) {
  return with_redis ? absl::StrFormat("%6s%12s%8s%12s%9s%9s%9s%9s", t, admitted,
                                      pct, offered, p50, p99, redis, per_cmd)
                    : absl::StrFormat("%6s%12s%8s%12s%9s%9s", t, admitted, pct,
                                      offered, p50, p99);
}

void PrintLiveHeader(const Flags& f) {
  const bool redis = f.mode != "local";
  std::printf(
      "live: a line per %g s window as it closes; admitted = %s, %%limit = "
      "of %s/s\n",
      f.window_ms / 1000.0, f.keys == "hot" ? "the hot key" : "hottest key",
      Commas(f.limit).c_str());
  std::printf("%s  per instance\n",
              LiveRow("t", "admitted/s", "%limit", "offered/s", "p50", "p99",
                      redis ? "redis/s" : "", redis ? "dec/cmd" : "", redis)
                  .c_str());
  std::fflush(stdout);
}

// Prints the windows every instance has sent, in order, from *next on.
void PrintLive(const Flags& f, std::vector<Child>& children, int64_t* next) {
  const int64_t nwin = NumWindows(f);
  const bool redis = f.mode != "local";
  const int64_t run_ns = static_cast<int64_t>(f.seconds * 1e9 + 0.5);
  for (; *next < nwin; ++*next) {
    const int64_t w = *next;
    for (const Child& c : children) {
      if (!c.live[w].got) return;
    }
    // The last window may be shorter than --window_ms.
    const double len =
        static_cast<double>(std::min(WindowNs(f), run_ns - w * WindowNs(f))) /
        1e9;
    int64_t offered = 0, hot_admitted = 0, commands = 0;
    std::vector<int64_t> lat;
    std::string per;
    for (Child& c : children) {
      LiveWindow& x = c.live[w];
      offered += x.offered;
      hot_admitted += x.hot_admitted;
      commands += x.commands_in_window;
      lat.insert(lat.end(), x.latency.begin(), x.latency.end());
      std::vector<int64_t>().swap(x.latency);
      absl::StrAppend(&per, per.empty() ? "" : " ",
                      Fmt(static_cast<double>(x.hot_admitted) / len));
    }
    std::sort(lat.begin(), lat.end());
    const double admitted_rate = static_cast<double>(hot_admitted) / len;
    std::string row = LiveRow(
        absl::StrFormat("%.1fs",
                        static_cast<double>(w) * f.window_ms / 1000.0 + len),
        Commas(std::llround(admitted_rate)),
        absl::StrFormat("%.1f%%", 100.0 * admitted_rate / f.limit),
        Commas(std::llround(static_cast<double>(offered) / len)),
        lat.empty() ? "-" : ShortNs(Percentile(lat, 0.50)),
        lat.empty() ? "-" : ShortNs(Percentile(lat, 0.99)),
        Commas(std::llround(static_cast<double>(commands) / len)),
        commands > 0 ? Fmt(static_cast<double>(offered) / commands) : "-",
        redis);
    if (row.size() + 2 + per.size() > kLiveColumns) {
      // Too many instances for the line: their range.
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
      for (const Child& c : children) {
        lo = std::min(lo, c.live[w].hot_admitted);
        hi = std::max(hi, c.live[w].hot_admitted);
      }
      per = absl::StrCat(Fmt(lo / len), "..", Fmt(hi / len));
    }
    std::printf("%s  %s\n", row.c_str(), per.c_str());
    std::fflush(stdout);
  }
}

// Ctrl-C in the parent (see the header comment).
std::atomic<int> g_sigints{0};
void OnSigint(int) { g_sigints.fetch_add(1, std::memory_order_relaxed); }

int RunParent(int argc, char** argv, Flags f) {
  signal(SIGPIPE, SIG_IGN);
  {
    // Ctrl-C: stop the run and print its summary (unless SIGINT was
    // ignored when we were started, e.g. in the background).
    struct sigaction sa {
    }, old{};
    sa.sa_handler = OnSigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // poll() still returns EINTR
    sigaction(SIGINT, &sa, &old);
    if (old.sa_handler == SIG_IGN) sigaction(SIGINT, &old, nullptr);
  }
  if (f.prefix.empty()) {
    f.prefix = absl::StrCat("lh:", getpid(), ":", SteadyNs() % 1000000, ":");
  }
  int64_t nwin = NumWindows(f);  // cut to the windows that ran if stopped
  const int64_t burst = f.limit;
  const int64_t max_lease = MaxLease(f);
  const int64_t held =
      f.mode == "leased"
          ? static_cast<int64_t>(f.instances *
                                 (2 * static_cast<double>(max_lease) - 1))
          : 0;
  const double p0 = ZipfP0(f);

  RedisProbe probe(f.url);
  if (!f.url.empty() && !probe.ok()) {
    std::fprintf(stderr, "cannot connect to %s\n", f.url.c_str());
    return 1;
  }
  if (probe.ok()) probe.Command("CONFIG RESETSTAT");
  const int64_t mem_before =
      probe.ok() ? probe.InfoField("memory", "used_memory") : -1;

  std::printf(
      "lease_harness: mode=%s keys=%s instances=%d threads=%d limit=%" PRId64
      "/s (token bucket, burst %" PRId64
      ") offered=%s/s seconds=%g "
      "window=%dms pacing=%s%s\n",
      f.mode.c_str(), f.keys.c_str(), f.instances, f.threads, f.limit, burst,
      Fmt(f.offered).c_str(), f.seconds, f.window_ms,
      f.pacing_sleep ? "sleep" : "spin",
      f.use_handle ? " (hot key through a handle)" : "");
  if (f.keys == "zipf") {
    std::printf(
        "zipf: %d keys, s=%g; hottest key p=%.4f, offered %s/s on it "
        "(per-key limit %" PRId64 "/s)\n",
        f.zipf_keys, f.zipf_s, p0, Fmt(p0 * f.offered).c_str(), f.limit);
  }
  if (f.mode == "leased") {
    std::printf(
        "lease options: lease_ttl=%dms max_lease_fraction=%g (max "
        "lease %" PRId64
        " tokens) cold_key_policy=%s idle_evict=%dms, others "
        "default\n",
        f.lease_ttl_ms, f.max_lease_fraction, max_lease,
        f.cold_key_policy.c_str(), f.idle_evict_ms);
  }
  if (f.mode == "local") {
    std::printf("local: each instance has its own Limiter with %" PRId64
                "/s, burst %" PRId64 " (limit/N); nothing is shared\n",
                f.limit / f.instances, f.limit / f.instances);
  }
  std::fflush(stdout);

  std::vector<Child> children(f.instances);
  // The instances start with SIGINT blocked and ignore it before unblocking
  // it, so a Ctrl-C now cannot kill one before it can ignore it.
  sigset_t sigint, old_mask;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  sigprocmask(SIG_BLOCK, &sigint, &old_mask);
  for (int i = 0; i < f.instances; ++i) {
    int ctl[2], data[2];
    if (pipe2(ctl, O_CLOEXEC) != 0 || pipe2(data, O_CLOEXEC) != 0) {
      std::perror("pipe2");
      KillAll(children);
      return 1;
    }
    std::vector<std::string> args;
    for (int a = 0; a < argc; ++a) args.push_back(argv[a]);
    args.push_back(absl::StrCat("--instance=", i));
    args.push_back(absl::StrCat("--ctl_fd=", ctl[0]));
    args.push_back(absl::StrCat("--data_fd=", data[1]));
    args.push_back(absl::StrCat("--prefix=", f.prefix));
    std::vector<char*> cargv;
    for (std::string& s : args) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      KillAll(children);
      return 1;
    }
    if (pid == 0) {
      fcntl(ctl[0], F_SETFD, 0);
      fcntl(data[1], F_SETFD, 0);
      execv("/proc/self/exe", cargv.data());
      _exit(127);
    }
    close(ctl[0]);
    close(data[1]);
    Child& c = children[i];
    c.pid = pid;
    c.ctl_fd = ctl[1];
    c.data_fd = data[0];
    c.windows.assign(nwin, WindowCounts{});
    if (f.live) c.live.resize(nwin);
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  // Poll all pipes: ready messages, then results. Redis memory is sampled
  // once per window while the instances run.
  std::vector<int64_t> redis_mem;  // per window, -1 if not sampled
  redis_mem.assign(nwin, -1);
  int64_t start_ns = 0;
  const int64_t ready_deadline = SteadyNs() + 60'000'000'000LL;
  int64_t end_deadline = 0;
  int64_t next_mem_w = 0;
  int64_t next_live_w = 0;
  bool failed = false;
  int64_t interrupted_ns = 0;  // when the first SIGINT was seen
  for (;;) {
    const int sigints = g_sigints.load(std::memory_order_relaxed);
    if (sigints > 0 && start_ns == 0) {
      KillAll(children);
      std::printf("\ninterrupted before the run started\n");
      return 0;
    }
    if (sigints > 1) {
      std::fprintf(stderr, "interrupted again: killing the instances\n");
      KillAll(children);
      return 130;
    }
    if (sigints > 0 && interrupted_ns == 0) {
      // Ask the instances to stop (they send their results as at the end
      // of a run) by closing their control pipes.
      interrupted_ns = SteadyNs();
      if (interrupted_ns < start_ns) {
        std::printf("\ninterrupted before the start: stopping the instances\n");
      } else {
        std::printf("\ninterrupted at t=%.1f s: stopping the instances\n",
                    static_cast<double>(interrupted_ns - start_ns) / 1e9);
      }
      std::fflush(stdout);
      for (Child& c : children) {
        if (c.ctl_fd >= 0) close(c.ctl_fd);
        c.ctl_fd = -1;
      }
      end_deadline =
          std::min<int64_t>(end_deadline, interrupted_ns + 30'000'000'000LL);
    }
    bool all_ready = true, all_done = true;
    for (Child& c : children) {
      all_ready &= c.ready;
      all_done &= c.eof;
    }
    if (all_done) break;
    if (start_ns == 0 && all_ready) {
      start_ns = SteadyNs() + 200'000'000;  // 200 ms to read it
      end_deadline =
          start_ns + static_cast<int64_t>(f.seconds * 1e9) + 120'000'000'000LL;
      for (Child& c : children) {
        WriteAll(c.ctl_fd, absl::StrCat(start_ns, "\n"));
      }
      if (f.live) PrintLiveHeader(f);
    }
    const int64_t now = SteadyNs();
    if ((start_ns == 0 && now > ready_deadline) ||
        (start_ns != 0 && now > end_deadline)) {
      std::fprintf(stderr, "timed out waiting for the instances\n");
      failed = true;
      break;
    }
    if (start_ns != 0 && next_mem_w < nwin &&
        now >= start_ns + (next_mem_w + 1) * WindowNs(f)) {
      if (probe.ok()) {
        redis_mem[next_mem_w] = probe.InfoField("memory", "used_memory");
      }
      ++next_mem_w;
    }
    std::vector<pollfd> fds;
    std::vector<Child*> who;
    for (Child& c : children) {
      if (!c.eof) {
        fds.push_back(pollfd{c.data_fd, POLLIN, 0});
        who.push_back(&c);
      }
    }
    const int n = poll(fds.data(), fds.size(), 50);
    if (n < 0 && errno != EINTR) {
      std::perror("poll");
      failed = true;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!ReadChild(*who[i]) && !who[i]->done) {
          std::fprintf(stderr, "instance %d ended without its results\n",
                       static_cast<int>(who[i] - children.data()));
          failed = true;
        }
      }
    }
    if (failed) break;
    if (f.live && interrupted_ns == 0) PrintLive(f, children, &next_live_w);
  }
  if (failed) {
    KillAll(children);
    return 1;
  }
  for (Child& c : children) {
    int status = 0;
    waitpid(c.pid, &status, 0);
    c.pid = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "an instance exited with status %d\n", status);
      return 1;
    }
    if (c.ctl_fd >= 0) close(c.ctl_fd);
    close(c.data_fd);
  }
  if (interrupted_ns != 0 &&
      interrupted_ns >= start_ns + static_cast<int64_t>(f.seconds * 1e9)) {
    interrupted_ns = 0;  // after the load ended: the run is complete
  }
  if (interrupted_ns != 0) {
    // Only the windows that ran (the last one partial).
    int64_t last = 0;
    for (const Child& c : children) last = std::max(last, c.last_ns);
    nwin = last > start_ns ? std::min(nwin, (last - start_ns) / WindowNs(f) + 1)
                           : 0;
    for (Child& c : children) c.windows.resize(nwin);
    redis_mem.resize(nwin);
    if (nwin == 0) {
      std::printf("\nnothing ran before the interruption\n");
      return 0;
    }
  }

  // --- Aggregate. -----------------------------------------------------------
  std::vector<WindowCounts> all(nwin);
  for (int64_t w = 0; w < nwin; ++w) {
    int64_t keys = 0, rss = 0, cmds = 0;
    for (const Child& c : children) {
      const WindowCounts& x = c.windows[w];
      all[w].offered += x.offered;
      all[w].admitted += x.admitted;
      all[w].hot_offered += x.hot_offered;
      all[w].hot_admitted += x.hot_admitted;
      keys += std::max<int64_t>(0, x.keys);
      rss += std::max<int64_t>(0, x.rss_kb);
      cmds += std::max<int64_t>(0, x.commands);
    }
    all[w].keys = keys;
    all[w].rss_kb = rss;
    all[w].commands = cmds;
  }
  int64_t last_ns = 0, errors = 0;
  int64_t offered_total = 0, admitted_total = 0, hot_offered_total = 0,
          hot_admitted_total = 0;
  FinalStats tot;
  std::vector<int64_t> latency;
  for (const Child& c : children) {
    last_ns = std::max(last_ns, c.last_ns);
    errors += c.errors;
    latency.insert(latency.end(), c.latency.begin(), c.latency.end());
    tot.commands_sent += c.stats.commands_sent;
    tot.commands_at_end_of_run += c.stats.commands_at_end_of_run;
    tot.lease_requests += c.stats.lease_requests;
    tot.tokens_granted += c.stats.tokens_granted;
    tot.tokens_returned += c.stats.tokens_returned;
    tot.denied_by_redis += c.stats.denied_by_redis;
    tot.charges += c.stats.charges;
    tot.tokens_charged += c.stats.tokens_charged;
    tot.redis_errors += c.stats.redis_errors;
    tot.flushes += c.stats.flushes;
    tot.timeouts += c.stats.timeouts;
  }
  for (const WindowCounts& w : all) {
    offered_total += w.offered;
    admitted_total += w.admitted;
    hot_offered_total += w.hot_offered;
    hot_admitted_total += w.hot_admitted;
  }
  std::sort(latency.begin(), latency.end());
  const double duration = static_cast<double>(last_ns - start_ns) / 1e9;
  const double window_s = f.window_ms / 1000.0;

  // --- CSV. -----------------------------------------------------------------
  if (!f.csv.empty()) {
    FILE* out = std::fopen(f.csv.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "cannot write %s: %s\n", f.csv.c_str(),
                   std::strerror(errno));
    } else {
      std::fprintf(out,
                   "window_start_s,instance,offered,admitted,limit_bound,"
                   "hot_offered,hot_admitted,keys,rss_kb,redis_commands_total,"
                   "redis_used_memory\n");
      const double bound = static_cast<double>(f.limit) * window_s;
      for (int64_t w = 0; w < nwin; ++w) {
        const double ws = static_cast<double>(w) * window_s;
        for (size_t i = 0; i < children.size(); ++i) {
          const WindowCounts& x = children[i].windows[w];
          std::fprintf(out,
                       "%g,%zu,%" PRId64 ",%" PRId64 ",%g,%" PRId64 ",%" PRId64
                       ",%" PRId64 ",%" PRId64 ",%" PRId64 ",\n",
                       ws, i, x.offered, x.admitted, bound, x.hot_offered,
                       x.hot_admitted, x.keys, x.rss_kb, x.commands);
        }
        const WindowCounts& x = all[w];
        std::fprintf(out,
                     "%g,all,%" PRId64 ",%" PRId64 ",%g,%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                     ws, x.offered, x.admitted, bound, x.hot_offered,
                     x.hot_admitted, x.keys, x.rss_kb, x.commands,
                     redis_mem[w]);
      }
      std::fclose(out);
    }
  }

  // --- Summary. -------------------------------------------------------------
  std::printf("\n== summary (%s, %s) ==\n", f.mode.c_str(), f.keys.c_str());
  if (interrupted_ns != 0) {
    std::printf(
        "interrupted (SIGINT) at t=%.3f s of %g s: this covers the %" PRId64
        " window%s that ran, the last one partial\n",
        static_cast<double>(interrupted_ns - start_ns) / 1e9, f.seconds, nwin,
        nwin == 1 ? "" : "s");
  }
  std::printf("offered: %" PRId64
              " decisions in %.3f s = %s/s (target %s/s, %.1f%%)"
              "%s\n",
              offered_total, duration, Fmt(offered_total / duration).c_str(),
              Fmt(f.offered).c_str(),
              100.0 * offered_total / duration / f.offered,
              offered_total / duration < 0.95 * f.offered
                  ? "; the instances could not keep up with the target"
                  : "");
  std::printf("admitted (all keys): %" PRId64 " (%.2f%% of offered)\n",
              admitted_total,
              offered_total ? 100.0 * admitted_total / offered_total : 0.0);
  if (errors > 0) {
    std::printf("errors (no decision): %" PRId64 "\n", errors);
  }
  const char* hot = f.keys == "hot" ? "hot key" : "hottest key (rank 0)";
  const double bound_total = burst + static_cast<double>(f.limit) * duration;
  std::printf("%s: offered %" PRId64 ", admitted %" PRId64
              "; bound burst + limit x duration = %" PRId64 " + %" PRId64
              " x %.3f = %s; utilisation %.2f%%\n",
              hot, hot_offered_total, hot_admitted_total, burst, f.limit,
              duration, Fmt(bound_total).c_str(),
              100.0 * hot_admitted_total / bound_total);
  if (hot_admitted_total > bound_total) {
    std::printf("BOUND EXCEEDED: %s admitted %" PRId64 " > %s (+%s, %.2f%%)\n",
                hot, hot_admitted_total, Fmt(bound_total).c_str(),
                Fmt(hot_admitted_total - bound_total).c_str(),
                100.0 * (hot_admitted_total - bound_total) / bound_total);
  }
  // Sliding 1 s spans in window steps.
  const int64_t span = std::max<int64_t>(1, 1000 / f.window_ms);
  const double span_s = span * window_s;
  auto max_span = [&](int64_t from, int64_t* at) {
    int64_t best = -1;
    for (int64_t w = from; w + span <= nwin; ++w) {
      int64_t s = 0;
      for (int64_t k = w; k < w + span; ++k) s += all[k].hot_admitted;
      if (s > best) {
        best = s;
        *at = w;
      }
    }
    return best;
  };
  int64_t at_all = 0, at_steady = 0;
  const int64_t max_all = max_span(0, &at_all);
  const int64_t max_steady = max_span(span, &at_steady);
  const double limit_span = static_cast<double>(f.limit) * span_s;
  const double window_bound = limit_span + burst + held;
  std::printf("max %s admitted in any %g s span (window steps): %" PRId64
              " (span at %g s); bound limit + burst + held = %s + %" PRId64
              " + %" PRId64 " = %s%s\n",
              hot, span_s, max_all, at_all * window_s, Fmt(limit_span).c_str(),
              burst, held, Fmt(window_bound).c_str(),
              max_all > window_bound ? "" : " (within)");
  if (max_all > window_bound) {
    std::printf("BOUND EXCEEDED: a %g s span admitted %" PRId64 " > %s\n",
                span_s, max_all, Fmt(window_bound).c_str());
  }
  if (max_steady >= 0) {
    std::printf("  after the first %g s: max %" PRId64
                " at %g s = %.3f x limit; limit + held = %s (information, not "
                "a bound: only once overload has spent the burst should a "
                "span stay near it)\n",
                span_s, max_steady, at_steady * window_s,
                max_steady / limit_span, Fmt(limit_span + held).c_str());
  }
  if (held > 0) {
    std::printf("  held = instances x (2 x max lease - 1) = %d x (2 x %" PRId64
                " - 1) (docs/design.md, accuracy bound: a grant on top of "
                "what is left below the low-water mark)\n",
                f.instances, max_lease);
  }
  std::printf("per-window %s admitted (window %g s):", hot, window_s);
  for (int64_t w = 0; w < nwin; ++w) {
    std::printf(" %" PRId64, all[w].hot_admitted);
  }
  std::printf("\n");
  std::printf("per instance:");
  for (size_t i = 0; i < children.size(); ++i) {
    int64_t o = 0, a = 0;
    for (const WindowCounts& w : children[i].windows) {
      o += w.offered;
      a += w.admitted;
    }
    std::printf(" [%zu] offered %" PRId64 " admitted %" PRId64, i, o, a);
  }
  std::printf("\n");
  std::printf(
      "decision latency (1 in %d decisions timed with steady_clock, "
      "%zu samples, all instances): p50 %" PRId64 " ns, p99 %" PRId64
      " ns, p999 %" PRId64 " ns, max %" PRId64 " ns\n",
      f.sample_every, latency.size(), Percentile(latency, 0.50),
      Percentile(latency, 0.99), Percentile(latency, 0.999),
      latency.empty() ? 0 : latency.back());
  if (f.mode != "local") {
    int64_t server_calls = -1, server_cmds = -1;
    if (probe.ok()) {
      server_calls = probe.CommandCalls("evalsha") + probe.CommandCalls("eval");
      server_cmds = probe.InfoField("stats", "total_commands_processed");
    }
    std::printf(
        "redis commands sent by the instances: %" PRId64
        " during the run (%" PRId64
        " including the shutdown's returns); decisions per command: %.1f; "
        "pipelined writes: %" PRId64 "\n",
        tot.commands_at_end_of_run, tot.commands_sent,
        tot.commands_at_end_of_run
            ? static_cast<double>(offered_total) / tot.commands_at_end_of_run
            : 0.0,
        tot.flushes);
    std::printf("redis server: EVALSHA+EVAL calls %" PRId64
                ", total commands processed %" PRId64
                " (includes the GET/SET/TIME run inside the scripts and this "
                "harness's INFO probes)\n",
                server_calls, server_cmds);
  }
  if (f.mode == "leased") {
    std::printf(
        "lease stats (sum over instances, at the end of the run): "
        "lease requests %" PRId64 ", tokens granted %" PRId64
        ", returned %" PRId64 ", denied by redis %" PRId64 ", charges %" PRId64
        " (%" PRId64 " tokens), redis errors %" PRId64 "\n",
        tot.lease_requests, tot.tokens_granted, tot.tokens_returned,
        tot.denied_by_redis, tot.charges, tot.tokens_charged, tot.redis_errors);
  }
  if (f.mode != "local") {
    std::printf(
        "redis client timeouts (DeadlineExceeded, all instances): "
        "%" PRId64 "\n",
        tot.timeouts);
  }
  if (f.keys == "zipf") {
    std::printf("keys in memory (sum over instances) at each window's end:");
    for (int64_t w = 0; w < nwin; ++w) std::printf(" %" PRId64, all[w].keys);
    std::printf("\n");
    std::printf("RSS (sum over instances, KiB) at each window's end:");
    for (int64_t w = 0; w < nwin; ++w) std::printf(" %" PRId64, all[w].rss_kb);
    std::printf("\n");
  }
  std::printf("peak RSS per instance (ru_maxrss, KiB):");
  for (const Child& c : children) std::printf(" %" PRId64, c.peak_rss_kb);
  std::printf("\n");
  if (probe.ok()) {
    int64_t peak_mem = -1;
    for (int64_t m : redis_mem) peak_mem = std::max(peak_mem, m);
    const int64_t mem_end = probe.InfoField("memory", "used_memory");
    std::printf("redis used_memory: %" PRId64
                " before, peak of window "
                "samples %" PRId64 ", %" PRId64 " at the end (bytes); %" PRId64
                " keys in the db at the end\n",
                mem_before, peak_mem, mem_end, probe.Integer("DBSIZE"));
  }
  if (!f.csv.empty()) std::printf("csv: %s\n", f.csv.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, f)) {
    Usage();
    return 2;
  }
  if (f.instance >= 0) return RunInstance(f);
  return RunParent(argc, argv, f);
}
