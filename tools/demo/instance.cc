// An instance process (demo.h, RunInstance): load threads, the per-window
// monitor, and the results it sends to the parent. A load thread makes no
// system call and no allocation while it decides (bench/strace_decisions.sh
// checks): it counts in arrays sized for the run, which the monitor reads
// through atomic_ref while it runs.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "demo/demo.h"
#include "demo/protocol.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

// Relaxed loads and stores are plain moves on x86: the thread that owns a
// counter bumps it, the monitor reads it while it runs.
int64_t Relaxed(int64_t& x) {
  return std::atomic_ref<int64_t>(x).load(std::memory_order_relaxed);
}
void Set(int64_t& x, int64_t v,
         std::memory_order order = std::memory_order_relaxed) {
  std::atomic_ref<int64_t>(x).store(v, order);
}
void Count(Counts& c, bool hot, bool admitted) {
  Set(c.offered, Relaxed(c.offered) + 1);
  Set(c.admitted, Relaxed(c.admitted) + admitted);
  Set(c.hot_offered, Relaxed(c.hot_offered) + hot);
  Set(c.hot_admitted, Relaxed(c.hot_admitted) + (hot && admitted));
}

// What each load thread counts. Only its thread writes it; the window
// counts, the samples up to `taken` and progress_ns may be read while it
// runs, the rest after join.
struct alignas(64) ThreadResult {
  ThreadResult(const DemoOptions& o, int64_t keys)
      : windows(NumWindows(o)),
        // As many as the thread is asked for, with room to spare: when
        // they are used up, later decisions go untimed.
        samples(static_cast<size_t>(o.offered / (o.instances * o.threads) *
                                    o.seconds / o.sample_every * 1.1) +
                16),
        per_key(keys) {}

  std::vector<Counts> windows;
  std::array<Counts, kOutagePhases> phases;  // with an outage
  std::vector<Sample> samples;
  int64_t taken = 0;  // samples written; stored with release order
  int64_t sent = 0;   // the monitor's: samples sent to the parent
  KeyCounter per_key;
  int64_t last_ns = 0;
  // A steady_clock time such that every decision the thread will still
  // count is at or after it (INT64_MAX once it has ended); release order
  // after the counts it covers.
  int64_t progress_ns = 0;
};
using Results = std::vector<std::unique_ptr<ThreadResult>>;

// What the load threads share; read-only but for `stop`.
struct Load {
  const DemoOptions& o;
  const KeySet& keys;
  Target& target;
  int64_t start_ns;
  int64_t hot_keys;  // ranks below this are hot (HotKeys)
  std::atomic<bool> stop{false};
};

// Load thread `t`: paced decisions until the run's end or a stop request,
// every sample_every-th timed (and then counted at the time after it).
void RunThread(const Load& load, int instance, int t, ThreadResult& r) {
  const DemoOptions& o = load.o;
  pthread_setname_np(pthread_self(), LoadThreadName(t).c_str());
  const int64_t end_ns =
      load.start_ns + static_cast<int64_t>(o.seconds * 1e9 + 0.5);
  std::mt19937_64 rng(static_cast<uint64_t>(instance) * 1000003 + t + 1);
  Pacer pacer(FirstCallNs(o, instance, t, load.start_ns), CallIntervalNs(o),
              o.pacing, 1000.0 * o.tick_us,
              TickOriginNs(o, instance, t, load.start_ns));
  for (int64_t calls = 0;; ++calls) {
    int64_t now = SteadyNs();
    Set(r.progress_ns, now, std::memory_order_release);
    if (now >= end_ns || load.stop.load(std::memory_order_relaxed)) break;
    if (!pacer.DueOrWait(now)) continue;
    pacer.Book(now);
    const size_t k = load.keys.Draw(rng);
    const bool timed = calls % o.sample_every == 0 &&
                       r.taken < static_cast<int64_t>(r.samples.size());
    const int64_t before = timed ? SteadyNs() : now;
    const bool admitted = load.target.Decide(k);
    if (timed) {
      now = SteadyNs();
      r.samples[r.taken] = {now - load.start_ns, now - before,
                            static_cast<int64_t>(k) < load.hot_keys};
      Set(r.taken, r.taken + 1, std::memory_order_release);
    }
    const int64_t elapsed = now - load.start_ns;
    Count(r.windows[WindowAt(o, elapsed)], k == 0, admitted);
    if (o.outage) Count(r.phases[PhaseAt(o, elapsed)], k == 0, admitted);
    r.per_key.Count(k, admitted);
    r.last_ns = now;
  }
  Set(r.progress_ns, std::numeric_limits<int64_t>::max(),
      std::memory_order_release);
}

// Waits until steady_clock time `at`; false early if the parent shut its
// side of the socket down (its stop request; also EOF if it died).
bool WaitUntilOrStop(int fd, int64_t at) {
  for (int64_t left; (left = at - SteadyNs()) > 0;) {
    const timespec ts{static_cast<time_t>(left / 1'000'000'000),
                      static_cast<long>(left % 1'000'000'000)};
    pollfd p{fd, POLLIN, 0};
    const int n = ppoll(&p, 1, &ts, nullptr);
    if (n > 0) return false;
    if (n < 0 && errno != EINTR) {
      // Cannot watch the socket: sleep instead (the parent can still kill us).
      std::this_thread::sleep_for(std::chrono::nanoseconds(left));
    }
  }
  return true;
}

// "H" lines for the health transitions since the last call, and "L" lines
// for the samples the threads published since.
std::string HealthAndSamples(const DemoOptions& o, Target& target,
                             Results& results) {
  std::string out;
  for (const HealthEvent& e : target.TakeHealthEvents()) out += HealthLine(e);
  for (auto& r : results) {
    const int64_t taken =
        std::atomic_ref<int64_t>(r->taken).load(std::memory_order_acquire);
    for (; r->sent < taken; ++r->sent) {
      const Sample& s = r->samples[r->sent];
      out += Line("L", {WindowAt(o, s.t_ns), s.t_ns, s.ns, s.hot});
    }
  }
  return out;
}

// Sends each window's "V" line as it closes, once every thread has moved
// past its end (at most 100 ms more, so a stuck thread does not hold it
// back); stops the threads early when the parent asks (the partial window
// is sent then) or the socket fails.
void RunMonitor(Load& load, Results& results) {
  const DemoOptions& o = load.o;
  int64_t commands_before = load.target.CommandsSent();
  for (int64_t w = 0; w < NumWindows(o); ++w) {
    const int64_t at = load.start_ns + (w + 1) * WindowNs(o);
    const bool stopped = !WaitUntilOrStop(o.fd, at);
    if (stopped) load.stop.store(true, std::memory_order_relaxed);
    const int64_t keys = load.target.Keys(),
                  commands = load.target.CommandsSent();
    const Health health = load.target.CurrentHealth();
    long pages = -1;
    if (FILE* f = std::fopen("/proc/self/statm", "r"); f != nullptr) {
      if (std::fscanf(f, "%*d %ld", &pages) != 1) pages = -1;
      std::fclose(f);
    }
    const int64_t rss = pages < 0 ? -1 : pages * (sysconf(_SC_PAGESIZE) / 1024);
    for (auto& r : results) {
      while (!stopped && SteadyNs() < at + 100'000'000 &&
             std::atomic_ref<int64_t>(r->progress_ns)
                     .load(std::memory_order_acquire) < at) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    Counts c;
    for (auto& r : results) {
      Counts& x = r->windows[w];
      c += {Relaxed(x.offered), Relaxed(x.admitted), Relaxed(x.hot_offered),
            Relaxed(x.hot_admitted)};
    }
    const std::string out =
        HealthAndSamples(o, load.target, results) +
        Line("V",
             {w, c.offered, c.admitted, c.hot_offered, c.hot_admitted, commands,
              commands - commands_before, keys, rss, static_cast<int>(health)});
    commands_before = commands;
    if (!WriteAll(o.fd, out) || stopped) {
      load.stop.store(true, std::memory_order_relaxed);
      return;
    }
  }
}

// Everything after the run, ending with "E".
std::string FinalLines(const DemoOptions& o, Results& results, Target& target) {
  std::string out = HealthAndSamples(o, target, results);
  Counts phases[kOutagePhases];
  std::vector<KeyCount> keys;
  int64_t last = 0;
  for (int64_t w = 0; w < NumWindows(o); ++w) {
    Counts c;
    for (auto& r : results) c += r->windows[w];
    out += Line("W", {w, c.offered, c.admitted, c.hot_offered, c.hot_admitted});
  }
  for (auto& r : results) {
    for (int p = 0; p < kOutagePhases; ++p) phases[p] += r->phases[p];
    r->per_key.AppendTo(keys);
    last = std::max(last, r->last_ns);
  }
  for (int p = 0; o.outage && p < kOutagePhases; ++p) {
    const Counts& c = phases[p];
    out += Line("P", {p, c.offered, c.admitted, c.hot_offered, c.hot_admitted});
  }
  for (const KeyCount& k : SumByRank(std::move(keys))) {
    out += Line("K", {k.rank, k.offered, k.admitted});
  }
  int64_t commands = 0;
  out += target.Stop(&commands);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return out + Line("E", {last, ru.ru_maxrss, commands});
}

}  // namespace

int RunInstance(const DemoOptions& o) {
  // Ctrl-C reaches the whole process group; the parent decides what to do
  // and tells the instances through their sockets. It forked this
  // process with SIGINT blocked, so none got through before this.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGINT, SIG_IGN);
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  sigprocmask(SIG_UNBLOCK, &sigint, nullptr);
  if (o.pacing == Pacing::kSleep) prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us
  if (getppid() == 1) return 1;
  const KeySet keys = MakeKeys(o);
  absl::StatusOr<std::unique_ptr<Target>> target =
      Target::Create(o, o.prefix, keys);
  if (!target.ok()) {
    std::fprintf(stderr, "tokenlease demo: instance %d: %s\n", o.instance,
                 target.status().ToString().c_str());
    return 1;
  }
  // Ready; then the parent's start time.
  int64_t start_ns = 0;
  absl::StatusOr<std::string> line = absl::UnavailableError("");
  if (!WriteAll(o.fd, Line("R", {})) || !(line = ReadLine(o.fd)).ok() ||
      !absl::SimpleAtoi(*line, &start_ns)) {
    std::fprintf(stderr, "instance %d: no start time from the parent\n",
                 o.instance);
    return 1;
  }
  Load load{o, keys, **target, start_ns, HotKeys(o)};
  Results results;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    results.push_back(std::make_unique<ThreadResult>(o, keys.names.size()));
  }
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back(
        [&, t] { RunThread(load, o.instance, t, *results[t]); });
  }
  RunMonitor(load, results);
  for (std::thread& th : threads) th.join();
  const std::string out = FinalLines(o, results, **target);
  target->reset();
  if (!WriteAll(o.fd, out)) return 1;
  close(o.fd);
  return 0;
}

}  // namespace tokenlease::tools
