// What the two modes that share a limit through Redis have in common
// (DirectLimiter, LeasedLimiter): where the limit lives, what a decision does
// when Redis cannot decide (FailureMode), and one stats snapshot. Each
// mode's options embed SharedLimitOptions, so a field has the same name,
// type and default in both (docs/design.md, "The contract").
#ifndef TOKENLEASE_SHARED_LIMIT_H_
#define TOKENLEASE_SHARED_LIMIT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tokenlease/limiter.h"
#include "tokenlease/metrics.h"
#include "tokenlease/redis.h"

namespace tokenlease {

// What a decision does when Redis cannot decide for its key: the
// connection is down (RedisHealth::kDown), a call got no answer by its
// deadline, or Redis answered with an error for the key (a wrong type, a
// corrupt value). In leased mode tokens already leased are spent as
// always (Redis granted them), and this applies once they run out.
// docs/operations.md compares the modes.
enum class FailureMode : uint8_t {
  // The default: deny (source kFailClosed), as Redis would if it could not
  // count. Nothing is admitted beyond what Redis granted before the outage.
  kFailClosed,
  // Admit every request (source kFailOpen): the limit is off meanwhile.
  kFailOpen,
  // Enforce a local share (source kFallback): each instance decides alone
  // with the limit divided by the instances sharing it (every band's limit
  // and burst, rounded down, at least 1: with a limit below the instance
  // count the instances together admit up to one token per band each), in
  // an in-process engine. A key's share starts full on its first such
  // decision and is kept (refilling) across outages.
  kFailLocal,
};

// Returns a stable lower-case name ("fail_closed", "fail_open",
// "fail_local").
const char* FailureModeName(FailureMode m);

// What happens to tokens admitted under kFailOpen or kFailLocal.
enum class OutageUsage : uint8_t {
  // The default: not charged. The shared limit does not see them.
  kForget,
  // Leased mode: charged to Redis when it answers again (the debt a charge
  // may leave is at most one burst, so the long-run rate holds and an
  // outage never closes the limit for longer than a full refill). Token
  // bucket and GCRA bands only: a window that ended must not pay for its
  // usage in a new one (Create refuses kCharge with window bands). Direct
  // mode refuses it: a direct limiter keeps no usage between calls.
  kCharge,
};

struct SharedLimitStats;

// Options every limit shared through Redis has (direct and leased mode),
// on top of LimiterOptions (clock, max_keys, shards, max_key_bytes,
// shadow). Every field has a usable default; Validate() says which one is
// out of range.
struct SharedLimitOptions : LimiterOptions {
  // The connection to use (shared with other limiters). If null, the
  // limiter creates its own from `redis`.
  std::shared_ptr<RedisConnection> connection;
  RedisOptions redis;
  // Prepended to every key: Redis keys are "{<key_prefix><key>}:<suffix>",
  // so all keys of one limited key share a Cluster hash slot. Limiters (in
  // any process or language, in either mode) share a limit when prefix,
  // key and spec are equal. 1 to 256 bytes, no '{' or '}'.
  std::string key_prefix = "tokenlease:";
  // While Redis cannot decide for a key (FailureMode). Chosen per limit.
  FailureMode failure_mode = FailureMode::kFailClosed;
  // kFailLocal: how many instances share the limit; each enforces
  // 1/fallback_instances of it while Redis is away (with instance_group:
  // at most that share in the first announce_ttl, then the counted
  // instances'). Too small: the instances together admit more than the
  // limit during an outage; too large: less. 1 .. 65536.
  int32_t fallback_instances = 1;
  // Instance discovery, for kFailLocal's share. Empty (the default): the
  // share is of fallback_instances. Otherwise every limiter of this group
  // announces itself in Redis every announce_ttl / 3, in the sorted set
  // "{<key_prefix><instance_group>}:instances" (docs/lua-protocol.md,
  // announce.lua; Redis's time), and the share is of the instances whose
  // announcement has not expired: the highest count seen within the
  // announce_ttl before Redis's last answer (so a share never grows while
  // the instances of a Redis that restarted empty announce themselves
  // again, nor while Redis is away); fallback_instances counts as seen at
  // the start (instances started together may not all have announced when
  // the first count comes). Direct and leased limiters of one group count
  // each other. A direct limiter has no thread: it announces from its
  // calls, so one that makes no call for announce_ttl drops out of the
  // count until its next call. Give different limits different groups.
  // 1 .. 256 bytes without '{' or '}'.
  std::string instance_group;
  // How long an announcement lasts: a stopped instance leaves the count
  // after at most this long (one that ends normally leaves at once), and
  // the others' shares grow one announce_ttl later. Shorter: the count
  // follows the fleet sooner; longer: fewer calls (3 per announce_ttl per
  // instance). 100 ms .. 10 min.
  absl::Duration announce_ttl = absl::Seconds(3);
  // Leased mode only (OutageUsage).
  OutageUsage outage_usage = OutageUsage::kForget;
  // After Redis lost its data (a restart without persistence, a failover
  // to an empty replica), a key without state counts as drained at the
  // time its Redis state began again (RedisStats::state_since_us, the
  // marker every connection reads first), instead of as a full bucket: the
  // limit hands out no second burst, and keys refill from that time (one
  // refill period with nothing for a key that was idle). Also on a new
  // Redis. Token bucket, GCRA, fixed-window and sliding-counter bands
  // (Create refuses it with a sliding-log band). Default false: a key
  // without state is fresh. docs/operations.md, "Data loss".
  bool start_empty = false;
  // If set, called with stats() about every stats_interval: leased mode on
  // the reconciler's thread after a step (on `clock`), direct mode on the
  // connection's client thread (a DirectLimiter has no thread of its own;
  // steady clock). Keep it short and do not block (it delays leases, or
  // every reply of the connection), and do not destroy the limiter from
  // it. The first call comes one interval after Create.
  std::function<void(const SharedLimitStats&)> stats_callback;
  // 1 ms .. 1 h; used only with a stats_callback.
  absl::Duration stats_interval = absl::Seconds(10);

  // OK, or InvalidArgument naming the field and the accepted range (also
  // LimiterOptions' fields, and `redis`'s when no connection is given).
  absl::Status Validate() const;
};

// Leased mode's own figures (SharedLimitStats::lease; zero in direct mode).
// Counters since creation, then gauges summed over the keys in memory when
// stats() is called (it walks them: O(keys)).
struct LeaseStats {
  uint64_t lease_requests = 0;  // lease requests sent
  uint64_t leases_granted = 0;  // of those, answered with tokens
  uint64_t tokens_granted = 0;  // tokens received in leases
  // Leases that ended: by their lifetime (lease_ttl, or a fixed window's
  // end), or returned early (ReturnAll, the limiter's destruction), and the
  // unspent tokens the expired ones still held (given back to Redis).
  uint64_t leases_expired = 0;
  uint64_t tokens_expired = 0;
  uint64_t leases_returned = 0;
  uint64_t tokens_returned = 0;  // tokens Redis took back (every return)
  uint64_t denied_by_redis = 0;  // lease requests that got nothing
  uint64_t charges = 0;          // charge items for unleased admissions
  uint64_t tokens_charged = 0;
  // New keys that found no spare entry and allocated on the deciding
  // thread (LeaseOptions::spare_entries).
  uint64_t spare_misses = 0;
  // Gauges. Tokens of unexpired leases this instance holds and may still
  // spend without asking Redis (the positive balances). Redis counted them
  // when it granted them, so if they are all spent at a moment the shared
  // limit is exhausted, that many admissions exceed it.
  int64_t held_tokens = 0;
  // Unspent local credit (ColdKeyPolicy::kLocalShare): tokens keys without
  // a lease may still admit before Redis counts them.
  int64_t credit_tokens = 0;
  // Tokens admitted (local credit, and the failure mode's admissions with
  // OutageUsage::kCharge) that no charge has reached Redis with yet.
  int64_t uncharged_tokens = 0;
  // The current worst-case overshoot, held + credit + uncharged: the
  // admissions of this instance that Redis has not counted in the present
  // window, if every held and credited token were spent at the moment the
  // shared limit is exhausted. This instance's present term of the
  // accuracy bound's N x (A + M) (docs/design.md, "Accuracy bound"); at
  // most keys x (A + M).
  int64_t overshoot_tokens = 0;
  // Keys near their limit (LeasedLimiterOptions::near_limit_fraction).
  uint64_t near_limit_keys = 0;
  // Hot keys whose lease is spread over per-thread slices
  // (LeaseOptions::slice_threshold).
  uint64_t sliced_keys = 0;
};

// A snapshot of a limit shared through Redis (DirectLimiter::stats(),
// LeasedLimiter::stats()): LimiterStats (mode, decisions by source, keys)
// plus what both Redis modes count, with one naming. Each field is exact
// when read; fields are not read at one instant while traffic runs.
// docs/metrics.md gives each one's Prometheus name.
struct SharedLimitStats : LimiterStats {
  // Script calls sent to Redis: one per decision in direct mode, batch
  // calls of 1 to 64 items (leases, charges, returns of many keys) in
  // leased mode. A submit the full queue refused counts too.
  uint64_t redis_calls = 0;
  // decisions.Total() / redis_calls (0 before the first call): how many
  // decisions each Redis command paid for.
  double decisions_per_call = 0;
  // Requests that got no answer from Redis, or an error (direct: calls;
  // leased: lease, charge and return items).
  uint64_t redis_errors = 0;
  // Of those, the ones Redis answered with an error for the key: a wrong
  // type or a corrupt value in its keys, or the state of another spec.
  // The failure mode decides for such a key until it is repaired: alert
  // on this counter.
  uint64_t key_errors = 0;
  // The instances kFailLocal's share is of now: fallback_instances, or the
  // count discovered (SharedLimitOptions::instance_group).
  int32_t instances = 1;
  // Instance discovery: announcements Redis answered, and those that
  // failed (no connection, a timeout, an error such as a wrong-type key).
  uint64_t announcements = 0;
  uint64_t announce_failures = 0;
  LeaseStats lease;  // leased mode only
  RedisStats redis;  // the connection's counters
};

}  // namespace tokenlease

#endif  // TOKENLEASE_SHARED_LIMIT_H_
