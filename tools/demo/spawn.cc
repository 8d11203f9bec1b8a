// The instance processes' internal flags, their fork/exec, and pipe I/O
// (spawn.h).
#include "demo/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "demo/flags.h"

ABSL_FLAG(int, instance, -1,
          "internal: set by the parent on its instance processes");
ABSL_FLAG(int, ctl_fd, -1, "internal: the instance's control pipe");
ABSL_FLAG(int, data_fd, -1, "internal: the instance's data pipe");
ABSL_FLAG(std::string, prefix, "", "internal: the run's Redis key prefix");

extern char** environ;  // POSIX: declared by no standard header

namespace tokenlease::tools {
namespace {

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// In the child between fork and exec: keeps its pipe ends open across exec
// and becomes the instance (only async-signal-safe calls here).
[[noreturn]] void ExecInstance(int ctl_read, int data_write,
                               std::vector<char*>& argv,
                               std::vector<char*>& envp) {
  fcntl(ctl_read, F_SETFD, 0);
  fcntl(data_write, F_SETFD, 0);
  execve("/proc/self/exe", argv.data(), envp.data());
  _exit(127);
}

}  // namespace

InstanceRole RoleFromFlags() {
  InstanceRole r;
  r.index = absl::GetFlag(FLAGS_instance);
  r.ctl_fd = absl::GetFlag(FLAGS_ctl_fd);
  r.data_fd = absl::GetFlag(FLAGS_data_fd);
  r.prefix = absl::GetFlag(FLAGS_prefix);
  return r;
}

absl::StatusOr<ChildProcess> SpawnInstance(
    int index, const std::vector<std::string>& demo_args,
    const std::string& prefix, const std::string& redis_url) {
  int ctl[2], data[2];
  if (pipe2(ctl, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "pipe2");
  }
  if (pipe2(data, O_CLOEXEC) != 0) {
    const int err = errno;
    close(ctl[0]);
    close(ctl[1]);
    return absl::ErrnoToStatus(err, "pipe2");
  }
  std::vector<std::string> args = {"tokenlease", "demo"};
  args.insert(args.end(), demo_args.begin(), demo_args.end());
  args.push_back(absl::StrCat("--instance=", index));
  args.push_back(absl::StrCat("--ctl_fd=", ctl[0]));
  args.push_back(absl::StrCat("--data_fd=", data[1]));
  args.push_back(absl::StrCat("--prefix=", prefix));
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  // This process's environment with the URL set (built before fork: the
  // child may only make async-signal-safe calls).
  const std::string url_var = absl::StrCat(kRedisUrlEnv, "=", redis_url);
  std::vector<char*> envp;
  const std::string url_prefix = absl::StrCat(kRedisUrlEnv, "=");
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, url_prefix)) envp.push_back(*e);
  }
  envp.push_back(const_cast<char*>(url_var.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) ExecInstance(ctl[0], data[1], argv, envp);
  const int fork_errno = errno;
  close(ctl[0]);
  close(data[1]);
  if (pid < 0) {
    close(ctl[1]);
    close(data[0]);
    return absl::ErrnoToStatus(fork_errno, "fork");
  }
  return ChildProcess{pid, ctl[1], data[0]};
}

void Signal(const ChildProcess& c, int signal) {
  if (c.pid > 0) kill(c.pid, signal);
}

int Reap(ChildProcess& c) {
  int status = -1;
  if (c.pid > 0) {
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  c.pid = -1;
  CloseIfOpen(c.ctl_fd);
  CloseIfOpen(c.data_fd);
  return status;
}

bool WriteAll(int fd, absl::string_view s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

absl::StatusOr<std::string> ReadLine(int fd) {
  std::string line;
  char c;
  for (;;) {
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return absl::UnavailableError("EOF before the end of a line");
    if (c == '\n') return line;
    line.push_back(c);
  }
}

}  // namespace tokenlease::tools
