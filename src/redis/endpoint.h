// Where a Redis server is and how to log in: parsed from a URL.
#ifndef TOKENLEASE_SRC_REDIS_ENDPOINT_H_
#define TOKENLEASE_SRC_REDIS_ENDPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tokenlease::internal {

// One server of a cluster's seed list or of a sentinel set.
struct HostPort {
  std::string host;  // as written in the URL
  int port = 0;
  std::string address;  // numeric, set by ResolveHosts
};

struct RedisEndpoint {
  // How the servers are found: one server (redis://, unix://); a Redis
  // Cluster from seed nodes (redis+cluster://); the primary a Sentinel set
  // names (redis+sentinel://).
  enum class Topology : uint8_t { kSingle, kCluster, kSentinel };
  Topology topology = Topology::kSingle;
  // kSingle over TCP (socket_path empty): the server; kCluster and
  // kSentinel: the first seed (for messages).
  std::string host;  // as written in the URL
  int port = 6379;
  std::string address;  // numeric, set by ResolveHosts
  std::string socket_path;
  // kCluster: the seed nodes; kSentinel: the sentinels. At least one.
  std::vector<HostPort> seeds;
  // kSentinel: the name the sentinels monitor the primary under.
  std::string service;
  // AUTH: password alone ("default" user), or ACL user + password.
  std::string user;
  std::string password;
  int db = 0;  // SELECT on every (re)connect when non-zero
  // rediss: every connection (data nodes and sentinels) speaks TLS
  // (RedisOptions::tls).
  bool tls = false;

  // "redis://127.0.0.1:6379/0", "rediss://...", "unix:///path",
  // "redis+cluster://127.0.0.1:7000,127.0.0.1:7001" or
  // "redis+sentinel://127.0.0.1:26379/mymaster/0", without credentials.
  std::string Describe() const;
};

// Parses "redis://[[user]:password@]host[:port][/db]" (host may be an IPv6
// literal in brackets; user and password may be percent-encoded),
// "unix:///path/to/socket[?db=N]" (with optional
// "unix://[user]:password@/path"),
// "redis+cluster://[[user]:password@]host[:port][,host[:port]...][/0]"
// (seed nodes; default port 6379; a cluster has database 0 only) and
// "redis+sentinel://[[user]:password@]host[:port][,...]/name[/db]"
// (sentinels, default port 26379; the credentials are the data nodes',
// the sentinels' are RedisOptions::sentinel_password); "rediss" in place
// of "redis" in each of the TCP forms: TLS. InvalidArgument
// saying what is wrong and showing the accepted forms.
absl::StatusOr<RedisEndpoint> ParseRedisUrl(absl::string_view url);

// `url` with everything between the scheme and its last '@' replaced by
// "***" ("redis://***@host:1/0", "unix://***@/path"), for messages and
// logs: it covers what ParseRedisUrl takes as the user and password, and a
// password with an unencoded '/' too.
std::string RedactRedisUrl(absl::string_view url);

// Resolves a TCP endpoint's host to a numeric address once, on the calling
// thread: hiredis resolves names with a blocking getaddrinfo, which must
// never run on the client's event loop. Unix endpoints pass through.
absl::StatusOr<std::string> ResolveHost(const RedisEndpoint& endpoint);
// Sets `address` of the endpoint and of every seed (ResolveHost's rules);
// Unavailable naming the host that cannot be resolved.
absl::Status ResolveHosts(RedisEndpoint* endpoint);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_ENDPOINT_H_
