// `tokenlease inspect`: what Redis holds for one limited key, decoded for
// people: every band key's type, TTL and raw value, the state decoded at
// the server's TIME (state_decode.h), the stamp and whether it fits the
// spec given by flags, and, with --leases, the lease records
// `<tag>:r:<lease_id>`. Read-only: every command goes through
// ReadOnlyRedis, and the keys are read in one MULTI/EXEC, so the numbers
// are of one instant.
#ifndef TOKENLEASE_TOOLS_CLI_INSPECT_H_
#define TOKENLEASE_TOOLS_CLI_INSPECT_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cli/read_only_redis.h"
#include "cli/state_decode.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {

struct InspectRequest {
  std::string prefix;
  std::string key;
  // The limit, if given by flags; else the stamps decide what can be read.
  std::optional<LimitSpec> spec;
  // Also list the lease records (a SCAN of the whole database).
  bool leases = false;
};

// One Redis key as read: its TYPE ("none" if absent) and PTTL (-1: no
// expiry, -2: absent).
struct KeyInfo {
  std::string key;
  std::string type = "none";
  int64_t pttl_ms = -2;
};

struct BandReport {
  int index = 0;
  KeyInfo key;
  KeyInfo meta;           // <tag>:b<i>:m, a sliding log's
  std::string value;      // the string value, or the log's meta value
  int64_t zset_size = 0;  // a log's ZCARD
  bool present = false;   // either key exists
  DecodedBand decoded;
};

struct LeaseReport {
  KeyInfo key;
  std::string value;
  std::string line;  // decoded, for people
};

struct InspectReport {
  std::string endpoint;              // without credentials
  int64_t now_us = 0;                // the server's TIME
  std::optional<std::string> since;  // the tokenlease:since marker
  std::string tag;
  InspectRequest request;
  std::vector<BandReport> bands;        // the spec's, or those found
  std::vector<std::string> extra_keys;  // band keys beyond the spec's bands
  std::vector<LeaseReport> leases;
  int64_t leases_found = 0;
  // What a call of the limit would refuse (also in the bands).
  std::vector<std::string> problems;
  // Over the bands: the least available now and the longest until fresh;
  // empty when a band's needs the spec.
  std::optional<int64_t> available;
  std::optional<int64_t> full_in_us;
};

// Reads and decodes. Errors: the connection failed or Redis answered the
// transaction with an error.
absl::StatusOr<InspectReport> Inspect(ReadOnlyRedis& redis,
                                      const InspectRequest& request);

// The report as text for people (inspect_render.cc).
std::string RenderInspect(const InspectReport& report);

// A PTTL for people: "expires in 1.5s", "no expiry (...)", "absent".
std::string TtlText(int64_t pttl_ms);

// Runs the command on `args` (what follows "inspect"); returns the exit
// status: 0 decoded, 1 a key holds something a call would refuse, 2 usage
// or Redis error.
int RunInspect(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_INSPECT_H_
