#include "cli/read_only_redis.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "redis/endpoint.h"

namespace tokenlease::cli {
namespace {

constexpr absl::string_view kReads[] = {"GET",    "TYPE",  "PTTL", "TIME",
                                        "ZRANGE", "ZCARD", "SCAN", "INFO",
                                        "PING",   "MULTI", "EXEC", "DISCARD"};

}  // namespace

bool IsReadOnlyCommand(absl::string_view command) {
  const std::string upper = absl::AsciiStrToUpper(command);
  for (absl::string_view r : kReads) {
    if (upper == r) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> ReadOnlyRedis::Connect(
    absl::string_view url, absl::Duration timeout, const RedisTlsOptions& tls) {
  absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(url);
  if (!ep.ok()) return ep.status();
  if (ep->topology != internal::RedisEndpoint::Topology::kSingle) {
    // One key's state lives on one server; a read that a cluster node
    // answers with MOVED inside MULTI would only say EXECABORT.
    return absl::InvalidArgumentError(absl::StrCat(
        "inspect reads one server, and ", internal::RedactRedisUrl(url),
        " names a Redis Cluster or a sentinel set: pass ",
        ep->tls ? "rediss" : "redis",
        "://host:port of the primary that serves the key (redis-cli -c "
        "CLUSTER KEYSLOT '{<prefix><key>}', then CLUSTER SLOTS; or SENTINEL "
        "get-master-addr-by-name)"));
  }
  // The login (AUTH, SELECT) is the client's own, before any Run.
  absl::StatusOr<support::SyncRedis> redis =
      support::SyncRedis::Connect(*ep, timeout, tls);
  if (!redis.ok()) return redis.status();
  return std::unique_ptr<ReadOnlyRedis>(new ReadOnlyRedis(*std::move(redis)));
}

absl::StatusOr<internal::RedisReply> ReadOnlyRedis::Run(
    const std::vector<std::string>& args) {
  if (args.empty() || !IsReadOnlyCommand(args[0])) {
    return absl::PermissionDeniedError(
        absl::StrCat("refusing to send ", args.empty() ? "nothing" : args[0],
                     ": this connection only reads"));
  }
  return redis_.Run(args);
}

}  // namespace tokenlease::cli
