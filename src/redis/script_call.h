// The calls of the Lua scripts (lua/acquire.lua, lua/release.lua,
// lua/batch.lua): their KEYS and ARGV, and their replies.
// docs/lua-protocol.md is the contract.
#ifndef TOKENLEASE_SRC_REDIS_SCRIPT_CALL_H_
#define TOKENLEASE_SRC_REDIS_SCRIPT_CALL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis/reply.h"
#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// The ARGV layout version the scripts speak (ARGV[1]).
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
  // Non-empty (not with charge): the script records a grant under the lease
  // key "<tag>:r:<lease_id>" until its release horizon; a release with the
  // same id gives back at most that grant. Unique per grant.
  std::string lease_id;
};

struct AcquireResult {
  int64_t granted = 0, remaining = 0, retry_after_us = 0, reset_after_us = 0,
          now_us = 0;
  // Borrowing: how long the caller must wait before using a grant (0
  // otherwise).
  int64_t wait_us = 0;
};

struct ReleaseArgs {
  int64_t amount = 0;         // unused tokens to give back (at most what is
                              // left of the grant recorded under lease_id)
  std::string lease_id;       // the AcquireArgs::lease_id of the grant
  int64_t granted_at_us = 0;  // the now_us of the acquire reply that granted
                              // them (checked for range; the script uses the
                              // recorded time)
  int64_t now_us = -1;
};

// A key prefix both shared modes accept: 1 to 256 bytes without '{' or '}'
// (prefix and key form the Redis Cluster hash tag). `field` names the
// option in the error ("DirectLimiterOptions.key_prefix").
absl::Status ValidateKeyPrefix(std::string_view field, std::string_view prefix);

// The hash tag every key of limit `name` shares: "{<prefix><name>}".
std::string LimitKeyTag(std::string_view prefix, std::string_view name);
// The key a grant with `lease_id` is recorded under: "<tag>:r:<lease_id>".
std::string LeaseKey(std::string_view prefix, std::string_view name,
                     std::string_view lease_id);
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

// The batch script (lua/batch.lua): many limit keys' acquires, charges
// and releases for one limit (one spec) in one call, each item applied as
// the single script would apply it, in order, all or none on its own.

// The most items a batch call may carry (the script rejects more): a call
// must stay short, as Redis serves nothing else meanwhile. Measured
// (bench/direct_bench --batch, docs/benchmarks.md): 5 to 7 us of Redis time
// per item of a single-band limit, so a full batch of 64 takes 0.3 to
// 0.5 ms (a sliding log's denials cost more per item, as in acquire.lua).
inline constexpr int kMaxBatchItems = 64;
// The largest cost (wanted, minimum, amount) the scripts take: 2^50
// (docs/lua-protocol.md); callers check before a round trip.
inline constexpr int64_t kMaxScriptCost = int64_t{1} << 50;

// One item of a batch call, on the limit key `name` under the batch's
// prefix: its keys are BandKeys(spec, prefix, name), and for a release or
// an acquire with a lease_id the lease key "<tag>:r:<lease_id>" after them.
struct BatchItem {
  enum class Op : uint8_t {
    kAcquire,  // acquire.lua: wanted, minimum, max_wait_us (with a lease_id:
               // the op "lease", which records the grant)
    kCharge,   // acquire.lua with charge=1: wanted (the amount), max_debt
    kRelease,  // release.lua: amount, granted_at_us, lease_id
  };
  Op op = Op::kAcquire;
  std::string name;
  // kAcquire and kCharge, as in AcquireArgs.
  int64_t wanted = 1;
  int64_t minimum = 1;
  int64_t max_wait_us = 0;
  int64_t max_debt = 0;
  // kRelease, as in ReleaseArgs.
  int64_t amount = 0;
  int64_t granted_at_us = 0;
  // kRelease, and kAcquire as in AcquireArgs.
  std::string lease_id;

  // An acquire item, or a charge item if args.charge (args.now_us is not
  // used: a batch has one time).
  static BatchItem Acquire(std::string name, const AcquireArgs& args);
  // A release item (args.now_us is not used).
  static BatchItem Release(std::string name, const ReleaseArgs& args);
};

// The answer to one item: `acquire` for kAcquire and kCharge, `released`
// (the tokens returned) for kRelease. A charge item's reply is one integer
// (docs/lua-protocol.md, batch.lua): its `acquire` has `granted` (the
// tokens charged) and `remaining` only, the other fields 0 (a lone charge
// sent to acquire.lua has all six).
struct BatchItemResult {
  AcquireResult acquire;
  int64_t released = 0;
};

// Everything after the script name of an EVALSHA/EVAL of the batch script
// (numkeys, keys..., args...) for `items` on limit keys under `prefix`, at
// `now_us` (-1: Redis TIME, read once for the whole call). `spec` must
// satisfy ValidateScriptSpec; more than kMaxBatchItems items make the
// script fail the call; an empty batch is a valid call that does nothing.
// `keys_in_argv`: the Redis Cluster form (numkeys 0, the keys after the
// items), for items of several hash slots served by one node; the call
// must then be routed by hand (RedisClient::SubmitScript's route_slot).
std::vector<std::string> BatchArguments(const LimitSpec& spec,
                                        std::string_view prefix,
                                        std::span<const BatchItem> items,
                                        int64_t now_us = -1,
                                        bool keys_in_argv = false);

// One result per item of `items` (the items the call was made with), in
// order. An item's error reply becomes FailedPrecondition (WRONGTYPE,
// naming the key) or Internal, as ParseAcquireReply does; an error reply of
// the whole call, or a reply of another shape (not an array of one element
// per item), is the same error for every item; an element of the wrong
// shape is Internal for its item.
std::vector<absl::StatusOr<BatchItemResult>> ParseBatchReply(
    const RedisReply& reply, std::span<const BatchItem> items);

// One batch item's reply (an acquire, lease or charge item, or a release
// item), checked against the item as well: a grant above `wanted`, a
// charge's integer below -`wanted`, or a release above `amount`, is
// Internal (tokens from nothing). What
// ParseBatchReply does per item, for callers that split the reply.
absl::StatusOr<AcquireResult> ParseAcquireItemReply(const RedisReply& reply,
                                                    const BatchItem& item);
absl::StatusOr<int64_t> ParseReleaseItemReply(const RedisReply& reply,
                                              const BatchItem& item);

// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag (the
// bytes between the first '{' and the next '}', if not empty) or of the
// whole key, mod 16384. Every key of a limit has the slot of
// LimitKeyTag(prefix, name); a batch for Redis Cluster groups its items by
// it (one Redis takes items of any slots in one call).
uint16_t HashSlot(std::string_view key);
// HashSlot(LimitKeyTag(prefix, name)) without building the tag: the slot
// of every key of limit `name` (a decision path's per-node health check).
uint16_t LimitSlot(std::string_view prefix, std::string_view name);

// A decision from an acquire result (us -> ns; source given). Allowed when
// something was granted (or a 0-token peek fitted, retry_after 0).
Decision ToDecision(const AcquireResult& r, DecisionSource source);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_SCRIPT_CALL_H_
