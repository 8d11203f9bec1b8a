#include "support/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "support/redis_info.h"

namespace tokenlease::support {
namespace {

// Ports tried by Start when the kernel's free port is taken before the
// server binds it.
constexpr int kPortAttempts = 5;
// How often a start polls the server, and how long a Restart keeps trying
// while the old port is being released.
constexpr absl::Duration kPollEvery = absl::Milliseconds(20);
constexpr int kRestartAttempts = 20;
constexpr absl::Duration kRestartPause = absl::Milliseconds(100);

// A port the kernel reports free on 127.0.0.1 (bound to port 0, then
// released: another process may still take it, hence the retries).
absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    close(fd);
    return absl::ErrnoToStatus(err, "bind 127.0.0.1:0");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// True once `pid` has exited (and reaps it).
bool Exited(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

// In the child between fork and exec; async-signal-safe calls only, on
// what the parent prepared.
struct ChildSetup {
  pid_t parent;
  bool own_process_group;
  const char* out_path;  // stdout and stderr
  int max_fd;            // for closing inherited descriptors
  char** argv;
};

[[noreturn]] void ExecChild(const ChildSetup& c) {
  if (c.own_process_group) setpgid(0, 0);
  // Die with the thread that started the server, even if its process
  // crashes before the destructor runs; if that already happened before
  // prctl, go now.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != c.parent) _exit(1);
  // Hold none of the caller's descriptors: not its stdout (ctest waits for
  // it to close), nor its sockets (a test that closes a connection must
  // see it closed).
  const int null = open("/dev/null", O_RDONLY);
  const int out = open(c.out_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (null >= 0) dup2(null, STDIN_FILENO);
  if (out >= 0) {
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
  }
  if (close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < c.max_fd; ++fd) close(fd);
  }
  execv(c.argv[0], c.argv);
  _exit(127);
}

// The program to run: `binary`, else $TOKENLEASE_REDIS_SERVER, else
// redis-server.
std::string ServerProgram(const std::string& binary) {
  if (!binary.empty()) return binary;
  const char* env = std::getenv("TOKENLEASE_REDIS_SERVER");
  return env != nullptr && *env != '\0' ? env : "redis-server";
}

}  // namespace

std::string ConfQuote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string FindOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return access(name.c_str(), X_OK) == 0 ? name : "";
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

RedisServer::RedisServer(RedisServerOptions options)
    : options_(std::move(options)) {}

RedisServer::~RedisServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string RedisServer::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_);
}

std::string RedisServer::tls_url() const {
  if (!options_.tls.has_value()) return "";
  return absl::StrCat("rediss://127.0.0.1:", tls_port_);
}

absl::Status RedisServer::Start() {
  if (running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("redis-server already runs on port ", port_));
  }
  binary_ = FindOnPath(ServerProgram(options_.binary));
  if (binary_.empty()) {
    const std::string program = ServerProgram(options_.binary);
    return absl::NotFoundError(absl::StrCat(
        program, " is not installed (not on PATH); install it with `apt-get ",
        "install ",
        program == "valkey-server" ? "valkey-server" : "redis-server",
        "` (docs/operations.md \"Valkey\" for Debian 12)"));
  }
  if (dir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/",
                                   options_.name, ".XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) {
      return absl::ErrnoToStatus(errno, absl::StrCat("mkdtemp ", dir));
    }
    dir_ = dir;
    if (options_.unix_socket) socket_path_ = dir_ + "/redis.sock";
  }
  const bool tls = options_.tls.has_value();
  const bool ports_given =
      options_.port != 0 && (!tls || options_.tls->port != 0);
  const int attempts = ports_given ? 1 : kPortAttempts;
  absl::Status last;
  for (int i = 0; i < attempts; ++i) {
    if (options_.port != 0) {
      port_ = options_.port;
    } else {
      absl::StatusOr<int> port = FreeLoopbackPort();
      if (!port.ok()) return port.status();
      port_ = *port;
    }
    if (tls && options_.tls->port != 0) {
      tls_port_ = options_.tls->port;
    } else if (tls) {
      // Not the plaintext port, which is free too until the server binds
      // it.
      do {
        absl::StatusOr<int> port = FreeLoopbackPort();
        if (!port.ok()) return port.status();
        tls_port_ = *port;
      } while (tls_port_ == port_);
    }
    last = Launch();
    // Only an exit at start may be another process on a port.
    if (!absl::IsUnavailable(last)) return last;
  }
  return last;
}

absl::Status RedisServer::Restart() {
  Stop();
  if (dir_.empty() || port_ == 0) {
    return absl::FailedPreconditionError("Restart before Start");
  }
  absl::Status last;
  // The old listening socket may not be released yet (redis sets
  // SO_REUSEADDR, but the kernel may still hold the port briefly).
  for (int i = 0; i < kRestartAttempts; ++i) {
    last = Launch();
    if (!absl::IsUnavailable(last)) return last;
    absl::SleepFor(kRestartPause);
  }
  return last;
}

absl::Status RedisServer::WriteConfig() const {
  std::vector<std::string> lines = {
      absl::StrCat("port ", port_),
      "bind 127.0.0.1",
      "protected-mode yes",
      "daemonize no",
      absl::StrCat("dir ", ConfQuote(dir_)),
      absl::StrCat("logfile ", ConfQuote(dir_ + "/redis.log")),
      "save \"\"",
      absl::StrCat("appendonly ", options_.persistent ? "yes" : "no"),
      "appendfsync always",
      "enable-debug-command local",
  };
  if (!socket_path_.empty()) {
    lines.push_back(absl::StrCat("unixsocket ", ConfQuote(socket_path_)));
    lines.push_back("unixsocketperm 700");
  }
  if (!options_.password.empty()) {
    lines.push_back(absl::StrCat("requirepass ", ConfQuote(options_.password)));
  }
  if (!options_.acl_user.empty()) {
    lines.push_back(absl::StrCat(
        "user ", ConfQuote(options_.acl_user), " on ",
        ConfQuote(absl::StrCat(">", options_.acl_password)), " ~* &* +@all"));
  }
  if (options_.tls.has_value()) {
    const RedisTlsServerOptions& tls = *options_.tls;
    lines.push_back(absl::StrCat("tls-port ", tls_port_));
    lines.push_back(absl::StrCat("tls-cert-file ", ConfQuote(tls.cert_file)));
    lines.push_back(absl::StrCat("tls-key-file ", ConfQuote(tls.key_file)));
    if (!tls.ca_file.empty()) {
      lines.push_back(
          absl::StrCat("tls-ca-cert-file ", ConfQuote(tls.ca_file)));
    }
    lines.push_back(absl::StrCat("tls-auth-clients ",
                                 tls.require_client_cert ? "yes" : "no"));
    if (!tls.client_cert_file.empty()) {
      lines.push_back(absl::StrCat("tls-client-cert-file ",
                                   ConfQuote(tls.client_cert_file)));
      lines.push_back(
          absl::StrCat("tls-client-key-file ", ConfQuote(tls.client_key_file)));
    }
  }
  lines.insert(lines.end(), options_.config_lines.begin(),
               options_.config_lines.end());
  const std::string path = dir_ + "/redis.conf";
  std::ofstream conf(path, std::ios::trunc);
  for (const std::string& l : lines) conf << l << "\n";
  conf.close();
  if (!conf) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::Status RedisServer::Launch() {
  if (absl::Status s = WriteConfig(); !s.ok()) return s;
  std::vector<std::string> args = options_.wrapper;
  args.push_back(binary_);
  args.push_back(dir_ + "/redis.conf");
  args.insert(args.end(), options_.extra_args.begin(),
              options_.extra_args.end());
  // A wrapper is found on PATH too (execv takes a path).
  if (!options_.wrapper.empty()) {
    args[0] = FindOnPath(options_.wrapper[0]);
    if (args[0].empty()) {
      return absl::NotFoundError(
          absl::StrCat(options_.wrapper[0], " is not on PATH"));
    }
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = dir_ + "/redis.out";
  rlimit files{};
  const int max_fd = getrlimit(RLIMIT_NOFILE, &files) == 0 &&
                             files.rlim_cur != RLIM_INFINITY &&
                             files.rlim_cur < 65536
                         ? static_cast<int>(files.rlim_cur)
                         : 65536;
  const ChildSetup child{getpid(), options_.own_process_group, out_path.c_str(),
                         max_fd, argv.data()};
  const pid_t pid = fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) ExecChild(child);
  pid_ = pid;
  paused_ = false;
  return WaitUntilReady();
}

absl::Status RedisServer::WaitUntilReady() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  while (true) {
    if (options_.cancelled && options_.cancelled()) {
      Kill();
      return absl::CancelledError("interrupted while redis-server started");
    }
    if (Exited(pid_)) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat(
          binary_, " exited at start on port ", port_,
          tls_port_ != 0 ? absl::StrCat(" (TLS port ", tls_port_, ")") : "",
          ": ", LastLogLine(), " (its files: ", dir_, ")"));
    }
    // Ready: it answers PING (not LOADING its data), and it is this
    // process, not another that holds the port (ours then fails to bind).
    absl::StatusOr<SyncRedis> redis = Connect(absl::Seconds(1));
    if (redis.ok()) {
      absl::StatusOr<internal::RedisReply> pong = redis->Run({"PING"});
      absl::StatusOr<std::string> info = redis->Info("server");
      if (pong.ok() && pong->str == "PONG" && info.ok() &&
          InfoField(*info, "process_id") == pid_) {
        return absl::OkStatus();
      }
    }
    if (absl::Now() >= deadline) break;
    absl::SleepFor(kPollEvery);
  }
  Kill();
  return absl::DeadlineExceededError(absl::StrCat(
      binary_, " did not answer PING on port ", port_, " within ",
      absl::FormatDuration(options_.start_timeout), ": ", LastLogLine()));
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  Resume();
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + options_.stop_timeout;
  while (absl::Now() < deadline) {
    if (Exited(pid_)) {
      pid_ = -1;
      return;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  Kill();
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  paused_ = false;
}

void RedisServer::Pause() {
  if (pid_ > 0 && !paused_) {
    kill(pid_, SIGSTOP);
    paused_ = true;
  }
}

void RedisServer::Resume() {
  if (pid_ > 0 && paused_) {
    kill(pid_, SIGCONT);
    paused_ = false;
  }
}

std::string RedisServer::LastLogLine() const {
  std::string last = "(no log)";
  for (const char* file : {"/redis.out", "/redis.log"}) {
    std::ifstream log(dir_ + file);
    std::string line;
    while (std::getline(log, line)) {
      if (!line.empty()) last = line;
    }
  }
  return last;
}

absl::StatusOr<SyncRedis> RedisServer::Connect(absl::Duration timeout) const {
  internal::RedisEndpoint ep;
  ep.host = "127.0.0.1";
  ep.port = port_;
  ep.password = options_.password;
  return SyncRedis::Connect(ep, timeout);
}

}  // namespace tokenlease::support
