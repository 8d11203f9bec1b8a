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
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "demo/chart.h"
#include "demo/flags.h"
#include "demo/format.h"
#include "demo/instance.h"
#include "demo/live.h"
#include "demo/protocol.h"
#include "demo/redis_probe.h"
#include "demo/redis_server.h"
#include "demo/report.h"
#include "demo/sizing.h"
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
  // `server`: the private server (null for none), for the outage.
  Parent(const DemoOptions& o, RedisProbe* probe, RedisServer* server)
      : o_(o),
        probe_(probe),
        prefix_(absl::StrCat("lh:", getpid(), ":", SteadyNs() % 1000000, ":")),
        server_(server),
        live_(o, LiveView::StdoutIsTerminal()) {
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
      if (o_.live && run_.interrupted_ns == 0 && run_.start_ns != 0) {
        live_.Update(run_.reports, OutageState(), SteadyNs());
      }
    }
    return Finish();
  }

 private:
  // The instances start with SIGINT blocked and ignore it before unblocking
  // it, so a Ctrl-C now cannot kill one before it can ignore it.
  absl::Status SpawnAll() {
    // The instances run the resolved options; the URL goes in the
    // environment, and only the parent writes files.
    std::vector<std::pair<std::string, std::string>> overrides =
        ResolvedFlagValues(o_);
    overrides.insert(overrides.end(),
                     {{"url", ""}, {"csv", ""}, {"chart", ""}});
    const std::vector<std::string> args = DemoFlagArgs(overrides);
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
    live_.Note(run_.interrupted_ns < run_.start_ns  // the start time was sent
                   ? "\ninterrupted before the start: stopping the instances"
                   : absl::StrFormat("\ninterrupted at t=%.1f s: stopping the "
                                     "instances",
                                     static_cast<double>(run_.interrupted_ns -
                                                         run_.start_ns) /
                                         1e9));
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
    if (o_.live) live_.Start(run_.start_ns);
  }

  bool TimedOut() const {
    const int64_t now = SteadyNs();
    return run_.start_ns == 0 ? now > ready_deadline_ : now > end_deadline_;
  }

  // With an outage: takes the private redis-server away at --outage_at
  // into the run (--outage_kind: SIGSTOP, or kill -9), and brings it back
  // (SIGCONT, or a restart, empty) --outage_seconds later.
  void DriveOutage() {
    if (!o_.outage || server_ == nullptr || run_.start_ns == 0) return;
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
        live_.Note(absl::StrFormat(
            "  # %.2fs redis-server %s: %s decides until it is back", t,
            o_.outage_kind == OutageKind::kKill ? "killed (kill -9)"
                                                : "stopped (SIGSTOP)",
            FailureModeName(o_.failure_mode)));
      }
    } else if (outage_ == Outage::kStopped && t >= o_.OutageEnd()) {
      EndOutage();
      if (o_.live) {
        live_.Note(absl::StrFormat("  # %.2fs redis-server %s", t,
                                   o_.outage_kind == OutageKind::kKill
                                       ? "restarted, empty"
                                       : "resumed (SIGCONT)"));
      }
    }
  }

  // The outage as the footer shows it.
  OutageNow OutageState() const {
    if (!o_.outage || server_ == nullptr) return OutageNow::kNone;
    switch (outage_) {
      case Outage::kBefore:
        return OutageNow::kBefore;
      case Outage::kStopped:
        return OutageNow::kOn;
      case Outage::kOver:
        break;
    }
    return OutageNow::kOver;
  }

  // How long a poll may wait: 50 ms, or less if the outage starts or ends
  // sooner (so that it starts and ends on time, not up to 50 ms late).
  int PollTimeoutMs() const {
    int64_t wait_ns = 50'000'000;
    if (o_.outage && server_ != nullptr && run_.start_ns != 0 &&
        outage_ != Outage::kOver) {
      const double at =
          outage_ == Outage::kBefore ? o_.outage_at : o_.OutageEnd();
      const int64_t due = run_.start_ns + static_cast<int64_t>(at * 1e9);
      wait_ns = std::clamp<int64_t>(due - SteadyNs(), 0, wait_ns);
    }
    return static_cast<int>((wait_ns + 999'999) / 1'000'000);
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
    if (poll(fds.data(), fds.size(), PollTimeoutMs()) < 0 && errno != EINTR) {
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

  // Reaps the instances, then the CSV, the chart and the summary.
  int Finish() {
    live_.Finish();
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
    std::string chart;
    if (!o_.chart.empty()) {
      if (absl::Status s = WriteChart(o_, run_, totals); !s.ok()) {
        std::fprintf(stderr, "tokenlease demo: %s\n",
                     std::string(s.message()).c_str());
      } else {
        chart = absl::StrCat(
            "chart: ", o_.chart, " (SVG, open it in a browser: ",
            o_.keys == KeyDist::kHot ? "the hot key's" : "the hottest key's",
            " admitted rate per window, all instances and each, against the "
            "limit",
            o_.outage && o_.mode != Mode::kLocal ? ", the outage shaded" : "",
            ")\n");
      }
    }
    std::printf("%s%s", Summary(o_, run_, totals, redis_).c_str(),
                chart.c_str());
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
  LiveView live_;
};

// The parent process: server, banner, run, load average. `choices` and
// `note`: the banner's account of what was chosen and why (sizing.h), and
// of an outage left out.
int RunParent(DemoOptions o, const std::string& choices,
              const std::string& note) {
  InstallSignalHandlers();
  // One time stamp names both files of the run.
  const std::time_t now = std::time(nullptr);
  if (o.csv == kAuto) o.csv = AutoPath(o, "csv", now);
  if (o.chart == kAuto) o.chart = AutoPath(o, "svg", now);
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
  std::printf("%s%s", Banner(o, choices).c_str(), note.c_str());
  std::fflush(stdout);
  const int rc = Parent(o, redis->probe.has_value() ? &*redis->probe : nullptr,
                        redis->server.get())
                     .Run();
  std::printf("# load average after the run: %s\n", LoadAverage().c_str());
  return rc;  // ~RedisSetup stops the private server and removes its dir
}

// The outage needs the private redis-server: with --url or in local mode
// there is none to take away. Asked for on the command line, that is an
// error; left on by default, the run goes without it and `*note` says so.
absl::Status CheckOutage(DemoOptions& o, std::string* note) {
  if (!o.outage || (o.url.empty() && o.mode != Mode::kLocal)) {
    return absl::OkStatus();
  }
  const char* why = o.mode == Mode::kLocal
                        ? "--mode=local uses no Redis"
                        : "the demo only takes away the redis-server it "
                          "started itself, not one given by --url (or "
                          "$TOKENLEASE_REDIS_URL)";
  if (OutageFlagsGiven()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an outage cannot be run: ", why, "; drop the --outage* flags"));
  }
  o.outage = false;
  *note = absl::StrCat("outage: none (", why, ")\n");
  return absl::OkStatus();
}

}  // namespace

int RunDemo(int argc, char** argv) {
  ConfigureDemoUsage();
  RecordCommandLine(argc, argv);
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() != 2 || std::string(positional[1]) != "demo") {
    std::fprintf(stderr,
                 "tokenlease demo: unexpected argument '%s'; the demo takes "
                 "only flags (see `tokenlease demo --help`)\n",
                 positional.size() > 2 ? positional[2] : "");
    return 2;
  }
  absl::StatusOr<DemoOptions> requested = OptionsFromFlags();
  const InstanceRole role = RoleFromFlags();
  const int cpus = UsableCpus();
  DemoOptions o;
  std::string note;
  absl::Status s = requested.status();
  if (s.ok()) {
    // An instance gets every choice made by the parent on its command line.
    o = ResolveOptions(*requested, cpus);
    if (!role.is_instance()) s = CheckOutage(o, &note);
  }
  if (s.ok()) s = ValidateOptions(o);
  if (!s.ok()) {
    std::fprintf(stderr,
                 "tokenlease demo: %s\n(see `tokenlease demo --help`)\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  if (role.is_instance()) return RunInstance(o, role);
  const std::string choices = DescribeChoices(*requested, o, cpus);
  return RunParent(std::move(o), choices, note);
}

}  // namespace tokenlease::tools
