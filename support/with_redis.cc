// with_redis: runs one command next to a private redis-server of its own
// (support/redis_server.h), for the scripts that need a server but run no
// program of ours that could start one (bench/script_instructions.sh, which
// runs the server under valgrind). The command gets the server's address
// in its environment; the server is stopped when the command ends, also
// when it fails or with_redis is interrupted (SIGINT, SIGTERM, SIGHUP).
//
//   with_redis [--wrapper='valgrind --tool=callgrind ...'] -- COMMAND ARGS
//
// Environment of COMMAND: TOKENLEASE_REDIS_URL=redis://127.0.0.1:PORT (what
// the `tokenlease` program reads) and TOKENLEASE_REDIS_PORT=PORT (for
// redis-cli -p). Exit status: COMMAND's (128 + N if a signal N ended it),
// 1 if the server did not start, 2 for a usage error, 130 if interrupted
// before COMMAND ran.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "support/redis_server.h"

ABSL_FLAG(std::string, wrapper, "",
          "a command that runs redis-server, split at spaces (e.g. "
          "'valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out')");
ABSL_FLAG(absl::Duration, start_timeout, absl::Seconds(10),
          "how long to wait for the server to answer PING");
ABSL_FLAG(absl::Duration, stop_timeout, absl::Seconds(5),
          "how long to wait after SIGTERM before SIGKILL (a server under "
          "valgrind needs long enough to write its profile)");

namespace {

std::atomic<int> g_signal{0};

void OnSignal(int sig) { g_signal.store(sig); }

// Runs `args` with the server's address in its environment; its exit
// status. A signal to with_redis is passed on to it.
int RunCommand(const std::vector<char*>& args, int port) {
  const std::string url = absl::StrCat("redis://127.0.0.1:", port);
  const std::string port_text = absl::StrCat(port);
  setenv("TOKENLEASE_REDIS_URL", url.c_str(), 1);
  setenv("TOKENLEASE_REDIS_PORT", port_text.c_str(), 1);
  std::vector<char*> argv = args;
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("with_redis: fork");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "with_redis: cannot run %s\n", argv[0]);
    _exit(127);
  }
  int status = 0;
  bool forwarded = false;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::perror("with_redis: waitpid");
      return 1;
    }
    // Interrupted by one of our signals: pass it on once, then keep
    // waiting for the command to end (the server outlives it).
    if (const int sig = g_signal.load(); sig != 0 && !forwarded) {
      kill(pid, sig);
      forwarded = true;
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "with_redis [--wrapper=CMD] [--start_timeout=10s] [--stop_timeout=5s] "
      "-- COMMAND [ARGS...]: runs COMMAND next to a private redis-server "
      "(TOKENLEASE_REDIS_URL and TOKENLEASE_REDIS_PORT in its environment)");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  rest.erase(rest.begin());  // the program's name
  if (rest.empty()) {
    std::fprintf(stderr, "usage: %s\n", absl::ProgramUsageMessage().data());
    return 2;
  }
  // No SA_RESTART: waitpid returns EINTR, so a signal is passed on.
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  tokenlease::support::RedisServerOptions options;
  options.name = "tokenlease-with-redis";
  // Only with_redis stops it: a Ctrl-C at the terminal reaches COMMAND,
  // and the server must outlive COMMAND's own handling of it.
  options.own_process_group = true;
  options.start_timeout = absl::GetFlag(FLAGS_start_timeout);
  options.stop_timeout = absl::GetFlag(FLAGS_stop_timeout);
  options.cancelled = [] { return g_signal.load() != 0; };
  for (absl::string_view w :
       absl::StrSplit(absl::GetFlag(FLAGS_wrapper), ' ', absl::SkipEmpty())) {
    options.wrapper.emplace_back(w);
  }
  auto server = tokenlease::support::StartRedisServer(std::move(options));
  if (!server.ok()) {
    std::fprintf(stderr, "with_redis: %s\n",
                 server.status().ToString().c_str());
    return absl::IsCancelled(server.status()) ? 130 : 1;
  }
  return RunCommand(rest, (*server)->port());  // ~RedisServer stops it
}
