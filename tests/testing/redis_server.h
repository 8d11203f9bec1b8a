// The redis-server processes and synchronous clients of the tests: the one
// launcher and the one client of support/ (support/redis_server.h,
// support/sync_redis.h), each with the shortcut the tests' assertions
// want. A test server listens on 127.0.0.1 only, keeps nothing unless
// asked, allows DEBUG from loopback, is stopped by its destructor (also
// when the test fails) and dies with the test process.
#ifndef TOKENLEASE_TESTS_TESTING_REDIS_SERVER_H_
#define TOKENLEASE_TESTS_TESTING_REDIS_SERVER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "redis/reply.h"
#include "support/redis_server.h"
#include "support/sync_redis.h"

namespace tokenlease::testing {

using RedisServerOptions = support::RedisServerOptions;

// support::RedisServer with Command(), for one-line assertions on the
// server's state.
class RedisServer : public support::RedisServer {
 public:
  using support::RedisServer::RedisServer;

  // Runs one command on a fresh connection (2 s timeout) logged in with
  // the current password; the reply as text (RedisReply::DebugString:
  // "OK", "42", "(nil)", "[1, 2]", or the error's message).
  absl::StatusOr<std::string> Command(const std::vector<std::string>& args);
};

// A started RedisServer with `options`, or why not.
inline absl::StatusOr<std::unique_ptr<RedisServer>> StartRedisServer(
    RedisServerOptions options = {}) {
  return support::StartRedisServer<RedisServer>(std::move(options));
}

// A support::SyncRedis whose Run and Eval return the reply itself, for
// tests that drive a server directly (scripts, keys): a connection that
// fails, or a command without a reply, is a test failure (and a nil
// reply), never a silent pass.
class SyncClient {
 public:
  // Waits this long for a reply (generous: a sanitizer build on a busy
  // machine; Lua scripts of the tests run for milliseconds).
  static constexpr absl::Duration kTimeout = absl::Seconds(20);

  // Connects to 127.0.0.1:`port`; a test failure if it cannot (every Run
  // then fails the test too).
  explicit SyncClient(int port);

  // Runs one command (binary-safe arguments).
  internal::RedisReply Run(const std::vector<std::string>& args);
  // EVAL `script` with `args` (numkeys, keys, then arguments).
  internal::RedisReply Eval(std::string_view script,
                            const std::vector<std::string>& args);

 private:
  internal::RedisReply Check(absl::StatusOr<internal::RedisReply> reply);

  std::optional<support::SyncRedis> redis_;  // nullopt: did not connect
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_REDIS_SERVER_H_
