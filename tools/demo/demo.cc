// The parent of `tokenlease demo` (demo.h): the Redis server, the instance
// processes (this binary again, with the resolved options as flags), the
// poll loop over their pipes, the outage, Ctrl-C, and the report.
#include "demo/demo.h"

#include <fcntl.h>
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/chart.h"
#include "demo/flags.h"
#include "demo/format.h"
#include "demo/instance.h"
#include "demo/live.h"
#include "demo/protocol.h"
#include "demo/redis_probe.h"
#include "demo/redis_server.h"
#include "demo/report.h"
#include "demo/workload.h"
#include "redis/endpoint.h"

extern char** environ;  // POSIX: declared by no standard header

namespace tokenlease::tools {
namespace {

// The instances get 200 ms to read the start time before it comes; then
// how long they may take to get ready, to finish after the run, and to
// send their results after a Ctrl-C.
constexpr int64_t kStartDelayNs = 200'000'000;
constexpr int64_t kReadyTimeoutNs = 60'000'000'000;
constexpr int64_t kEndTimeoutNs = 120'000'000'000;
constexpr int64_t kStopTimeoutNs = 30'000'000'000;

std::atomic<int> g_sigints{0};
std::atomic<int> g_sigterms{0};

bool Interrupted() { return g_sigints.load() > 0 || g_sigterms.load() > 0; }

// Ctrl-C stops the run and prints its summary (unless SIGINT was ignored
// when we were started, e.g. in the background); SIGTERM ends it at once,
// still stopping the server. Both leave poll() with EINTR.
void InstallSignalHandlers() {
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  struct sigaction old {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = [](int) { g_sigints.fetch_add(1); };
  sigaction(SIGINT, &sa, &old);
  if (old.sa_handler == SIG_IGN) sigaction(SIGINT, &old, nullptr);
  sa.sa_handler = [](int) { g_sigterms.fetch_add(1); };
  sigaction(SIGTERM, &sa, nullptr);
}

// The parent's side of one instance process.
struct Child {
  pid_t pid = -1;
  int ctl_fd = -1;   // write end of the control pipe
  int data_fd = -1;  // read end of the data pipe
  LineSplitter lines;
  bool eof = false;
};

// Forks and execs instance `index` of this binary (/proc/self/exe) with
// `o`'s flags, its pipe ends and the run's key prefix; the URL goes in the
// environment (a password stays off the command line), and only the
// parent writes files.
absl::Status Spawn(const DemoOptions& o, int index, const std::string& prefix,
                   Child& c) {
  int ctl[2], data[2];
  if (pipe2(ctl, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe2");
  if (pipe2(data, O_CLOEXEC) != 0) {
    const int err = errno;
    close(ctl[0]);
    close(ctl[1]);
    return absl::ErrnoToStatus(err, "pipe2");
  }
  DemoOptions io = o;
  io.url = io.csv = io.chart = "";
  io.instance = index;
  io.ctl_fd = ctl[0];
  io.data_fd = data[1];
  io.prefix = prefix;
  std::vector<std::string> args = FlagArgs(io);
  args.insert(args.begin(), {"tokenlease", "demo"});
  std::vector<char*> argv, envp;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  // Built before fork: the child may only make async-signal-safe calls.
  std::string url = absl::StrCat(kRedisUrlEnv, "=");
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, url)) envp.push_back(*e);
  }
  url += o.url;
  envp.push_back(url.data());
  envp.push_back(nullptr);
  c.pid = fork();
  if (c.pid == 0) {
    // Keeps its pipe ends open across exec.
    fcntl(ctl[0], F_SETFD, 0);
    fcntl(data[1], F_SETFD, 0);
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(ctl[0]);
  close(data[1]);
  c.ctl_fd = ctl[1];
  c.data_fd = data[0];
  return c.pid < 0 ? absl::ErrnoToStatus(fork_errno, "fork") : absl::OkStatus();
}

// Waits for the child to end, closes its pipes; its wait status (-1 if it
// was reaped already).
int Reap(Child& c) {
  int status = -1;
  while (c.pid > 0 && waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  c.pid = -1;
  for (int* fd : {&c.ctl_fd, &c.data_fd}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  return status;
}

class Parent {
 public:
  // `server`: the private server to take away (null for none).
  Parent(const DemoOptions& o, RedisProbe* probe, RedisServer* server)
      : o_(o),
        probe_(probe),
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
      if (std::all_of(children_.begin(), children_.end(),
                      [](const Child& c) { return c.eof; })) {
        return Finish();
      }
      SendStartIfReady();
      DriveOutage();
      if (SteadyNs() > (run_.start_ns == 0 ? ready_deadline_ : end_deadline_)) {
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
  }

 private:
  // The instances start with SIGINT blocked and ignore it before unblocking
  // it, so a Ctrl-C now cannot kill one before it can ignore it.
  absl::Status SpawnAll() {
    const std::string prefix =
        absl::StrCat("lh:", getpid(), ":", SteadyNs() % 1000000, ":");
    sigset_t sigint, old_mask;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    sigprocmask(SIG_BLOCK, &sigint, &old_mask);
    children_ = std::vector<Child>(o_.instances);
    absl::Status status;
    for (int i = 0; i < o_.instances && status.ok(); ++i) {
      status = Spawn(o_, i, prefix, children_[i]);
      run_.reports.emplace_back(run_.windows);
    }
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return status;
  }

  // SIGTERM ends an instance (it has no handler); SIGCONT lets a stopped one
  // receive it.
  void KillAll() {
    EndOutage();
    for (const Child& c : children_) {
      if (c.pid > 0) {
        kill(c.pid, SIGTERM);
        kill(c.pid, SIGCONT);
      }
    }
    for (Child& c : children_) Reap(c);
  }

  // An exit status if the signals seen end the run now.
  std::optional<int> HandleSignals() {
    if (g_sigterms.load() > 0) {
      std::fprintf(stderr, "terminated: killing the instances\n");
      KillAll();
      return 128 + SIGTERM;
    }
    const int sigints = g_sigints.load();
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
    if (sigints == 0 || run_.interrupted_ns != 0) return std::nullopt;
    // Asks the instances to stop (they send their results as at the end of
    // a run) by closing their control pipes.
    run_.interrupted_ns = SteadyNs();
    live_.Note(run_.interrupted_ns < run_.start_ns  // the start time was sent
                   ? "\ninterrupted before the start: stopping the instances"
                   : absl::StrFormat(
                         "\ninterrupted at t=%.1f s: stopping the instances",
                         (run_.interrupted_ns - run_.start_ns) / 1e9));
    for (Child& c : children_) {
      if (c.ctl_fd >= 0) close(c.ctl_fd);
      c.ctl_fd = -1;
    }
    end_deadline_ =
        std::min(end_deadline_, run_.interrupted_ns + kStopTimeoutNs);
    return std::nullopt;
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
    for (const Child& c : children_) {
      WriteAll(c.ctl_fd, absl::StrCat(run_.start_ns, "\n"));
    }
    if (o_.live) live_.Start(run_.start_ns);
  }

  // Takes the private redis-server away at --outage_at into the run
  // (--outage_kind: SIGSTOP, or kill -9), and brings it back (SIGCONT, or a
  // restart, empty) --outage_seconds later.
  void DriveOutage() {
    if (OutageState() == OutageNow::kNone || run_.start_ns == 0) return;
    const double t = (SteadyNs() - run_.start_ns) / 1e9;
    const bool kill9 = o_.outage_kind == OutageKind::kKill;
    if (outage_ == OutageNow::kBefore && t >= o_.outage_at) {
      if (kill9) {
        server_->Kill();
        redis_.restarted = true;  // its counters died with it
      } else {
        kill(server_->pid(), SIGSTOP);
      }
      outage_ = OutageNow::kOn;
      if (o_.live) {
        live_.Note(absl::StrFormat(
            "  # %.2fs redis-server %s: %s decides until it is back", t,
            kill9 ? "killed (kill -9)" : "stopped (SIGSTOP)",
            FailureModeName(o_.failure_mode)));
      }
    } else if (outage_ == OutageNow::kOn && t >= o_.OutageEnd()) {
      EndOutage();
      if (o_.live) {
        live_.Note(
            absl::StrFormat("  # %.2fs redis-server %s", t,
                            kill9 ? "restarted, empty" : "resumed (SIGCONT)"));
      }
    }
  }

  OutageNow OutageState() const {
    return o_.outage && server_ != nullptr ? outage_ : OutageNow::kNone;
  }

  void EndOutage() {
    if (OutageState() != OutageNow::kOn) return;
    outage_ = OutageNow::kOver;
    if (o_.outage_kind == OutageKind::kStop) {
      kill(server_->pid(), SIGCONT);
    } else if (absl::Status s = server_->Restart(Interrupted); !s.ok()) {
      std::fprintf(stderr, "tokenlease demo: restarting redis-server: %s\n",
                   std::string(s.message()).c_str());
    } else if (absl::StatusOr<RedisProbe> p =
                   RedisProbe::Connect(server_->url());
               p.ok()) {
      *probe_ = *std::move(p);  // the old connection died with the server
    }
  }

  // Redis memory, once per window while the instances run (not while it is
  // stopped: the probe would wait).
  void SampleRedisMemory() {
    if (outage_ == OutageNow::kOn || run_.start_ns == 0 ||
        next_mem_w_ >= run_.windows ||
        SteadyNs() < run_.start_ns + (next_mem_w_ + 1) * WindowNs(o_)) {
      return;
    }
    if (probe_ != nullptr) {
      redis_.mem_per_window[next_mem_w_] =
          probe_->Info("memory", "used_memory");
    }
    ++next_mem_w_;
  }

  // Waits up to 50 ms (less if the outage starts or ends sooner, so that it
  // does so on time) for the instances' lines and applies them; false if
  // one failed.
  bool PollPipes() {
    int64_t wait_ns = 50'000'000;
    if (run_.start_ns != 0 && (OutageState() == OutageNow::kBefore ||
                               OutageState() == OutageNow::kOn)) {
      const double at =
          outage_ == OutageNow::kBefore ? o_.outage_at : o_.OutageEnd();
      wait_ns = std::clamp<int64_t>(
          run_.start_ns + static_cast<int64_t>(at * 1e9) - SteadyNs(), 0,
          wait_ns);
    }
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].eof) continue;
      fds.push_back(pollfd{children_[i].data_fd, POLLIN, 0});
      who.push_back(i);
    }
    if (poll(fds.data(), fds.size(),
             static_cast<int>((wait_ns + 999'999) / 1'000'000)) < 0 &&
        errno != EINTR) {
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
    Child& c = children_[i];
    const ssize_t n = read(c.data_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    InstanceReport& report = run_.reports[i];
    if (n <= 0) {
      c.eof = true;
      if (!report.done) {
        std::fprintf(stderr, "instance %zu ended without its results\n", i);
      }
      return report.done;
    }
    const absl::Status s = c.lines.Feed(
        absl::string_view(buf, n),
        [&](absl::string_view line) { return ApplyLine(line, report); });
    if (!s.ok()) {
      std::fprintf(stderr, "instance %zu: %s\n", i, s.ToString().c_str());
    }
    return s.ok();
  }

  // Reaps the instances, then the CSV, the chart and the summary.
  int Finish() {
    live_.Finish();
    EndOutage();
    for (Child& c : children_) {
      if (const int status = Reap(c);
          !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "an instance exited with status %d\n", status);
        KillAll();
        return 1;
      }
    }
    if (run_.interrupted_ns >=
        run_.start_ns + static_cast<int64_t>(o_.seconds * 1e9)) {
      run_.interrupted_ns = 0;  // after the load ended: the run is complete
    }
    if (run_.interrupted_ns != 0) {
      // Only the windows that ran, the last one partial.
      int64_t last = 0;
      for (const InstanceReport& r : run_.reports)
        last = std::max(last, r.last_ns);
      run_.windows = last > run_.start_ns
                         ? std::min(run_.windows,
                                    (last - run_.start_ns) / WindowNs(o_) + 1)
                         : 0;
      for (InstanceReport& r : run_.reports) r.windows.resize(run_.windows);
      redis_.mem_per_window.resize(run_.windows);
    }
    if (run_.windows == 0) {
      std::printf("\nnothing ran before the interruption\n");
      return 0;
    }
    if (probe_ != nullptr) {
      redis_.script_calls = probe_->ScriptCalls();
      redis_.script_usec = probe_->ScriptUsec();
      const int64_t cpu_end = probe_->CpuUsec();
      if (cpu_before_usec_ >= 0 && cpu_end >= cpu_before_usec_) {
        redis_.cpu_usec = cpu_end - cpu_before_usec_;
      }
      redis_.commands_processed =
          probe_->Info("stats", "total_commands_processed");
      redis_.mem_end = probe_->Info("memory", "used_memory");
      redis_.dbsize = probe_->Integer("DBSIZE");
    }
    const Totals totals = Aggregate(run_);
    if (!o_.csv.empty()) {
      if (absl::Status s = WriteCsv(o_, run_, totals, redis_); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
      }
    }
    std::string chart;
    if (absl::Status s =
            o_.chart.empty() ? absl::OkStatus() : WriteChart(o_, run_, totals);
        !s.ok()) {
      std::fprintf(stderr, "tokenlease demo: %s\n",
                   std::string(s.message()).c_str());
    } else if (!o_.chart.empty()) {
      chart = absl::StrCat(
          "chart: ", o_.chart, " (SVG, open it in a browser: ",
          o_.keys == KeyDist::kHot ? "the hot key's" : "the hottest key's",
          " admitted rate per window, all instances and each, against the "
          "limit",
          o_.HasOutage() ? ", the outage shaded" : "", ")\n");
    }
    std::printf("%s%s", Summary(o_, run_, totals, redis_).c_str(),
                chart.c_str());
    return 0;
  }

  const DemoOptions& o_;
  RedisProbe* const probe_;    // null: no server (local mode)
  RedisServer* const server_;  // null: --url or local mode
  LiveView live_;
  std::vector<Child> children_;
  RunRecord run_;
  RedisFigures redis_;
  int64_t cpu_before_usec_ = -1;  // the server's CPU time before the run
  OutageNow outage_ = OutageNow::kBefore;
  const int64_t ready_deadline_ = SteadyNs() + kReadyTimeoutNs;
  int64_t end_deadline_ = 0;
  int64_t next_mem_w_ = 0;
};

// The parent process: the server (a private one unless --url; none in
// local mode), the banner, the run; `choices` and `note` say what was
// chosen and why, and why an outage was left out.
int RunParent(DemoOptions o, const std::string& choices,
              const std::string& note) {
  InstallSignalHandlers();
  const std::time_t now = std::time(nullptr);  // names both files of the run
  if (o.csv == kAuto) o.csv = AutoPath(o, "csv", now);
  if (o.chart == kAuto) o.chart = AutoPath(o, "svg", now);
  std::unique_ptr<RedisServer> server;
  std::optional<RedisProbe> probe;
  if (o.mode == Mode::kLocal) {
    std::printf("# no redis-server (local mode); load average: %s\n",
                LoadAverage().c_str());
  } else {
    absl::Status s;
    if (o.url.empty()) {
      absl::StatusOr<std::unique_ptr<RedisServer>> started =
          RedisServer::Start(Interrupted);
      s = started.status();
      if (s.ok()) {
        server = *std::move(started);
        o.url = server->url();
      }
    }
    absl::StatusOr<RedisProbe> p =
        s.ok() ? RedisProbe::Connect(o.url) : absl::StatusOr<RedisProbe>(s);
    if (!p.ok()) {
      if (Interrupted()) {
        std::fprintf(stderr, "interrupted while starting redis-server\n");
        return 130;
      }
      std::fprintf(stderr, "tokenlease demo: %s\n",
                   std::string(p.status().message()).c_str());
      return 1;
    }
    probe.emplace(*std::move(p));
    std::printf("%s",
                absl::StrFormat(
                    "# redis-server v=%s %s; load average: %s\n",
                    InfoText(probe->Command("INFO server"), "redis_version"),
                    server != nullptr
                        ? absl::StrFormat("on 127.0.0.1:%d (pid %d)",
                                          server->port(), server->pid())
                        : absl::StrCat("at ", internal::RedactRedisUrl(o.url)),
                    LoadAverage())
                    .c_str());
    probe->Command("CONFIG RESETSTAT");
  }
  std::printf("%s%s", Banner(o, choices).c_str(), note.c_str());
  std::fflush(stdout);
  const int rc =
      Parent(o, probe.has_value() ? &*probe : nullptr, server.get()).Run();
  std::printf("# load average after the run: %s\n", LoadAverage().c_str());
  return rc;  // ~RedisServer stops the private server
}

// The outage needs the private redis-server: with --url or in local mode
// there is none to take away. Asked for on the command line, that is an
// error; left on by default, the run goes without it and `*note` says so.
absl::Status CheckOutage(DemoOptions& o, const CommandLine& c,
                         std::string* note) {
  if (!o.outage || (o.url.empty() && o.mode != Mode::kLocal)) {
    return absl::OkStatus();
  }
  const char* why = o.mode == Mode::kLocal
                        ? "--mode=local uses no Redis"
                        : "the demo only takes away the redis-server it "
                          "started itself, not one given by --url (or "
                          "$TOKENLEASE_REDIS_URL)";
  for (const char* flag :
       {"outage", "outage_at", "outage_seconds", "outage_kind"}) {
    if (c.given.contains(flag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an outage cannot be run: ", why, "; drop the --outage* flags"));
    }
  }
  o.outage = false;
  *note = absl::StrCat("outage: none (", why, ")\n");
  return absl::OkStatus();
}

}  // namespace

int RunDemo(int argc, char** argv) {
  absl::StatusOr<CommandLine> c = ParseFlags(
      std::vector<std::string>(argv + std::min(argc, 2), argv + argc));
  const int cpus = UsableCpus();
  DemoOptions o;
  std::string note;
  absl::Status s = c.status();
  if (s.ok() && c->help) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  if (s.ok()) {
    // An instance gets every choice the parent made as a flag.
    o = ResolveOptions(c->options, cpus);
    if (o.instance < 0) s = CheckOutage(o, *c, &note);
  }
  if (s.ok()) s = ValidateOptions(o);
  if (!s.ok()) {
    std::fprintf(stderr,
                 "tokenlease demo: %s\n(see `tokenlease demo --help`)\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  if (o.instance >= 0) return RunInstance(o);
  return RunParent(o, DescribeChoices(c->options, o, cpus), note);
}

}  // namespace tokenlease::tools
