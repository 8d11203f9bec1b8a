// What the commands of `tokenlease` share: exit statuses, where the Redis
// URL comes from, and small formatting helpers.
#ifndef TOKENLEASE_TOOLS_CLI_COMMON_H_
#define TOKENLEASE_TOOLS_CLI_COMMON_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"

namespace tokenlease::cli {

// Exit statuses. `check`: 0 allowed, 1 denied, 2 usage or Redis error, so
// a script can tell a denial from a failure. `inspect`: 0 decoded, 1 a key
// holds something a call of the limit would refuse (wrong type, corrupt
// value, another spec's state), 2 usage or Redis error. `bench`: 0 or 2.
inline constexpr int kExitOk = 0;
inline constexpr int kExitDenied = 1;
inline constexpr int kExitUsage = 2;

// Writes a usage error of `tokenlease <command>` to `err`: "tokenlease
// <command>: <message>" and where the command's --help is. Returns
// kExitUsage.
int UsageError(std::ostream& err, absl::string_view command,
               absl::string_view message);

// The default of --url: what commands talk to when it is not given.
inline constexpr char kDefaultRedisUrl[] = "redis://127.0.0.1:6379";

// `flag` if not empty, else $TOKENLEASE_REDIS_URL (which keeps a password
// off the command line, where `ps` shows it to every user) if set and not
// empty, else kDefaultRedisUrl.
std::string ResolveRedisUrl(absl::string_view flag);

// `url` without its credentials, for messages ("redis://***@host:1/0").
std::string Redacted(absl::string_view url);

// `message` (an error of the library or of the synchronous client) with
// the RedisOptions::tls fields it names ("RedisOptions::tls.ca_file names
// the CAs to trust") replaced by the flags that set them
// ("--tls_ca_file"), for people who gave flags, not options.
std::string InFlagTerms(absl::string_view message);

// The warning a command prints on `err` when `insecure` (--tls_insecure)
// is set; nothing otherwise.
void WarnIfInsecure(std::ostream& err, absl::string_view command,
                    bool insecure);

// `s` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view s);

// A time in µs since the epoch as RFC 3339 UTC with microseconds
// ("2026-01-01T00:00:00.000000Z").
std::string FormatTimeUs(int64_t us);

// A span in µs for people ("1.5s", "250ms", "0", "-3s"), absl's format.
std::string FormatUs(int64_t us);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_COMMON_H_
