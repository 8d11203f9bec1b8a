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
#include "absl/time/time.h"
#include "cli/flag_table.h"
#include "tokenlease/direct.h"
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

// Where the limit's keys are, and how long to wait for them: --prefix,
// --url and --timeout. The defaults here are the flags' defaults.
struct RedisFlags {
  std::string prefix = DirectLimiterOptions{}.key_prefix;
  std::string url;  // empty: ResolveRedisUrl's choice
  absl::Duration timeout = absl::Seconds(2);
};

// Registers --prefix, --url and --timeout in `table`, with the command's
// own help for --prefix and --timeout.
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
