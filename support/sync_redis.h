// The one synchronous Redis client of the tests, the tools and the
// benchmarks (never the library's: that is RedisConnection, asynchronous,
// on its own thread). One hiredis connection that logs in as its URL says
// and then sends one command at a time, each bounded by a timeout, with
// binary-safe arguments; replies come back as the library's owned
// internal::RedisReply.
//
//   absl::StatusOr<SyncRedis> redis = SyncRedis::Connect(url);
//   if (!redis.ok()) return redis.status();
//   absl::StatusOr<internal::RedisReply> r = redis->Run({"GET", "k"});
//
// Not for the hot path: a benchmark that measures synchronous calls keeps
// its own raw hiredis context (bench/direct_bench.cc does).
#ifndef TOKENLEASE_SUPPORT_SYNC_REDIS_H_
#define TOKENLEASE_SUPPORT_SYNC_REDIS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "redis/endpoint.h"
#include "redis/reply.h"

struct redisContext;

namespace tokenlease::support {

// What Connect and every command wait at most unless told otherwise.
inline constexpr absl::Duration kDefaultRedisTimeout = absl::Seconds(2);

// A synchronous connection. Movable, not copyable; not thread-safe (one
// caller at a time). Closed by the destructor.
class SyncRedis {
 public:
  // Connects to `url` in one of the library's forms (ParseRedisUrl in
  // src/redis/endpoint.h: redis://[[user]:password@]host[:port][/db],
  // unix:///path[?db=N]), logs in (AUTH) and selects the database.
  // Connecting, and every command later, waits at most `timeout`.
  // InvalidArgument for a URL the library refuses; Unavailable if the
  // server cannot be reached, does not answer or refuses the login. No
  // message ever shows the password.
  static absl::StatusOr<SyncRedis> Connect(
      absl::string_view url, absl::Duration timeout = kDefaultRedisTimeout);
  // The same for an endpoint already parsed (or built, as a launcher does
  // for its own server: no URL encoding of its password needed).
  static absl::StatusOr<SyncRedis> Connect(
      const internal::RedisEndpoint& endpoint,
      absl::Duration timeout = kDefaultRedisTimeout);
  // 127.0.0.1:`port`, without a login.
  static absl::StatusOr<SyncRedis> ConnectPort(
      int port, absl::Duration timeout = kDefaultRedisTimeout);

  SyncRedis(SyncRedis&&) noexcept;
  SyncRedis& operator=(SyncRedis&&) noexcept;
  ~SyncRedis();

  // Runs one command; arguments may hold any bytes. An error reply is a
  // reply (type kError), not an error status: the status is an error only
  // when nothing usable came back: InvalidArgument for no arguments,
  // Unavailable when the connection failed or no reply came within the
  // timeout. A connection that failed once stays failed (every later
  // command is Unavailable at once): connect again.
  absl::StatusOr<internal::RedisReply> Run(
      const std::vector<std::string>& args);
  // EVAL `script` with `args` (numkeys, the keys, then the arguments).
  absl::StatusOr<internal::RedisReply> Eval(
      std::string_view script, const std::vector<std::string>& args);
  // The text of INFO `section` ("" for the default sections); an error
  // reply is FailedPrecondition with its text.
  absl::StatusOr<std::string> Info(absl::string_view section = "");

  // Where it is connected, without credentials ("redis://127.0.0.1:6379/0",
  // "unix:///path"): for messages.
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Free {
    void operator()(redisContext* c) const;
  };
  SyncRedis(redisContext* ctx, std::string endpoint, absl::Duration timeout);

  std::unique_ptr<redisContext, Free> ctx_;
  std::string endpoint_;
  absl::Duration timeout_;
};

}  // namespace tokenlease::support

#endif  // TOKENLEASE_SUPPORT_SYNC_REDIS_H_
