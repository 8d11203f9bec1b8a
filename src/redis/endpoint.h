// Where a Redis server is and how to log in: parsed from a URL.
#ifndef TOKENLEASE_SRC_REDIS_ENDPOINT_H_
#define TOKENLEASE_SRC_REDIS_ENDPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tokenlease::internal {

struct RedisEndpoint {
  // TCP when socket_path is empty.
  std::string host;  // as written in the URL
  int port = 6379;
  std::string socket_path;
  // AUTH: password alone ("default" user), or ACL user + password.
  std::string user;
  std::string password;
  int db = 0;  // SELECT on every (re)connect when non-zero

  // "redis://127.0.0.1:6379/0" or "unix:///path" without credentials.
  std::string Describe() const;
};

// Parses "redis://[[user]:password@]host[:port][/db]" (host may be an IPv6
// literal in brackets; user and password may be percent-encoded) and
// "unix:///path/to/socket[?db=N]" (with optional
// "unix://[user]:password@/path"). InvalidArgument saying what is wrong and
// showing the accepted forms.
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

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_ENDPOINT_H_
