// The parent of `tokenlease demo` (demo.h): the Redis server, the instance
// processes, the poll loop over their pipes, Ctrl-C, and the report.
#include "demo/demo.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "demo/flags.h"
#include "demo/format.h"
#include "demo/instance.h"
#include "demo/live.h"
#include "demo/protocol.h"
#include "demo/redis_probe.h"
#include "demo/redis_server.h"
#include "demo/report.h"
#include "demo/spawn.h"
#include "demo/workload.h"
#include "redis/endpoint.h"

namespace tokenlease::tools {
namespace {

// The instances get 200 ms to read the start time before it comes.
constexpr int64_t kStartDelayNs = 200'000'000;
// How long the instances may take to get ready, to finish after the run,
// and to send their results after a Ctrl-C.
constexpr int64_t kReadyTimeoutNs = 60'000'000'000;
constexpr int64_t kEndTimeoutNs = 120'000'000'000;
constexpr int64_t kStopTimeoutNs = 30'000'000'000;

std::atomic<int> g_sigints{0};
std::atomic<int> g_sigterms{0};
void OnSigint(int) { g_sigints.fetch_add(1, std::memory_order_relaxed); }
void OnSigterm(int) { g_sigterms.fetch_add(1, std::memory_order_relaxed); }

bool Interrupted() {
  return g_sigints.load(std::memory_order_relaxed) > 0 ||
         g_sigterms.load(std::memory_order_relaxed) > 0;
}

// Ctrl-C stops the run and prints its summary (unless SIGINT was ignored
// when we were started, e.g. in the background); SIGTERM ends it at once,
// still stopping the server. Both leave blocking calls with EINTR.
void InstallSignalHandlers() {
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  struct sigaction old {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // poll() still returns EINTR
  sa.sa_handler = OnSigint;
  sigaction(SIGINT, &sa, &old);
  if (old.sa_handler == SIG_IGN) sigaction(SIGINT, &old, nullptr);
  sa.sa_handler = OnSigterm;
  sigaction(SIGTERM, &sa, nullptr);
}

// The run's Redis server: a private one unless --url was given.
struct RedisSetup {
  std::unique_ptr<RedisServer> server;
  std::optional<RedisProbe> probe;
};

// Starts or connects to the server, prints which it is, and clears its
// statistics; for local mode, only prints the load average.
absl::StatusOr<RedisSetup> SetUpRedis(DemoOptions& o) {
  RedisSetup r;
  if (o.mode == Mode::kLocal) {
    std::printf("# no redis-server (local mode); load average: %s\n",
                LoadAverage().c_str());
    return r;
  }
  if (o.url.empty()) {
    absl::StatusOr<std::unique_ptr<RedisServer>> server =
        RedisServer::Start(Interrupted);
    if (!server.ok()) return server.status();
    r.server = *std::move(server);
    o.url = r.server->url();
  }
  absl::StatusOr<RedisProbe> probe = RedisProbe::Connect(o.url);
  if (!probe.ok()) return probe.status();
  r.probe.emplace(*std::move(probe));
  const std::string version = absl::StrCat(
      "v=", InfoText(r.probe->Command("INFO server"), "redis_version"));
  if (r.server != nullptr) {
    std::printf(
        "# redis-server %s on 127.0.0.1:%d (pid %d); load average: %s\n",
        version.c_str(), r.server->port(), static_cast<int>(r.server->pid()),
        LoadAverage().c_str());
  } else {
    std::printf("# redis-server %s at %s; load average: %s\n", version.c_str(),
                internal::RedactRedisUrl(o.url).c_str(), LoadAverage().c_str());
  }
  r.probe->Command("CONFIG RESETSTAT");
  return r;
}

class Parent {
 public:
  // `server`: the private server (null for none), for --outage_at.
  Parent(const DemoOptions& o, RedisProbe* probe, RedisServer* server)
      : o_(o),
        probe_(probe),
        prefix_(absl::StrCat("lh:", getpid(), ":", SteadyNs() % 1000000, ":")),
        server_(server) {
    run_.windows = NumWindows(o);
    redis_.ok = probe != nullptr;
    redis_.mem_per_window.assign(run_.windows, -1);
    if (probe_ != nullptr) {
      redis_.mem_before = probe_->Info("memory", "used_memory");
      cpu_before_usec_ = probe_->CpuUsec();
    }
  }

  // Runs the instances to the end and prints the report; the exit status.
  int Run() {
    if (absl::Status s = SpawnAll(); !s.ok()) {
      std::fprintf(stderr, "tokenlease demo: %s\n", s.ToString().c_str());
      KillAll();
      return 1;
    }
    for (;;) {
      if (std::optional<int> code = HandleSignals()) return *code;
      if (std::all_of(eof_.begin(), eof_.end(), [](bool e) { return e; })) {
        break;
      }
      SendStartIfReady();
      DriveOutage();
      if (TimedOut()) {
        std::fprintf(stderr, "timed out waiting for the instances\n");
        KillAll();
        return 1;
      }
      SampleRedisMemory();
      if (!PollPipes()) {
        KillAll();
        return 1;
      }
      if (o_.live && run_.interrupted_ns == 0) {
        PrintLiveRows(o_, run_.reports, &next_live_w_);
      }
    }
    return Finish();
  }

 private:
  // The instances start with SIGINT blocked and ignore it before unblocking
  // it, so a Ctrl-C now cannot kill one before it can ignore it.
  absl::Status SpawnAll() {
    const std::vector<std::string> args =
        DemoFlagArgs({{"url", ""}, {"csv", ""}});  // the URL: environment
    sigset_t sigint, old_mask;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    sigprocmask(SIG_BLOCK, &sigint, &old_mask);
    absl::Status status;
    for (int i = 0; i < o_.instances && status.ok(); ++i) {
      absl::StatusOr<ChildProcess> c = SpawnInstance(i, args, prefix_, o_.url);
      if (!c.ok()) {
        status = c.status();
        break;
      }
      procs_.push_back(*c);
      lines_.emplace_back();
      eof_.push_back(false);
      run_.reports.emplace_back(run_.windows, o_.live);
    }
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return status;
  }

  // SIGTERM ends an instance (it has no handler); SIGCONT lets a stopped one
  // receive it.
  void KillAll() {
    EndOutage();
    for (const ChildProcess& c : procs_) {
      Signal(c, SIGTERM);
      Signal(c, SIGCONT);
    }
    for (ChildProcess& c : procs_) Reap(c);
  }

  // An exit status if the signals seen end the run now.
  std::optional<int> HandleSignals() {
    if (g_sigterms.load(std::memory_order_relaxed) > 0) {
      std::fprintf(stderr, "terminated: killing the instances\n");
      KillAll();
      return 128 + SIGTERM;
    }
    const int sigints = g_sigints.load(std::memory_order_relaxed);
    if (sigints > 0 && run_.start_ns == 0) {
      KillAll();
      std::printf("\ninterrupted before the run started\n");
      return 0;
    }
    if (sigints > 1) {
      std::fprintf(stderr, "interrupted again: killing the instances\n");
      KillAll();
      return 130;
    }
    if (sigints > 0 && run_.interrupted_ns == 0) RequestStop();
    return std::nullopt;
  }

  // Asks the instances to stop (they send their results as at the end of
  // a run) by closing their control pipes.
  void RequestStop() {
    run_.interrupted_ns = SteadyNs();
    if (run_.interrupted_ns < run_.start_ns) {  // the start time was sent
      std::printf("\ninterrupted before the start: stopping the instances\n");
    } else {
      std::printf(
          "\ninterrupted at t=%.1f s: stopping the instances\n",
          static_cast<double>(run_.interrupted_ns - run_.start_ns) / 1e9);
    }
    std::fflush(stdout);
    for (ChildProcess& c : procs_) {
      if (c.ctl_fd >= 0) close(c.ctl_fd);
      c.ctl_fd = -1;
    }
    end_deadline_ =
        std::min(end_deadline_, run_.interrupted_ns + kStopTimeoutNs);
  }

  // Once every instance is ready: the common start time.
  void SendStartIfReady() {
    if (run_.start_ns != 0) return;
    for (const InstanceReport& r : run_.reports) {
      if (!r.ready) return;
    }
    run_.start_ns = SteadyNs() + kStartDelayNs;
    end_deadline_ =
        run_.start_ns + static_cast<int64_t>(o_.seconds * 1e9) + kEndTimeoutNs;
    for (const ChildProcess& c : procs_) {
      WriteAll(c.ctl_fd, EncodeStart(run_.start_ns));
    }
    if (o_.live) {
      std::printf("%s", LiveHeader(o_).c_str());
      std::fflush(stdout);
    }
  }

  bool TimedOut() const {
    const int64_t now = SteadyNs();
    return run_.start_ns == 0 ? now > ready_deadline_ : now > end_deadline_;
  }

  // --outage_at: takes the private redis-server away at that time into
  // the run (--outage_kind: SIGSTOP, or kill -9), and brings it back
  // (SIGCONT, or a restart, empty) --outage_seconds later.
  void DriveOutage() {
    if (o_.outage_at <= 0 || server_ == nullptr || run_.start_ns == 0) return;
    const double t = static_cast<double>(SteadyNs() - run_.start_ns) / 1e9;
    if (outage_ == Outage::kBefore && t >= o_.outage_at) {
      if (o_.outage_kind == OutageKind::kKill) {
        server_->Kill();
        // The server's counters die with it (AppendRedis says so).
        redis_.restarted = true;
      } else {
        kill(server_->pid(), SIGSTOP);
      }
      outage_ = Outage::kStopped;
      if (o_.live) {
        std::printf("# t=%.2fs: redis-server %s\n", t,
                    o_.outage_kind == OutageKind::kKill ? "killed (kill -9)"
                                                        : "stopped (SIGSTOP)");
      }
    } else if (outage_ == Outage::kStopped &&
               t >= o_.outage_at + o_.outage_seconds) {
      EndOutage();
      if (o_.live) {
        std::printf("# t=%.2fs: redis-server %s\n", t,
                    o_.outage_kind == OutageKind::kKill ? "restarted, empty"
                                                        : "resumed");
      }
    }
  }
  void EndOutage() {
    if (outage_ != Outage::kStopped) return;
    outage_ = Outage::kOver;
    if (o_.outage_kind == OutageKind::kStop) {
      kill(server_->pid(), SIGCONT);
      return;
    }
    if (absl::Status s = server_->Restart(Interrupted); !s.ok()) {
      std::fprintf(stderr, "tokenlease demo: restarting redis-server: %s\n",
                   std::string(s.message()).c_str());
      return;
    }
    // The probe's connection died with the old server.
    if (absl::StatusOr<RedisProbe> p = RedisProbe::Connect(server_->url());
        p.ok() && probe_ != nullptr) {
      *probe_ = *std::move(p);
    }
  }

  // Redis memory, once per window while the instances run (not while it
  // is stopped: the probe would wait).
  void SampleRedisMemory() {
    if (outage_ == Outage::kStopped) return;
    if (run_.start_ns == 0 || next_mem_w_ >= run_.windows) return;
    if (SteadyNs() < run_.start_ns + (next_mem_w_ + 1) * WindowNs(o_)) return;
    if (probe_ != nullptr) {
      redis_.mem_per_window[next_mem_w_] =
          probe_->Info("memory", "used_memory");
    }
    ++next_mem_w_;
  }

  // Waits up to 50 ms for the instances' lines and applies them; false if
  // one failed.
  bool PollPipes() {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t i = 0; i < procs_.size(); ++i) {
      if (eof_[i]) continue;
      fds.push_back(pollfd{procs_[i].data_fd, POLLIN, 0});
      who.push_back(i);
    }
    if (poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) {
      std::perror("poll");
      return false;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) && !Read(who[k])) {
        return false;
      }
    }
    return true;
  }

  // Reads what instance i has sent; false if it failed.
  bool Read(size_t i) {
    char buf[65536];
    const ssize_t n = read(procs_[i].data_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    InstanceReport& report = run_.reports[i];
    if (n <= 0) {
      eof_[i] = true;
      if (report.done) return true;
      std::fprintf(stderr, "instance %zu ended without its results\n", i);
      return false;
    }
    const absl::Status s = lines_[i].Feed(
        absl::string_view(buf, n),
        [&](absl::string_view line) { return ApplyLine(line, report); });
    if (!s.ok()) {
      std::fprintf(stderr, "instance %zu: %s\n", i, s.ToString().c_str());
    }
    return s.ok();
  }

  // After a Ctrl-C: only the windows that ran (the last one partial).
  void TrimToWindowsThatRan() {
    int64_t last = 0;
    for (const InstanceReport& r : run_.reports) {
      last = std::max(last, r.timing.last_ns);
    }
    run_.windows =
        last > run_.start_ns
            ? std::min(run_.windows, (last - run_.start_ns) / WindowNs(o_) + 1)
            : 0;
    for (InstanceReport& r : run_.reports) r.windows.resize(run_.windows);
    redis_.mem_per_window.resize(run_.windows);
  }

  // The end-of-run figures of the server.
  void ReadRedisFigures() {
    if (probe_ == nullptr) return;
    redis_.script_calls = probe_->ScriptCalls();
    redis_.script_usec = probe_->ScriptUsec();
    const int64_t cpu_end_usec = probe_->CpuUsec();
    if (cpu_before_usec_ >= 0 && cpu_end_usec >= cpu_before_usec_) {
      redis_.cpu_usec = cpu_end_usec - cpu_before_usec_;
    }
    redis_.commands_processed =
        probe_->Info("stats", "total_commands_processed");
    redis_.mem_end = probe_->Info("memory", "used_memory");
    redis_.dbsize = probe_->Integer("DBSIZE");
  }

  // Reaps the instances, then the CSV and the summary.
  int Finish() {
    EndOutage();
    for (ChildProcess& c : procs_) {
      const int status = Reap(c);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "an instance exited with status %d\n", status);
        KillAll();
        return 1;
      }
    }
    if (run_.interrupted_ns >=
        run_.start_ns + static_cast<int64_t>(o_.seconds * 1e9)) {
      run_.interrupted_ns = 0;  // after the load ended: the run is complete
    }
    if (run_.interrupted_ns != 0) TrimToWindowsThatRan();
    if (run_.windows == 0) {
      std::printf("\nnothing ran before the interruption\n");
      return 0;
    }
    ReadRedisFigures();
    const Totals totals = Aggregate(run_);
    if (!o_.csv.empty()) {
      if (absl::Status s = WriteCsv(o_, run_, totals, redis_); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
      }
    }
    std::printf("%s", Summary(o_, run_, totals, redis_).c_str());
    return 0;
  }

  const DemoOptions& o_;
  RedisProbe* probe_;  // null: no server (local mode)
  const std::string prefix_;
  std::vector<ChildProcess> procs_;
  std::vector<LineSplitter> lines_;
  std::vector<bool> eof_;
  RunRecord run_;
  RedisFigures redis_;
  int64_t cpu_before_usec_ = -1;  // the server's CPU time before the run
  RedisServer* const server_;     // null: --url or local mode
  enum class Outage { kBefore, kStopped, kOver } outage_ = Outage::kBefore;
  const int64_t ready_deadline_ = SteadyNs() + kReadyTimeoutNs;
  int64_t end_deadline_ = 0;
  int64_t next_mem_w_ = 0;
  int64_t next_live_w_ = 0;
};

// The parent process: server, banner, run, load average.
int RunParent(DemoOptions o) {
  InstallSignalHandlers();
  if (o.csv == kCsvAuto) o.csv = AutoCsvPath(o);
  if (o.outage_at > 0 && (!o.url.empty() || o.mode == Mode::kLocal)) {
    std::fprintf(stderr,
                 "tokenlease demo: --outage_at stops the demo's private "
                 "redis-server; it cannot be used with --url (or "
                 "$TOKENLEASE_REDIS_URL) or --mode=local\n");
    return 1;
  }
  absl::StatusOr<RedisSetup> redis = SetUpRedis(o);
  if (!redis.ok()) {
    if (Interrupted()) {
      std::fprintf(stderr, "interrupted while starting redis-server\n");
      return 130;
    }
    std::fprintf(stderr, "tokenlease demo: %s\n",
                 std::string(redis.status().message()).c_str());
    return 1;
  }
  std::printf("%s", Banner(o).c_str());
  std::fflush(stdout);
  const int rc = Parent(o, redis->probe.has_value() ? &*redis->probe : nullptr,
                        redis->server.get())
                     .Run();
  std::printf("# load average after the run: %s\n", LoadAverage().c_str());
  return rc;  // ~RedisSetup stops the private server and removes its dir
}

}  // namespace

int RunDemo(int argc, char** argv) {
  ConfigureDemoUsage();
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() != 2 || std::string(positional[1]) != "demo") {
    std::fprintf(stderr,
                 "tokenlease demo: unexpected argument '%s'; the demo takes "
                 "only flags (see `tokenlease demo --help`)\n",
                 positional.size() > 2 ? positional[2] : "");
    return 2;
  }
  absl::StatusOr<DemoOptions> o = OptionsFromFlags();
  if (!o.ok()) {
    std::fprintf(stderr,
                 "tokenlease demo: %s\n(see `tokenlease demo --help`)\n",
                 std::string(o.status().message()).c_str());
    return 2;
  }
  const InstanceRole role = RoleFromFlags();
  if (role.is_instance()) return RunInstance(*o, role);
  return RunParent(*std::move(o));
}

}  // namespace tokenlease::tools
