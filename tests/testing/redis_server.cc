#include "testing/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tokenlease::testing {
namespace {

// Asks the kernel for a free loopback port (bind to port 0). Another process
// may take it before redis-server binds; Start() retries then.
int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  close(fd);
  return port;
}

std::string Render(const redisReply* r) {
  if (r == nullptr) return "(null)";
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return std::string(r->str, r->len);
    case REDIS_REPLY_ERROR:
      return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER:
      return absl::StrCat(r->integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::vector<std::string> parts;
      for (size_t i = 0; i < r->elements; ++i) {
        parts.push_back(Render(r->element[i]));
      }
      return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
    }
    default:
      return "(unknown)";
  }
}

// redisCommandArgv with lengths, so arguments may hold any bytes. The
// caller frees the reply (nullptr on a connection error).
redisReply* CommandArgv(redisContext* c, const std::vector<std::string>& cmd) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : cmd) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return static_cast<redisReply*>(redisCommandArgv(
      c, static_cast<int>(argv.size()), argv.data(), lens.data()));
}

}  // namespace

RedisServer::RedisServer(RedisServerOptions options)
    : options_(std::move(options)) {}

RedisServer::~RedisServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string RedisServer::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_);
}

absl::Status RedisServer::Start() {
  if (dir_.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() /
                        "tokenlease-test-redis.XXXXXX")
                           .string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError(
          absl::StrCat("mkdtemp failed: ", std::strerror(errno)));
    }
    dir_ = tmpl;
    if (options_.unix_socket) socket_path_ = dir_ + "/redis.sock";
  }
  absl::Status last = absl::UnavailableError("no attempt");
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = PickFreePort();
    if (port_ == 0) continue;
    last = Launch();
    if (last.ok()) return last;
    Kill();
  }
  return last;
}

absl::Status RedisServer::Restart() {
  Stop();
  absl::Status last;
  // The old socket may linger in TIME_WAIT; redis sets SO_REUSEADDR, but
  // retry briefly in case the port is still being released.
  for (int attempt = 0; attempt < 20; ++attempt) {
    last = Launch();
    if (last.ok()) return last;
    Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

absl::Status RedisServer::Launch() {
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   absl::StrCat(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   options_.persistent ? "yes" : "no",
                                   "--appendfsync",
                                   "always",
                                   "--enable-debug-command",
                                   "local",
                                   "--dir",
                                   dir_,
                                   "--logfile",
                                   dir_ + "/redis.log",
                                   "--daemonize",
                                   "no",
                                   "--protected-mode",
                                   "yes"};
  if (!socket_path_.empty()) {
    args.insert(args.end(),
                {"--unixsocket", socket_path_, "--unixsocketperm", "700"});
  }
  if (!options_.password.empty()) {
    args.insert(args.end(), {"--requirepass", options_.password});
  }
  if (!options_.acl_user.empty()) {
    // One config line: "user <name> on >password ~* &* +@all".
    args.insert(args.end(), {"--user", options_.acl_user, "on",
                             absl::StrCat(">", options_.acl_password), "~*",
                             "&*", "+@all"});
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    return absl::InternalError(
        absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Die with the test process, even if it crashes before its destructor
    // runs, and do not hold the test's stdout/stderr: ctest waits for them
    // to close. (Only async-signal-safe calls between fork and exec.)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    execvp("redis-server", argv.data());
    _exit(127);
  }
  pid_ = pid;
  paused_ = false;
  return WaitUntilReady();
}

absl::Status RedisServer::WaitUntilReady() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(
          absl::StrCat("redis-server exited during start on port ", port_,
                       " (port taken?); log in ", dir_, "/redis.log"));
    }
    absl::StatusOr<std::string> pong = Command({"PING"});
    if (pong.ok() && *pong == "PONG") return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("redis-server on port ", port_, " did not answer in 10 s"));
}

void RedisServer::Stop() {
  if (pid_ <= 0) return;
  if (paused_) Resume();
  kill(pid_, SIGTERM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
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

absl::StatusOr<std::string> RedisServer::Command(
    const std::vector<std::string>& args) {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (c == nullptr || c->err) {
    std::string msg = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return absl::UnavailableError(absl::StrCat("connect: ", msg));
  }
  redisSetTimeout(c, tv);
  auto run =
      [&](const std::vector<std::string>& cmd) -> absl::StatusOr<std::string> {
    redisReply* r = CommandArgv(c, cmd);
    if (r == nullptr) {
      return absl::UnavailableError(absl::StrCat("command: ", c->errstr));
    }
    std::string out = Render(r);
    freeReplyObject(r);
    return out;
  };
  absl::StatusOr<std::string> result;
  if (!options_.password.empty()) {
    result = run({"AUTH", options_.password});
    if (!result.ok()) {
      redisFree(c);
      return result;
    }
  }
  result = run(args);
  redisFree(c);
  return result;
}

absl::StatusOr<std::unique_ptr<SyncClient>> SyncClient::Connect(int port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err) {
    std::string msg = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return absl::UnavailableError(
        absl::StrCat("connect to 127.0.0.1:", port, ": ", msg));
  }
  return std::unique_ptr<SyncClient>(new SyncClient(c));
}

std::unique_ptr<SyncClient> SyncClient::Disconnected() {
  return std::unique_ptr<SyncClient>(new SyncClient(nullptr));
}

SyncClient::~SyncClient() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

internal::RedisReply SyncClient::Run(const std::vector<std::string>& args) {
  if (ctx_ == nullptr) return internal::CopyReply(nullptr);
  redisReply* r = CommandArgv(ctx_, args);
  internal::RedisReply out = internal::CopyReply(r);
  if (r != nullptr) freeReplyObject(r);
  return out;
}

internal::RedisReply SyncClient::Eval(std::string_view script,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"EVAL", std::string(script)};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return Run(cmd);
}

}  // namespace tokenlease::testing
