// The parent of `tokenlease demo` (demo.h): the Redis server, the instance
// processes (this binary again, with the resolved options as flags, and a
// socket each), the poll loop over their sockets, the outage, Ctrl-C, and
// the report.
#include "demo/demo.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "demo/flags.h"
#include "demo/live.h"
#include "demo/protocol.h"
#include "demo/report.h"
#include "demo/targets.h"
#include "demo/workload.h"
#include "redis/endpoint.h"
#include "redis/script_call.h"
#include "support/redis_cluster.h"
#include "support/redis_info.h"
#include "support/redis_server.h"
#include "support/sync_redis.h"
#include "support/tls_certs.h"

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

std::atomic<int> g_sigints{0}, g_sigterms{0};

// What the parent knows about the outage now.
enum class OutageNow { kNone, kBefore, kOn, kOver };

// Prints a line of the live view at once.
void Print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

bool Interrupted() { return g_sigints > 0 || g_sigterms > 0; }

// How busy the machine was, printed beside the run (a shared machine's
// other load shows in every figure).
std::string LoadAverage() {
  double l[3];
  return getloadavg(l, 3) == 3
             ? absl::StrFormat("%.2f %.2f %.2f", l[0], l[1], l[2])
             : "?";
}

// Blocks SIGINT while it lives: a process forked meanwhile starts with it
// blocked (exec keeps the mask), out of reach of a Ctrl-C at the terminal.
// For the instances (they unblock it once they ignore it), and for the
// cluster's nodes (RedisClusterOptions has no own_process_group).
class SigintBlocked {
 public:
  SigintBlocked() {
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    sigprocmask(SIG_BLOCK, &sigint, &old_);
  }
  ~SigintBlocked() { sigprocmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

// The run's Redis: the private server or cluster (neither with --url), its
// certificates (--tls), and the parent's own connection to each node
// (plaintext; none in local mode; a server is node 0).
struct Redis {
  struct Reading {  // a node's CPU time, script calls and their time
    int64_t cpu = -1, calls = 0, usec = 0;
  };
  std::unique_ptr<support::TempTlsFiles> certs;
  std::unique_ptr<support::RedisServer> server;
  std::unique_ptr<support::RedisCluster> cluster;
  std::vector<std::optional<support::SyncRedis>> clients;
  std::vector<int> primaries{0};  // the nodes serving slots now

  // Node `i`'s server; nullptr with --url.
  support::RedisServer* node(int i) {
    return cluster != nullptr ? &cluster->node(i) : server.get();
  }
  // INFO `section`'s text of node `i`; "" without a connection or an answer.
  std::string Info(int i, const char* section) {
    absl::StatusOr<std::string> info =
        i < std::ssize(clients) && clients[i] ? clients[i]->Info(section) : "";
    return info.ok() ? *info : "";
  }
  // used_memory summed over the primaries; -1 if one lacks it.
  int64_t UsedMemory() {
    int64_t sum = 0;
    for (int i : primaries) {
      const int64_t v = support::InfoField(Info(i, "memory"), "used_memory");
      sum = v < 0 || sum < 0 ? -1 : sum + v;
    }
    return sum;
  }
  Reading Read(int i) {
    const std::string calls = Info(i, "commandstats");
    return {support::ServerCpuUsec(Info(i, "cpu")), support::ScriptCalls(calls),
            support::ScriptUsec(calls)};
  }
};

// One instance process, and the parent's end of its socket: the parent
// writes the start time and shuts its side down to ask for a stop, the
// instance writes its lines.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  LineSplitter lines;
  bool eof = false;
};

// Forks and execs instance `index` of this binary with `o`'s flags; the
// URL goes in the environment (a password stays off the command line), and
// only the parent writes files. SIGINT is blocked around it (the instance
// ignores it before unblocking it).
absl::Status Spawn(const DemoOptions& o, int index, const std::string& prefix,
                   Child& c) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::ErrnoToStatus(errno, "socketpair");
  }
  DemoOptions io = o;
  io.url = io.csv = io.chart = "";
  io.instance = index;
  io.fd = sv[1];
  io.prefix = prefix;
  std::vector<std::string> args = FlagArgs(io);
  args.insert(args.begin(), {"tokenlease", "demo"});
  // Built before fork: the child may only make async-signal-safe calls.
  std::string url = absl::StrCat(kRedisUrlEnv, "=");
  std::vector<char*> argv, envp;
  for (std::string& s : args) argv.push_back(s.data());
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, url)) envp.push_back(*e);
  }
  url += o.url;
  argv.push_back(nullptr);
  envp.insert(envp.end(), {url.data(), nullptr});
  c.pid = fork();
  if (c.pid == 0) {
    fcntl(sv[1], F_SETFD, 0);  // kept open across exec
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(127);
  }
  const int err = errno;
  close(sv[1]);
  c.fd = sv[0];
  return c.pid < 0 ? absl::ErrnoToStatus(err, "fork") : absl::OkStatus();
}

class Parent {
 public:
  Parent(const DemoOptions& o, Redis& redis)
      : o_(o),
        redis_(redis),
        outage_(o.outage && redis.node(0) != nullptr ? OutageNow::kBefore
                                                     : OutageNow::kNone),
        live_(o) {
    run_.windows = NumWindows(o);
    figures_.ok = !redis.clients.empty();
    figures_.mem_per_window.assign(run_.windows, -1);
    for (size_t i = 0; i < redis.clients.size(); ++i) {
      before_.push_back(redis.Read(i));
    }
    last_.resize(redis.clients.size());
  }

  // Runs the instances to the end and prints the report; the exit status.
  int Run() {
    children_ = std::vector<Child>(o_.instances);
    absl::Status s;
    {
      const SigintBlocked blocked;
      for (int i = 0; i < o_.instances && s.ok(); ++i) {
        s = Spawn(o_, i, prefix_, children_[i]);
        run_.reports.emplace_back(run_.windows);
      }
    }
    if (!s.ok()) return Fail(absl::StrCat("tokenlease demo: ", s.ToString()));
    while (!std::all_of(children_.begin(), children_.end(),
                        [](const Child& c) { return c.eof; })) {
      if (std::optional<int> code = HandleSignals()) return *code;
      SendStartIfReady();
      DriveOutage();
      if (SteadyNs() > (run_.start_ns == 0 ? ready_deadline_ : end_deadline_)) {
        return Fail("timed out waiting for the instances");
      }
      // Redis memory once per window (not while it is stopped: the probe
      // would wait).
      if (outage_ != OutageNow::kOn && run_.start_ns != 0 &&
          next_mem_w_ < run_.windows &&
          SteadyNs() >= run_.start_ns + (next_mem_w_ + 1) * WindowNs(o_)) {
        figures_.mem_per_window[next_mem_w_++] = redis_.UsedMemory();
      }
      if (!PollSockets()) return Fail("");
      if (o_.live && run_.interrupted_ns == 0 && run_.start_ns != 0) {
        Print(live_.NewRows(run_.reports, run_.start_ns));
      }
    }
    return Finish();
  }

 private:
  // Kills the instances (SIGTERM: they have no handler; SIGCONT lets a
  // stopped one receive it) and reaps them; `why` goes to stderr. Returns
  // 1, the exit status of a run that failed.
  int Fail(const std::string& why) {
    if (!why.empty()) std::fprintf(stderr, "%s\n", why.c_str());
    EndOutage();
    for (const Child& c : children_) {
      if (c.pid > 0) {
        kill(c.pid, SIGTERM);
        kill(c.pid, SIGCONT);
      }
    }
    for (Child& c : children_) Reap(c);
    return 1;
  }

  // Waits for the child to end and closes its socket; its wait status (-1
  // if it was reaped already).
  static int Reap(Child& c) {
    int status = -1;
    while (c.pid > 0 && waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (c.fd >= 0) close(c.fd);
    c.pid = c.fd = -1;
    return status;
  }

  // An exit status if the signals seen end the run now. One Ctrl-C asks
  // the instances to stop (they send their results as at the end of a run)
  // by shutting the parent's side of their sockets down.
  std::optional<int> HandleSignals() {
    if (g_sigterms > 0) {
      Fail("terminated: killing the instances");
      return 128 + SIGTERM;
    }
    if (g_sigints > 0 && run_.start_ns == 0) {
      Fail("");
      std::printf("\ninterrupted before the run started\n");
      return 0;
    }
    if (g_sigints > 1) {
      Fail("interrupted again: killing the instances");
      return 130;
    }
    if (g_sigints == 0 || run_.interrupted_ns != 0) return std::nullopt;
    run_.interrupted_ns = SteadyNs();
    Print(run_.interrupted_ns < run_.start_ns  // the start time was sent
              ? "\ninterrupted before the start: stopping the instances\n"
              : absl::StrFormat(
                    "\ninterrupted at t=%.1f s: stopping the instances\n",
                    (run_.interrupted_ns - run_.start_ns) / 1e9));
    for (Child& c : children_) shutdown(c.fd, SHUT_WR);
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
      WriteAll(c.fd, absl::StrCat(run_.start_ns, "\n"));
    }
    if (o_.live) Print(LiveHeader(o_));
  }

  // Takes the private redis-server (or the cluster's primary of the hot
  // key) away at --outage_at into the run (--outage_kind: SIGSTOP, or kill
  // -9), and brings it back (SIGCONT, or a restart: empty, or as a replica)
  // --outage_seconds later.
  void DriveOutage() {
    if (outage_ == OutageNow::kNone || run_.start_ns == 0) return;
    const double t = (SteadyNs() - run_.start_ns) / 1e9;
    const bool kill9 = o_.outage_kind == OutageKind::kKill;
    support::RedisCluster* cluster = redis_.cluster.get();
    std::string note;
    if (outage_ == OutageNow::kBefore && t >= o_.outage_at) {
      // A cluster's primary of the hot key's slot (its name under the run's
      // prefix, as targets.cc's limiters name it), and its replica.
      absl::StatusOr<int> victim =
          cluster == nullptr ? 0
                             : cluster->PrimaryOfSlot(internal::LimitSlot(
                                   prefix_, KeyName(o_, 0)));
      absl::StatusOr<int> replica = cluster == nullptr || !victim.ok()
                                        ? victim
                                        : cluster->ReplicaOf(*victim);
      if (!replica.ok()) {
        std::fprintf(stderr, "tokenlease demo: no outage: %s\n",
                     replica.status().ToString().c_str());
        outage_ = OutageNow::kNone;
        return;
      }
      victim_ = *victim;
      replica_ = cluster != nullptr ? *replica : -1;
      support::RedisServer& node = *redis_.node(victim_);
      const std::string what =
          cluster == nullptr
              ? "redis-server"
              : absl::StrFormat("%s (node %d, 127.0.0.1:%d)", OutageTarget(o_),
                                victim_,
                                o_.tls ? node.tls_port() : node.port());
      if (!kill9) {
        node.Pause();
      } else {
        last_[victim_] = redis_.Read(victim_);  // its counters die with it
        redis_.clients[victim_].reset();
        figures_.restarted = cluster == nullptr;  // a cluster's others run
        cluster != nullptr ? cluster->Kill(victim_) : node.Kill();
      }
      outage_ = OutageNow::kOn;
      note = absl::StrFormat(
          "  # %.2fs %s %s: %s decides %s\n", t, what,
          kill9 ? "killed (kill -9)" : "stopped (SIGSTOP)",
          FailureModeName(o_.failure_mode),
          cluster == nullptr
              ? "until it is back"
              : absl::StrFormat("its keys until it is back or "
                                "its replica (node %d) takes over",
                                replica_));
    } else if (outage_ == OutageNow::kOn && t >= o_.OutageEnd()) {
      EndOutage();
      // Stamped when the server is back: a restart on a loaded machine
      // took up to 3.5 s (a start that waits for PING), and the instances
      // cannot be heard from before it.
      note = absl::StrFormat(
          "  # %.2fs %s %s\n", (SteadyNs() - run_.start_ns) / 1e9,
          cluster == nullptr ? "redis-server" : absl::StrCat("node ", victim_),
          !kill9               ? "resumed (SIGCONT)"
          : cluster == nullptr ? "restarted, empty"
                               : "restarted");
    }
    if (replica_ >= 0 && promoted_ < 0 && Promoted()) {
      absl::StrAppendFormat(&note,
                            "  # %.2fs node %d is the primary now, %.2f s "
                            "after the outage began: its slots are served "
                            "again\n",
                            t, promoted_, t - o_.outage_at);
    }
    if (o_.live) Print(note);
  }

  // Whether the replica of the hot key's primary says it is a primary now
  // (ROLE), asked on a connection of its own that waits at most 50 ms, the
  // poll loop's usual pause (connected again after a failure).
  bool Promoted() {
    if (!probe_) {
      absl::StatusOr<support::SyncRedis> c =
          redis_.node(replica_)->Connect(absl::Milliseconds(50));
      if (c.ok()) probe_.emplace(*std::move(c));
    }
    absl::StatusOr<internal::RedisReply> role =
        probe_ ? probe_->Run({"ROLE"}) : absl::UnavailableError("");
    if (!role.ok()) probe_.reset();
    if (!role.ok() || role->elements.empty() ||
        role->elements[0].str != "master") {
      return false;
    }
    promoted_ = replica_;
    absl::c_replace(redis_.primaries, victim_, promoted_);
    return true;
  }

  void EndOutage() {
    if (outage_ != OutageNow::kOn) return;
    outage_ = OutageNow::kOver;
    support::RedisServer& node = *redis_.node(victim_);
    const SigintBlocked blocked;  // a cluster's node too (SigintBlocked)
    if (o_.outage_kind == OutageKind::kStop) {
      node.Resume();
    } else if (absl::Status s = node.Restart(); !s.ok()) {
      std::fprintf(stderr, "tokenlease demo: restarting %s: %s\n",
                   OutageTarget(o_).c_str(), std::string(s.message()).c_str());
    } else if (absl::StatusOr<support::SyncRedis> c = node.Connect(); c.ok()) {
      redis_.clients[victim_] = *std::move(c);  // the old one died with it
    }
  }

  // Waits up to 50 ms (less if the outage starts or ends sooner, so that it
  // does so on time) for the instances' lines and applies them; false if
  // one failed.
  bool PollSockets() {
    int64_t wait_ns = 50'000'000;
    if (run_.start_ns != 0 &&
        (outage_ == OutageNow::kBefore || outage_ == OutageNow::kOn)) {
      const double at =
          outage_ == OutageNow::kBefore ? o_.outage_at : o_.OutageEnd();
      wait_ns = std::clamp<int64_t>(
          run_.start_ns + static_cast<int64_t>(at * 1e9) - SteadyNs(), 0,
          wait_ns);
    }
    std::vector<pollfd> fds;
    for (const Child& c : children_) {
      fds.push_back(pollfd{c.eof ? -1 : c.fd, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), (wait_ns + 999'999) / 1'000'000) < 0 &&
        errno != EINTR) {
      std::perror("poll");
      return false;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      Child& c = children_[i];
      const ssize_t n = read(c.fd, buf, sizeof(buf));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      InstanceReport& report = run_.reports[i];
      if (n <= 0) {
        c.eof = true;
        if (report.done) continue;
        std::fprintf(stderr, "instance %zu ended without its results\n", i);
        return false;
      }
      const absl::Status s = c.lines.Feed(
          absl::string_view(buf, n),
          [&](absl::string_view line) { return ApplyLine(line, report); });
      if (!s.ok()) {
        std::fprintf(stderr, "instance %zu: %s\n", i, s.ToString().c_str());
        return false;
      }
    }
    return true;
  }

  // Reaps the instances, then the CSV, the chart and the summary.
  int Finish() {
    EndOutage();
    for (Child& c : children_) {
      if (const int status = Reap(c); status != 0) {
        return Fail(absl::StrCat("an instance exited with status ", status));
      }
    }
    if (run_.interrupted_ns >=
        run_.start_ns + static_cast<int64_t>(o_.seconds * 1e9)) {
      run_.interrupted_ns = 0;  // after the load ended: the run is complete
    }
    if (run_.interrupted_ns != 0) {
      // Only the windows that ran, the last one partial.
      int64_t last = 0;
      for (const InstanceReport& r : run_.reports) {
        last = std::max(last, r.last_ns);
      }
      run_.windows = last > run_.start_ns
                         ? std::min(run_.windows,
                                    (last - run_.start_ns) / WindowNs(o_) + 1)
                         : 0;
      for (InstanceReport& r : run_.reports) r.windows.resize(run_.windows);
      figures_.mem_per_window.resize(run_.windows);
    }
    if (run_.windows == 0) {
      std::printf("\nnothing ran before the interruption\n");
      return 0;
    }
    if (figures_.ok) {
      // Summed over the nodes that served slots: the primaries, and the one
      // the outage took away (a killed one's counters as it died).
      std::vector<int> served = redis_.primaries;
      if (victim_ >= 0 && !absl::c_linear_search(served, victim_)) {
        served.push_back(victim_);
      }
      absl::c_sort(served);
      figures_.script_calls = figures_.script_usec = figures_.cpu_usec = 0;
      for (int i : served) {
        const Redis::Reading r = last_[i] ? *last_[i] : redis_.Read(i);
        const int64_t cpu = r.cpu - before_[i].cpu;
        figures_.script_calls += r.calls;
        figures_.script_usec += r.usec;
        figures_.cpu_usec =
            before_[i].cpu < 0 || cpu < 0 || figures_.cpu_usec < 0
                ? -1
                : figures_.cpu_usec + cpu;
        if (redis_.cluster == nullptr) continue;
        figures_.node_cpu_usec.emplace_back(
            absl::StrCat("node ", i,
                         i == victim_     ? " (taken away)"
                         : i == promoted_ ? " (promoted)"
                                          : ""),
            cpu);
      }
      if (figures_.cpu_usec < 0) figures_.node_cpu_usec.clear();
    }
    const Totals totals = Aggregate(run_);
    const absl::Status csv =
        o_.csv.empty()
            ? absl::OkStatus()
            : WriteFile(o_.csv, CsvText(o_, run_, totals, figures_), "csv");
    const absl::Status chart =
        o_.chart.empty()
            ? absl::OkStatus()
            : WriteFile(o_.chart, RunChartSvg(o_, run_, totals), "chart");
    for (const absl::Status& s : {csv, chart}) {
      if (!s.ok())
        std::fprintf(stderr, "tokenlease demo: %s\n", s.ToString().c_str());
    }
    std::printf("%s", Summary(o_, run_, totals, figures_).c_str());
    if (!o_.chart.empty() && chart.ok()) {
      std::printf("chart: %s (SVG, open it in a browser)\n", o_.chart.c_str());
    }
    return 0;
  }

  const DemoOptions& o_;
  Redis& redis_;
  OutageNow outage_;  // kNone: no outage to drive
  LiveView live_;
  std::vector<Child> children_;
  RunRecord run_;
  RedisFigures figures_;
  // This run's Redis key prefix (the instances' key_prefix).
  const std::string prefix_ =
      absl::StrCat("lh:", getpid(), ":", SteadyNs() % 1000000, ":");
  // The node the outage takes away (-1: none yet), its replica (a
  // cluster's), and that replica once it says it is a primary.
  int victim_ = -1, replica_ = -1, promoted_ = -1;
  std::optional<support::SyncRedis> probe_;  // to replica_ (Promoted)
  // Each node's counters before the run, and a killed one's as it died.
  std::vector<Redis::Reading> before_;
  std::vector<std::optional<Redis::Reading>> last_;
  const int64_t ready_deadline_ = SteadyNs() + kReadyTimeoutNs;
  int64_t end_deadline_ = 0;
  int64_t next_mem_w_ = 0;
};

// Starts the private server or cluster unless --url, connects to each of
// its nodes (CONFIG RESETSTAT: the figures count this run's calls) and
// points o.url at it (--tls: at its TLS ports, with certificates made for
// the run, which the instances present); the banner's words on where Redis
// is.
absl::StatusOr<std::string> StartRedis(DemoOptions& o, Redis& redis) {
  std::optional<support::RedisTlsServerOptions> tls;
  if (o.tls) {
    absl::StatusOr<std::unique_ptr<support::TempTlsFiles>> certs =
        support::TempTlsFiles::Make("tokenlease-demo-tls");
    if (!certs.ok()) return certs.status();
    redis.certs = *std::move(certs);
    const support::TlsFiles& f = redis.certs->files();
    tls = support::TlsServerOptionsFor(f, /*require_client_cert=*/true);
    o.tls_ca_file = f.ca_file;
    o.tls_cert_file = f.client_cert;
    o.tls_key_file = f.client_key;
  }
  if (o.redis == RedisKind::kCluster) {
    absl::StatusOr<std::unique_ptr<support::RedisCluster>> cluster;
    {
      const SigintBlocked blocked;  // for own_process_group (SigintBlocked)
      cluster =
          support::RedisCluster::Start({.tls = tls, .name = "tokenlease-demo"});
    }
    if (!cluster.ok()) return cluster.status();
    redis.cluster = *std::move(cluster);
    absl::StatusOr<std::vector<int>> primaries = redis.cluster->Primaries();
    if (!primaries.ok()) return primaries.status();
    redis.primaries = *primaries;
    o.url = o.tls ? redis.cluster->tls_url() : redis.cluster->url();
  } else if (o.url.empty()) {
    // In a process group of its own: a Ctrl-C at the terminal must not stop it
    // under the instances' final lease returns and the summary's probes.
    absl::StatusOr<std::unique_ptr<support::RedisServer>> server =
        support::StartRedisServer({.own_process_group = true,
                                   .tls = tls,
                                   .name = "tokenlease-demo",
                                   .cancelled = Interrupted});
    if (!server.ok()) return server.status();
    redis.server = *std::move(server);
    o.url = o.tls ? redis.server->tls_url() : redis.server->url();
  }
  const int nodes = redis.cluster != nullptr ? redis.cluster->size() : 1;
  for (int i = 0; i < nodes; ++i) {
    absl::StatusOr<support::SyncRedis> c =
        redis.node(i) != nullptr
            ? redis.node(i)->Connect()
            : support::SyncRedis::Connect(o.url, support::kDefaultRedisTimeout,
                                          TlsOptions(o));
    if (!c.ok()) return c.status();
    c->Run({"CONFIG", "RESETSTAT"}).IgnoreError();
    redis.clients.emplace_back(*std::move(c));
  }
  return absl::StrCat(
      support::ServerVersion(redis.Info(0, "server")), " ",
      redis.server != nullptr
          ? absl::StrFormat("on 127.0.0.1:%d (pid %d)", redis.server->port(),
                            redis.server->pid())
          : absl::StrCat("at ", internal::RedactRedisUrl(o.url)),
      !o.tls ? ""
      : redis.server != nullptr
          ? absl::StrFormat(", instances over TLS on :%d (client "
                            "certificates required)",
                            redis.server->tls_port())
          : " (client certificates required)");
}

// The parent process: the server (a private one unless --url; none in
// local mode), the banner, the run; `choices` and `note` say what was
// chosen and why, and why an outage was left out.
int RunParent(DemoOptions o, const std::string& choices,
              const std::string& note) {
  // Ctrl-C stops the run and prints its summary (unless SIGINT was ignored
  // when we were started, e.g. in the background); SIGTERM ends it at
  // once, still stopping the server. Both leave poll() with EINTR.
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  struct sigaction old {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = [](int) { ++g_sigints; };
  sigaction(SIGINT, &sa, &old);
  if (old.sa_handler == SIG_IGN) sigaction(SIGINT, &old, nullptr);
  sa.sa_handler = [](int) { ++g_sigterms; };
  sigaction(SIGTERM, &sa, nullptr);

  const std::time_t now = std::time(nullptr);  // names both files of the run
  if (o.csv == kAuto) o.csv = AutoPath(o, "csv", now);
  if (o.chart == kAuto) o.chart = AutoPath(o, "svg", now);
  Redis redis;
  std::string where = "no redis-server (local mode)";
  if (o.mode != Mode::kLocal) {
    absl::StatusOr<std::string> started = StartRedis(o, redis);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n",
                   Interrupted() ? "interrupted while starting redis-server"
                                 : absl::StrCat("tokenlease demo: ",
                                                started.status().message())
                                       .c_str());
      return Interrupted() ? 130 : 1;
    }
    where = *std::move(started);
  }
  std::printf("# %s; load average: %s\n%s%s", where.c_str(),
              LoadAverage().c_str(), Banner(o, choices).c_str(), note.c_str());
  std::fflush(stdout);
  const int rc = Parent(o, redis).Run();
  std::printf("# load average after the run: %s\n", LoadAverage().c_str());
  return rc;  // ~Redis stops the private server
}

}  // namespace

int RunDemo(int argc, char** argv) {
  absl::StatusOr<CommandLine> c = ParseFlags(
      std::vector<std::string>(argv + std::min(argc, 2), argv + argc));
  if (c.ok() && c->help) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  const int cpus = UsableCpus();
  DemoOptions o;
  std::string note;
  absl::Status s = c.status();
  if (s.ok()) o = ResolveOptions(c->options, cpus);
  // The outage needs the private redis-server: with --url or in local mode
  // there is none to take away. Asked for on the command line, that is an
  // error; left on by default, the run goes without it, and says so.
  if (s.ok() && o.instance < 0 && o.outage && o.redis == RedisKind::kSingle &&
      (!o.url.empty() || o.mode == Mode::kLocal)) {
    const char* why = o.mode == Mode::kLocal
                          ? "--mode=local uses no Redis"
                          : "the demo only takes away the redis-server it "
                            "started itself, not one given by --url (or "
                            "$TOKENLEASE_REDIS_URL)";
    for (const char* f :
         {"outage", "outage_at", "outage_seconds", "outage_kind"}) {
      if (c->given.contains(f)) {
        s = absl::InvalidArgumentError(absl::StrCat(
            "an outage cannot be run: ", why, "; drop the --outage* flags"));
      }
    }
    o.outage = false;
    note = absl::StrCat("outage: none (", why, ")\n");
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
