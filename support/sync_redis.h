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
// TLS: a "rediss://" URL connects over TLS with the settings of a
// RedisTlsOptions (include/tokenlease/redis.h), verified as the library's
// connections verify (src/redis/tls.h):
//
//   RedisTlsOptions tls;
//   tls.ca_file = "/etc/redis/ca.pem";
//   absl::StatusOr<SyncRedis> redis =
//       SyncRedis::Connect("rediss://127.0.0.1:6380", absl::Seconds(2), tls);
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
#include "tokenlease/redis.h"

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
  // rediss://... over TLS, unix:///path[?db=N]), logs in (AUTH) and
  // selects the database. Connecting, the TLS handshake, and every command
  // later, wait at most `timeout` each. `tls`: the TLS settings of a
  // rediss URL, as RedisOptions::tls (the server's certificate must name
  // the URL's host unless tls.server_name says otherwise); a plain URL
  // takes the defaults only. InvalidArgument for a URL the library
  // refuses, TLS settings with a plain URL, a CA, certificate or key file
  // that cannot be used; Unavailable if the server cannot be reached, does
  // not answer, fails the TLS handshake (the message names why: "the
  // server's certificate is not trusted", "does not name ...", "the server
  // is not speaking TLS", ...) or refuses the login. No message ever shows
  // the password or key material.
  static absl::StatusOr<SyncRedis> Connect(
      absl::string_view url, absl::Duration timeout = kDefaultRedisTimeout,
      const RedisTlsOptions& tls = {});
  // The same for an endpoint already parsed (or built, as a launcher does
  // for its own server: no URL encoding of its password needed); TLS when
  // endpoint.tls is set.
  static absl::StatusOr<SyncRedis> Connect(
      const internal::RedisEndpoint& endpoint,
      absl::Duration timeout = kDefaultRedisTimeout,
      const RedisTlsOptions& tls = {});
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
  // "rediss://127.0.0.1:6380/0", "unix:///path"): for messages.
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
