// A redis-server process for tests (redis_test.h: one shared per binary,
// or a private one per test): started on a free 127.0.0.1 port (and
// optionally a unix socket) with no persistence unless asked, and DEBUG
// allowed from loopback (DEBUG SLEEP is a fault), stopped by the destructor,
// also when the test fails, and killed with the thread that started it
// (PR_SET_PDEATHSIG) if the test process dies first. Faults are real
// signals: Pause() is SIGSTOP, Kill() is SIGKILL.
#ifndef TOKENLEASE_TESTS_TESTING_REDIS_SERVER_H_
#define TOKENLEASE_TESTS_TESTING_REDIS_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis/reply.h"

struct redisContext;

namespace tokenlease::testing {

struct RedisServerOptions {
  // requirepass (the "default" user's password); empty: none.
  std::string password{};
  // An extra ACL user with full access: "user <name> on ><password> ~* &*
  // +@all".
  std::string acl_user{};
  std::string acl_password{};
  // Also listen on a unix socket in the server's temporary directory.
  bool unix_socket = false;
  // An append-only file written with fsync on every write, kept across
  // Kill and Restart: a kill -9 loses nothing. Default: no persistence.
  bool persistent = false;
};

class RedisServer {
 public:
  explicit RedisServer(RedisServerOptions options = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts the server on a free port and waits (<= 10 s) until it answers.
  absl::Status Start();
  // SIGTERM, then SIGKILL after 5 s; waits for the process.
  void Stop();
  // SIGKILL and wait: the kill -9 fault.
  void Kill();
  // Starts again on the same port and socket (after Kill or Stop).
  absl::Status Restart();
  // SIGSTOP / SIGCONT: a server that is alive but answers nothing.
  void Pause();
  void Resume();

  int port() const { return port_; }
  const std::string& socket_path() const { return socket_path_; }
  // "redis://127.0.0.1:<port>" (no credentials).
  std::string url() const;
  // The password Command() and Restart() use from now on; the caller has
  // changed the server's own (CONFIG SET requirepass) or will.
  void set_password(std::string password) {
    options_.password = std::move(password);
  }

  // Runs one command on a fresh synchronous connection (authenticated as
  // the default user if a password is set); returns the reply rendered as
  // text ("OK", "42", "(nil)", "[1, 2]", or "ERR <message>").
  absl::StatusOr<std::string> Command(const std::vector<std::string>& args);

 private:
  absl::Status Launch();
  absl::Status WaitUntilReady();

  RedisServerOptions options_;
  std::string dir_;
  std::string socket_path_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// One synchronous hiredis connection kept open across commands, for tests
// that drive a server directly (scripts, keys); closed by the destructor.
class SyncClient {
 public:
  // Connects to 127.0.0.1:port, without a timeout.
  static absl::StatusOr<std::unique_ptr<SyncClient>> Connect(int port);
  // A client without a connection: every Run returns a nil reply.
  static std::unique_ptr<SyncClient> Disconnected();
  ~SyncClient();
  SyncClient(const SyncClient&) = delete;
  SyncClient& operator=(const SyncClient&) = delete;

  // Runs one command (binary-safe arguments); a nil reply if the connection
  // failed.
  internal::RedisReply Run(const std::vector<std::string>& args);
  // EVAL `script` with `args` (numkeys, keys, then arguments).
  internal::RedisReply Eval(std::string_view script,
                            const std::vector<std::string>& args);

 private:
  explicit SyncClient(redisContext* ctx) : ctx_(ctx) {}
  redisContext* ctx_;  // nullptr: Disconnected()
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_REDIS_SERVER_H_
