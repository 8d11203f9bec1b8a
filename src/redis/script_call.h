// The calls of the Lua scripts (lua/acquire.lua, lua/release.lua): their
// KEYS and ARGV, and their replies. docs/lua-protocol.md is the contract.
#ifndef TOKENLEASE_SRC_REDIS_SCRIPT_CALL_H_
#define TOKENLEASE_SRC_REDIS_SCRIPT_CALL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis/reply.h"
#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// The ARGV layout version both scripts speak (ARGV[1]).
inline constexpr int kScriptProtocolVersion = 1;

// Extra limits a spec must meet to run in the scripts (Lua numbers are
// doubles: exact integers only below 2^53). Periods, offsets, granularities,
// max_borrow must be whole microseconds. InvalidArgument naming the field,
// the value, and the accepted range. Also runs ValidateSpec.
absl::Status ValidateScriptSpec(const LimitSpec& spec);

struct AcquireArgs {
  int64_t wanted = 1;       // grant up to this many
  int64_t minimum = 1;      // or nothing: grant 0 or something in
                            // [minimum, wanted]
  int64_t max_wait_us = 0;  // borrowing (token bucket / GCRA bands): grant
                            // now, caller waits up to this; capped by
                            // spec.max_borrow
  bool charge = false;      // unconditional charge of `wanted` (tokens
                            // admitted while Redis was unreachable), bounded
                            // by max_debt
  int64_t max_debt = 0;     // tokens the limit may go below empty by a charge
  int64_t now_us = -1;      // -1: the script reads Redis TIME; else explicit
};

struct AcquireResult {
  int64_t granted = 0, remaining = 0, retry_after_us = 0, reset_after_us = 0,
          now_us = 0;
  // Borrowing: how long the caller must wait before using a grant (0
  // otherwise).
  int64_t wait_us = 0;
};

struct ReleaseArgs {
  int64_t amount = 0;         // unused tokens to give back
  std::string lease_id;       // unique per grant; a release with an id already
                              // applied returns 0 and changes nothing
  int64_t granted_at_us = 0;  // the now_us of the acquire reply that granted
                              // them (windows only give back into the same
                              // window)
  int64_t now_us = -1;
};

// A key prefix both shared modes accept: 1 to 256 bytes without '{' or '}'
// (prefix and key form the Redis Cluster hash tag). `field` names the
// option in the error ("DirectLimiterOptions.key_prefix").
absl::Status ValidateKeyPrefix(std::string_view field, std::string_view prefix);

// The hash tag every key of limit `name` shares: "{<prefix><name>}".
std::string LimitKeyTag(std::string_view prefix, std::string_view name);
// The keys of the acquire script, in order: "<tag>:b<i>" per band, and
// "<tag>:b<i>:m" right after a sliding-log band's.
std::vector<std::string> BandKeys(const LimitSpec& spec,
                                  std::string_view prefix,
                                  std::string_view name);

// Everything after the script name of an EVALSHA/EVAL: numkeys, keys...,
// args... (the client prepends "EVALSHA", sha or "EVAL", body; on NOSCRIPT
// it resends as EVAL). `spec` must satisfy ValidateScriptSpec.
std::vector<std::string> AcquireArguments(const LimitSpec& spec,
                                          std::string_view prefix,
                                          std::string_view name,
                                          const AcquireArgs& args);
std::vector<std::string> ReleaseArguments(const LimitSpec& spec,
                                          std::string_view prefix,
                                          std::string_view name,
                                          const ReleaseArgs& args);

// Error replies become FailedPrecondition (WRONGTYPE: a key holds another
// type; the message names it) or Internal (other script errors), with the
// server's message; a reply of another shape is Internal too.
absl::StatusOr<AcquireResult> ParseAcquireReply(const RedisReply& reply);
// Tokens actually returned.
absl::StatusOr<int64_t> ParseReleaseReply(const RedisReply& reply);

// A decision from an acquire result (us -> ns; source given). Allowed when
// something was granted (or a 0-token peek fitted, retry_after 0).
Decision ToDecision(const AcquireResult& r, DecisionSource source);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_SCRIPT_CALL_H_
