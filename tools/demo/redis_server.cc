// Starting, waiting for and stopping the private redis-server
// (redis_server.h).
#include "demo/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "demo/redis_probe.h"

namespace tokenlease::tools {
namespace {

constexpr int kAttempts = 5;
constexpr auto kPollEvery = std::chrono::milliseconds(50);
constexpr int kPollsPerAttempt = 100;  // 5 s

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

// In the child between fork and exec (async-signal-safe calls only): its
// own session (out of reach of the terminal's Ctrl-C), killed when the demo
// dies, stdin from /dev/null.
[[noreturn]] void ExecServer(pid_t parent, std::vector<char*>& argv) {
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);  // the demo died before prctl
  const int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO);
  execv(argv[0], argv.data());
  _exit(127);
}

// True once `pid` has exited (and reaps it).
bool Exited(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

}  // namespace

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(
    absl::FunctionRef<bool()> cancelled) {
  const std::string binary = FindOnPath("redis-server");
  if (binary.empty()) {
    return absl::NotFoundError(
        "redis-server is not installed (not on PATH); install it with "
        "`apt-get install redis-server`, or pass --url=redis://HOST:PORT to "
        "use a running server (--mode=local needs none)");
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                                 "/tokenlease-demo.XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdtemp ", dir));
  }
  auto server = std::unique_ptr<RedisServer>(new RedisServer(binary, dir));
  absl::Status s;
  for (int i = 0; i < kAttempts; ++i) {
    s = server->TryStart(cancelled);
    if (s.ok() || absl::IsCancelled(s)) break;
  }
  if (!s.ok()) return s;  // the destructor removes the directory
  return server;
}

absl::Status RedisServer::TryStart(absl::FunctionRef<bool()> cancelled) {
  absl::StatusOr<int> port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  port_ = *port;
  return Launch(cancelled);
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

absl::Status RedisServer::Restart(absl::FunctionRef<bool()> cancelled) {
  Kill();
  return Launch(cancelled);
}

absl::Status RedisServer::Launch(absl::FunctionRef<bool()> cancelled) {
  std::vector<std::string> args = {
      binary_,  "--port",    absl::StrCat(port_), "--bind", "127.0.0.1",
      "--save", "",          "--appendonly",      "no",     "--dir",
      dir_,     "--logfile", dir_ + "/redis.log"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) ExecServer(parent, argv);
  if (pid_ < 0) return absl::ErrnoToStatus(errno, "fork");
  const std::string url = this->url();
  for (int i = 0; i < kPollsPerAttempt; ++i) {
    if (cancelled()) return absl::CancelledError("interrupted");
    absl::StatusOr<RedisProbe> probe = RedisProbe::Connect(url);
    if (probe.ok() && probe->Ping()) return absl::OkStatus();
    if (Exited(pid_)) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat(
          "redis-server exited at start on port ", port_, ": ", LastLogLine()));
    }
    std::this_thread::sleep_for(kPollEvery);
  }
  Stop();
  return absl::DeadlineExceededError(absl::StrCat(
      "redis-server did not answer PING on port ", port_, " within 5 s"));
}

std::string RedisServer::LastLogLine() const {
  std::ifstream log(dir_ + "/redis.log");
  std::string line, last = "(no log)";
  while (std::getline(log, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

std::string RedisServer::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_);
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  bool gone = false;
  for (int i = 0; i < 500 && !(gone = Exited(pid_)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!gone) {  // 5 s: no more waiting
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

RedisServer::~RedisServer() {
  Stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace tokenlease::tools
