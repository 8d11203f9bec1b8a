// A private redis-server for one demo run: on a free 127.0.0.1 port, no
// persistence (--save '' --appendonly no), in a temporary directory that
// holds its log. It runs in its own session, so a Ctrl-C at the terminal
// does not stop it under the demo's final lease returns and INFO probes,
// and with PR_SET_PDEATHSIG, so it dies with the demo. Stopping it (the
// destructor) also removes the directory.
#ifndef TOKENLEASE_TOOLS_DEMO_REDIS_SERVER_H_
#define TOKENLEASE_TOOLS_DEMO_REDIS_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace tokenlease::tools {

class RedisServer {
 public:
  // Starts a server and waits until it answers PING (5 s per attempt, up to
  // 5 ports). NotFound, with how to install it, if redis-server is not on
  // PATH; Cancelled as soon as `cancelled()` is true (checked every 50 ms).
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      absl::FunctionRef<bool()> cancelled);

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  // Stops the server (SIGTERM, SIGKILL after 5 s) and removes its directory.
  ~RedisServer();

  // Where it listens (on 127.0.0.1) and its process, for the banner.
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // "redis://127.0.0.1:<port>".
  std::string url() const;

  // kill -9 (--outage_kind=kill): the server and everything it held are
  // gone (it has no persistence).
  void Kill();
  // After Kill: starts it again, empty, on the same port, and waits until
  // it answers PING (5 s). Unavailable if it cannot (the port was taken
  // meanwhile, say).
  absl::Status Restart(absl::FunctionRef<bool()> cancelled);

 private:
  RedisServer(std::string binary, std::string dir)
      : binary_(std::move(binary)), dir_(std::move(dir)) {}

  // One attempt on a fresh free port; the caller retries.
  absl::Status TryStart(absl::FunctionRef<bool()> cancelled);
  // Starts the server on port_ and waits until it answers PING.
  absl::Status Launch(absl::FunctionRef<bool()> cancelled);
  void Stop();
  // The last line of the server's log, to say why it failed.
  std::string LastLogLine() const;

  const std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The path of `name` on PATH, or "" if it is not there.
std::string FindOnPath(const std::string& name);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_REDIS_SERVER_H_
