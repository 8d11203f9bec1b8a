// A synchronous Redis connection that can only read: `tokenlease inspect`
// and `tokenlease bench`'s server probe send their commands through it,
// and it refuses any command outside a fixed list of reads (and the
// login), so no change to the tool can make it write by mistake. A thin
// layer over the one synchronous client (support/sync_redis.h).
//
// Not the library's RedisConnection: that one runs since.lua on every
// connect, which creates the data-loss marker `tokenlease:since` when it
// is absent: a write.
#ifndef TOKENLEASE_TOOLS_CLI_READ_ONLY_REDIS_H_
#define TOKENLEASE_TOOLS_CLI_READ_ONLY_REDIS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "redis/reply.h"
#include "support/sync_redis.h"
#include "tokenlease/redis.h"

namespace tokenlease::cli {

// True if `command` (any case) is one ReadOnlyRedis sends: GET, TYPE, PTTL,
// TIME, ZRANGE, ZCARD, SCAN, INFO, PING, and MULTI/EXEC/DISCARD to read
// several keys at one instant; AUTH and SELECT only while logging in.
bool IsReadOnlyCommand(absl::string_view command);

class ReadOnlyRedis {
 public:
  // Connects to `url` (the library's forms: redis://[[user]:password@]host
  // [:port][/db], rediss://... over TLS with `tls`, unix:///path[?db=N];
  // one server, not a cluster or a sentinel set), logs in (AUTH) and
  // selects the database. Every step (the TLS handshake too), and every
  // command later, waits at most `timeout`. InvalidArgument for a bad URL
  // or TLS settings that cannot be used, Unavailable if the server cannot
  // be reached, fails the TLS handshake (the message names why) or refuses
  // the login (support::SyncRedis::Connect); messages never show the
  // password.
  static absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> Connect(
      absl::string_view url, absl::Duration timeout,
      const RedisTlsOptions& tls = {});

  // Runs one command (binary-safe arguments). An error reply is a reply
  // (type kError), not an error status; the status is an error only when
  // the command is not a read (PermissionDenied, nothing sent) or the
  // connection failed (Unavailable).
  absl::StatusOr<internal::RedisReply> Run(
      const std::vector<std::string>& args);

  // The endpoint without credentials ("redis://127.0.0.1:6379/0").
  const std::string& endpoint() const { return redis_.endpoint(); }

 private:
  explicit ReadOnlyRedis(support::SyncRedis redis) : redis_(std::move(redis)) {}

  support::SyncRedis redis_;
};

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_READ_ONLY_REDIS_H_
