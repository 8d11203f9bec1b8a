// Starting the instance processes and talking to them over pipes. The demo
// re-executes its own binary (/proc/self/exe) as
//   tokenlease demo <the parent's demo flags> --instance=I --ctl_fd=F
//       --data_fd=G --prefix=P
// The internal flags that make a process an instance are defined in
// spawn.cc, next to the code that sets them, so --help does not list them.
#ifndef TOKENLEASE_TOOLS_DEMO_SPAWN_H_
#define TOKENLEASE_TOOLS_DEMO_SPAWN_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tokenlease::tools {

// Which process this is: the parent (index -1) or instance `index` with
// its ends of the pipes and the run's Redis key prefix.
struct InstanceRole {
  int index = -1;
  int ctl_fd = -1;   // read: the start time, then EOF as the stop request
  int data_fd = -1;  // write: protocol.h lines
  std::string prefix;

  bool is_instance() const { return index >= 0; }
};

// The role given by the internal flags (after absl::ParseCommandLine).
InstanceRole RoleFromFlags();

// The parent's side of one instance process.
struct ChildProcess {
  pid_t pid = -1;
  int ctl_fd = -1;   // write end of the control pipe
  int data_fd = -1;  // read end of the data pipe
};

// Forks and execs instance `index` of this binary with `demo_args` (the
// demo's flags, see DemoFlagArgs, without the URL) and the internal flags;
// `redis_url` reaches it in $TOKENLEASE_REDIS_URL. The caller blocks SIGINT
// around this (the child unblocks it once it ignores it).
absl::StatusOr<ChildProcess> SpawnInstance(
    int index, const std::vector<std::string>& demo_args,
    const std::string& prefix, const std::string& redis_url);

// Sends `signal` to the child if it still runs.
void Signal(const ChildProcess& c, int signal);

// Waits for the child to end and closes the pipes; returns its wait status
// (-1 if it was reaped already).
int Reap(ChildProcess& c);

// Writes all of `s`; false if the pipe failed.
bool WriteAll(int fd, absl::string_view s);

// Reads one line (without its '\n') byte by byte, so nothing after it is
// consumed. Unavailable at EOF before the line ended.
absl::StatusOr<std::string> ReadLine(int fd);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_SPAWN_H_
