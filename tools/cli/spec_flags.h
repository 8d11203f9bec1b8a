// The flags that describe a limit (a LimitSpec) and where its keys are,
// shared by `tokenlease check` and `tokenlease inspect`. Each limit flag
// takes a comma-separated list, one value per band (a limit has 1 to 4
// bands, e.g. --limit=10,1000 --period=1s,1h); a single value applies to
// every band.
#ifndef TOKENLEASE_TOOLS_CLI_SPEC_FLAGS_H_
#define TOKENLEASE_TOOLS_CLI_SPEC_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/flag_table.h"
#include "tokenlease/direct.h"
#include "tokenlease/redis.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {

// The flags' values as given (lists not yet split). The defaults here are
// the flags' defaults.
struct SpecFlags {
  std::string algorithm = "token_bucket";
  std::string limit;  // required: no default limit
  std::string period = "1s";
  std::string burst = "0";
  std::string refill = "smooth";
  std::string anchor = "aligned";
  std::string window_offset = "0";
  std::string log_granularity = "0";
  std::string max_log_entries = "0";
};

// Registers --algorithm, --limit, --period, --burst, --refill, --anchor,
// --window_offset, --log_granularity and --max_log_entries in `table`.
void AddSpecFlags(SpecFlags* flags, FlagTable* table);

// True if any of the flags above was given.
bool AnySpecFlagGiven(const FlagTable& table);

// How to speak TLS to a rediss:// URL: --tls_ca_file, --tls_ca_dir,
// --tls_cert_file, --tls_key_file, --tls_server_name and --tls_insecure,
// the fields of RedisTlsOptions (include/tokenlease/redis.h). The defaults
// here are the flags' defaults: the system's trust store, no client
// certificate, the URL's host, verified.
struct TlsFlags {
  std::string ca_file;
  std::string ca_dir;
  std::string cert_file;
  std::string key_file;
  std::string server_name;
  bool insecure = false;  // RedisTlsOptions::verify_peer = false
};

// Registers the flags of TlsFlags in `table`.
void AddTlsFlags(TlsFlags* flags, FlagTable* table);

// The RedisTlsOptions the flags give for `url` (resolved: the one the
// command connects to). InvalidArgument naming the flags if one is given
// while `url` is not a rediss URL (an unparsable `url` is left to the
// connection to refuse), if only one of --tls_cert_file and
// --tls_key_file is given, or if --tls_server_name is no host name. The
// files are read only when the connection is made.
absl::StatusOr<RedisTlsOptions> TlsFromFlags(const TlsFlags& flags,
                                             absl::string_view url);

// Where the limit's keys are, and how long to wait for them: --prefix,
// --url, the TLS flags and --timeout. The defaults here are the flags'
// defaults.
struct RedisFlags {
  std::string prefix = DirectLimiterOptions{}.key_prefix;
  std::string url;  // empty: ResolveRedisUrl's choice
  TlsFlags tls;
  absl::Duration timeout = absl::Seconds(2);
};

// Registers --prefix, --url, the TLS flags (AddTlsFlags) and --timeout in
// `table`, with the command's own help for --prefix and --timeout.
void AddRedisFlags(RedisFlags* flags, FlagTable* table, std::string prefix_help,
                   std::string timeout_help);

// OK if --timeout is 1ms to 1m, else InvalidArgument saying so.
absl::Status CheckTimeout(absl::Duration timeout);

// The limit the flags describe, validated as DirectLimiter::Create will
// (ValidateScriptSpec). InvalidArgument naming the flag (and the band, as
// its position in the list) that is wrong and what is accepted. A value
// given for a band whose algorithm ignores it (--burst on a window,
// --refill on GCRA, ...) is an error too: it would silently not apply.
absl::StatusOr<LimitSpec> SpecFromFlags(const SpecFlags& flags);

// The most tokens a band admits at once: its burst (token bucket, GCRA) or
// its limit (windows). The smallest over the bands of a spec is the
// "limit" of a CL.THROTTLE reply.
int64_t SmallestCapacity(const LimitSpec& spec);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_SPEC_FLAGS_H_
