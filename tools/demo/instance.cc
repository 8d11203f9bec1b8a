// The instance process (instance.h): load threads, the per-window monitor,
// and the results it sends to the parent.
#include "demo/instance.h"

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
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "demo/per_key.h"
#include "demo/protocol.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

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

// The per-window counters and the progress mark are written by their thread
// only, through atomic_ref (relaxed: plain loads and stores on x86), so that
// the monitor can read them while the thread runs (--live).
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
  ThreadResult(int64_t windows, int64_t keys)
      : offered(windows),
        admitted(windows),
        hot_offered(windows),
        hot_admitted(windows),
        per_key(keys) {}

  std::vector<int64_t> offered, admitted, hot_offered, hot_admitted;
  // Samples of hot and of cold keys (workload.h, HotKeys).
  std::vector<int64_t> latency_ns, latency_cold_ns;
  // With an outage: every sample again, and the counts, by outage phase.
  std::array<std::vector<int64_t>, kOutagePhases> latency_phase_ns;
  std::array<PhaseCounts, kOutagePhases> phase;
  KeyCounter per_key;
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

// What the load threads share; read-only but for `stop`.
struct Load {
  const DemoOptions& o;
  int instance;
  const KeySet& keys;
  Target& target;
  int64_t start_ns;
  int64_t hot_keys;  // ranks below this are hot (HotKeys)
  std::atomic<bool> stop{false};
};

// The outage phase `elapsed_ns` after the start (the parent stops Redis
// then, within the time its signal takes).
OutagePhase PhaseAt(const DemoOptions& o, int64_t elapsed_ns) {
  const double t = static_cast<double>(elapsed_ns) / 1e9;
  if (t < o.outage_at) return kBeforeOutage;
  return t < o.OutageEnd() ? kDuringOutage : kAfterOutage;
}

// Makes one decision on key `k` (timed if `timed`, and then counted at the
// time after it) and counts it in its window.
void DecideAndCount(const Load& load, size_t k, bool timed, int64_t now,
                    LiveLatency* live, ThreadResult& r) {
  int res;
  int64_t sample = -1;
  if (timed) {
    const int64_t a = SteadyNs();
    res = load.target.Decide(k);
    now = SteadyNs();
    sample = now - a;
    (static_cast<int64_t>(k) < load.hot_keys ? r.latency_ns : r.latency_cold_ns)
        .push_back(sample);
    if (load.o.outage) {
      r.latency_phase_ns[PhaseAt(load.o, now - load.start_ns)].push_back(
          sample);
    }
  } else {
    res = load.target.Decide(k);
  }
  if (load.o.outage) {
    PhaseCounts& p = r.phase[PhaseAt(load.o, now - load.start_ns)];
    ++p.offered;
    p.admitted += res > 0;
    if (k == 0) {
      ++p.hot_offered;
      p.hot_admitted += res > 0;
    }
  }
  if (r.first_ns == 0) r.first_ns = now;
  r.last_ns = now;
  const int64_t w = std::clamp<int64_t>(
      (now - load.start_ns) / WindowNs(load.o), 0, NumWindows(load.o) - 1);
  Bump(r.offered[w]);
  if (res < 0) ++r.errors;
  if (res > 0) Bump(r.admitted[w]);
  r.per_key.Count(k, res > 0);
  if (k == 0) {
    Bump(r.hot_offered[w]);
    if (res > 0) Bump(r.hot_admitted[w]);
  }
  if (live != nullptr && sample >= 0) {
    std::lock_guard<std::mutex> lock(live->mu);
    live->samples.emplace_back(w, sample);
  }
}

// Load thread `t`: paced decisions until the run's end or a stop request.
// Named LoadThreadName(t), so that a tracer can find it
// (bench/strace_decisions.sh).
void RunThread(const Load& load, int t, LiveLatency* live, ThreadResult& r) {
  const DemoOptions& o = load.o;
  pthread_setname_np(pthread_self(), LoadThreadName(t).c_str());
  const int64_t end_ns =
      load.start_ns + static_cast<int64_t>(o.seconds * 1e9 + 0.5);
  const double rate = o.OfferedRate() / (o.instances * o.threads);
  // Reserved up front: no allocation (and no system call for one) while
  // the thread decides, unless it decides more than it was asked to.
  const size_t samples =
      static_cast<size_t>(rate * o.seconds / o.sample_every * 1.1) + 16;
  r.latency_ns.reserve(samples);
  if (load.hot_keys < static_cast<int64_t>(load.keys.names.size())) {
    r.latency_cold_ns.reserve(samples);
  }
  std::mt19937_64 rng(static_cast<uint64_t>(load.instance) * 1000003 + t + 1);
  Pacer pacer(FirstCallNs(o, load.instance, t, load.start_ns),
              CallIntervalNs(o), o.pacing, 1000.0 * o.tick_us,
              TickOriginNs(o, load.instance, t, load.start_ns));
  std::atomic_ref<int64_t> progress(r.progress_ns);
  for (int64_t calls = 0;;) {
    const int64_t now = SteadyNs();
    if (live != nullptr) progress.store(now, std::memory_order_release);
    if (now >= end_ns || load.stop.load(std::memory_order_relaxed)) break;
    if (!pacer.DueOrWait(now)) continue;
    pacer.Book(now);
    const size_t k = load.keys.Draw(rng);
    DecideAndCount(load, k, calls++ % o.sample_every == 0, now, live, r);
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

// Waits until every thread has moved past `at` (at most 100 ms more, so a
// stuck thread does not hold the line back).
void WaitForThreadsPast(int64_t at, std::vector<ThreadResult>& results) {
  const int64_t give_up = at + 100'000'000;
  for (;;) {
    bool passed = true;
    for (ThreadResult& r : results) {
      passed &= std::atomic_ref<int64_t>(r.progress_ns)
                    .load(std::memory_order_acquire) >= at;
    }
    if (passed || SteadyNs() >= give_up) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// --live: window w's counts over the threads and its latency samples (at
// most kMaxLiveSamples), once the threads have moved past its end `at`.
LiveWindow CollectLiveWindow(int64_t w, int64_t at,
                             std::vector<ThreadResult>& results,
                             std::vector<LiveLatency>& live) {
  WaitForThreadsPast(at, results);
  LiveWindow out;
  for (ThreadResult& r : results) {
    out.offered += LoadRelaxed(r.offered[w]);
    out.admitted += LoadRelaxed(r.admitted[w]);
    out.hot_offered += LoadRelaxed(r.hot_offered[w]);
    out.hot_admitted += LoadRelaxed(r.hot_admitted[w]);
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
  out.latency = ThinEvenly(lat, kMaxLiveSamples);
  return out;
}

// The parent's start time, after telling it this instance is ready.
absl::StatusOr<int64_t> Handshake(const InstanceRole& role) {
  if (!WriteAll(role.data_fd, EncodeReady())) {
    return absl::UnavailableError("cannot write to the parent");
  }
  absl::StatusOr<std::string> line = ReadLine(role.ctl_fd);
  if (!line.ok()) return line.status();
  return DecodeStart(*line);
}

// Ctrl-C reaches the whole process group; the parent decides what to do
// and tells the instances by closing their control pipes. The parent forked
// this process with SIGINT blocked, so none got through before this.
void SetUpProcess(const DemoOptions& o) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGINT, SIG_IGN);
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  sigprocmask(SIG_UNBLOCK, &sigint, nullptr);
  if (o.pacing == Pacing::kSleep) prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us
}

// What the monitor leaves behind: the "S" lines (and without --live the
// "H" lines), and the window it was in when the parent asked it to stop
// (-1: it was not asked).
struct MonitorResult {
  std::string samples;
  int64_t stopped_in_window = -1;
};

// "H" lines for the health transitions since the last call.
std::string HealthLines(Target& target) {
  std::string out;
  for (const HealthEvent& e : target.TakeHealthEvents()) {
    out += EncodeHealthEvent(e);
  }
  return out;
}

// Samples every window's end and with --live sends the window at once.
// Stops the threads early when the parent closes the control pipe (or the
// data pipe fails).
MonitorResult RunMonitor(Load& load, const InstanceRole& role,
                         std::vector<ThreadResult>& results,
                         std::vector<LiveLatency>& live) {
  const DemoOptions& o = load.o;
  MonitorResult m;
  int64_t commands_before = load.target.CommandsSent();
  for (int64_t win = 0; win < NumWindows(o); ++win) {
    const int64_t at = load.start_ns + (win + 1) * WindowNs(o);
    if (!WaitUntilOrStop(role.ctl_fd, at)) {
      m.stopped_in_window = win;
      load.stop.store(true, std::memory_order_relaxed);
      break;
    }
    const int64_t keys = load.target.Keys(), rss = CurrentRssKb(),
                  commands = load.target.CommandsSent();
    const Health health = load.target.CurrentHealth();
    m.samples += EncodeSample(win, keys, rss, commands);
    if (!o.live) {
      m.samples += HealthLines(load.target);
      continue;
    }
    LiveWindow v = CollectLiveWindow(win, at, results, live);
    v.commands = commands;
    v.commands_in_window = commands - commands_before;
    v.keys = keys;
    v.rss_kb = rss;
    v.health = health;
    commands_before = commands;
    if (!WriteAll(role.data_fd,
                  HealthLines(load.target) + EncodeLive(win, v))) {
      load.stop.store(true, std::memory_order_relaxed);
      break;
    }
  }
  return m;
}

// Everything after the run: window counts, latency samples, per-key counts,
// timing and the target's counters, ending with "E".
std::string Results(const DemoOptions& o, std::vector<ThreadResult>& results,
                    Target& target) {
  std::string out;
  for (int64_t w = 0; w < NumWindows(o); ++w) {
    WindowCounts c;
    for (const ThreadResult& r : results) {
      c.offered += r.offered[w];
      c.admitted += r.admitted[w];
      c.hot_offered += r.hot_offered[w];
      c.hot_admitted += r.hot_admitted[w];
    }
    out += EncodeCounts(w, c);
  }
  RunTiming timing;
  for (const ThreadResult& r : results) {
    if (r.first_ns != 0 &&
        (timing.first_ns == 0 || r.first_ns < timing.first_ns)) {
      timing.first_ns = r.first_ns;
    }
    timing.last_ns = std::max(timing.last_ns, r.last_ns);
    timing.errors += r.errors;
    out += EncodeLatency(r.latency_ns);
    out += EncodeLatency(r.latency_cold_ns, /*cold=*/true);
    for (int p = 0; p < kOutagePhases; ++p) {
      out += EncodePhaseLatency(static_cast<OutagePhase>(p),
                                r.latency_phase_ns[p]);
    }
  }
  if (o.outage) {
    for (int p = 0; p < kOutagePhases; ++p) {
      PhaseCounts sum;
      for (const ThreadResult& r : results) {
        sum.offered += r.phase[p].offered;
        sum.admitted += r.phase[p].admitted;
        sum.hot_offered += r.phase[p].hot_offered;
        sum.hot_admitted += r.phase[p].hot_admitted;
      }
      out += EncodePhaseCounts(static_cast<OutagePhase>(p), sum);
    }
  }
  std::vector<KeyCount> per_key;
  for (const ThreadResult& r : results) r.per_key.AppendTo(per_key);
  out += EncodeKeyCounts(SumByRank(std::move(per_key)));
  timing.peak_rss_kb = PeakRssKb();
  return out + EncodeTiming(timing) + EncodeFinal(target.Final()) + EncodeEnd();
}

}  // namespace

int RunInstance(const DemoOptions& o, const InstanceRole& role) {
  SetUpProcess(o);
  if (getppid() == 1) return 1;
  const KeySet keys = MakeKeys(o);
  absl::StatusOr<std::unique_ptr<Target>> target =
      MakeTarget(o, role.prefix, keys);
  if (!target.ok()) {
    std::fprintf(stderr, "tokenlease demo: instance %d: %s\n", role.index,
                 target.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<int64_t> start_ns = Handshake(role);
  if (!start_ns.ok()) {
    std::fprintf(stderr, "instance %d: no start time from the parent\n",
                 role.index);
    return 1;
  }
  Load load{o, role.index, keys, **target, *start_ns, HotKeys(o)};
  std::vector<ThreadResult> results;
  results.reserve(o.threads);
  for (int t = 0; t < o.threads; ++t) {
    results.emplace_back(NumWindows(o),
                         static_cast<int64_t>(keys.names.size()));
  }
  std::vector<LiveLatency> live(o.live ? o.threads : 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      RunThread(load, t, o.live ? &live[t] : nullptr, results[t]);
    });
  }
  MonitorResult m = RunMonitor(load, role, results, live);
  for (std::thread& th : threads) th.join();
  if (m.stopped_in_window >= 0) {
    // Stopped early: the partial window's sample, at the stop.
    m.samples += EncodeSample(m.stopped_in_window, load.target.Keys(),
                              CurrentRssKb(), load.target.CommandsSent());
  }
  // Transitions up to the end of the run (not the shutdown's).
  m.samples += HealthLines(**target);
  (*target)->Stop();
  const std::string out = m.samples + Results(o, results, **target);
  target->reset();
  if (!WriteAll(role.data_fd, out)) return 1;
  close(role.data_fd);
  return 0;
}

}  // namespace tokenlease::tools
