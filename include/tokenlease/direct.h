// Direct mode: every decision is one exact, atomic script call on Redis.
// The right mode for strict, low-rate limits shared by many processes (one
// SMS per day per user): no tokens are ever held locally, so the shared
// limit is exact, at the price of one round trip per decision. Concurrent
// callers are pipelined by the connection's client thread.
#ifndef TOKENLEASE_DIRECT_H_
#define TOKENLEASE_DIRECT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/decision.h"
#include "tokenlease/failure_mode.h"
#include "tokenlease/metrics.h"
#include "tokenlease/redis.h"
#include "tokenlease/spec.h"

namespace tokenlease {

// Options of a DirectLimiter. Every field has a usable default; Validate()
// (also run by DirectLimiter::Create) says which one is out of range.
struct DirectLimiterOptions {
  // The connection to use (shared with other limiters). If null, the
  // limiter creates its own from `redis`.
  std::shared_ptr<RedisConnection> connection;
  RedisOptions redis;
  // Prepended to every key: Redis keys are "{<key_prefix><key>}:<suffix>",
  // so all keys of one limited key share a Cluster hash slot. Two limiters
  // (in any process or language) share a limit when prefix, key and spec
  // are equal. 1 to 256 bytes, no '{' or '}'.
  std::string key_prefix = "tokenlease:";
  // Deadline of a decision when the call gives none; 0 means the
  // connection's RedisOptions::command_timeout. 0 .. 1 min.
  absl::Duration timeout = absl::ZeroDuration();
  // Longest key accepted, in bytes: a longer key is InvalidArgument before
  // any call to Redis (it would become a Redis key of that size).
  // 1 .. 65536.
  int32_t max_key_bytes = 1024;
  // What a call returns when Redis gives it no decision: no answer by its
  // deadline, no connection, a full queue, or a script error for the key
  // (a wrong type, a corrupt value). Unset (the default): that error, for
  // the caller to handle. Set (opt-in insurance): a Decision instead, and
  // the error is only counted (DirectStats) and logged nowhere:
  //   kFailClosed: denied (source kDirect), retry_after = the call's
  //     deadline (its timeout, else options.timeout, else the
  //     connection's command_timeout);
  //   kFailOpen: admitted (source kFailOpen);
  //   kFailLocal: decided by an in-process Limiter enforcing the spec
  //     divided by the instances sharing it, `fallback_instances` or the
  //     count `instance_group` discovers (source kFallback; a key's share
  //     starts full and refills across outages).
  // While the connection is kDown the mode decides at once, without a
  // call. Reserve follows the same rule. Invalid input (InvalidArgument) is
  // always an error. Nothing admitted this way is charged to Redis later.
  std::optional<FailureMode> failure_mode;
  // kFailLocal: how many instances share the limit (with instance_group:
  // until the first count). 1 .. 65536.
  int32_t fallback_instances = 1;
  // Instance discovery for kFailLocal's share, as
  // LeasedLimiterOptions::instance_group (the same sorted set, so direct
  // and leased limiters of one group count each other). A DirectLimiter
  // has no thread: it announces itself from its calls (one every
  // announce_ttl / 3 at most), so a limiter that makes no call for
  // announce_ttl drops out of the others' counts until its next call.
  // Empty (the default): no discovery. 1 .. 256 bytes without '{' or '}'.
  std::string instance_group;
  // As LeasedLimiterOptions::announce_ttl. 100 ms .. 10 min.
  absl::Duration announce_ttl = absl::Seconds(3);
  // As LeasedLimiterOptions::start_empty: after Redis lost its data, a
  // key without state counts as drained at the time its state began again.
  bool start_empty = false;
  // If set, called with stats() every stats_interval (steady clock) on the
  // connection's client thread (a DirectLimiter has no thread of its own):
  // keep it short and do not block (it holds up every reply of the
  // connection), and do not destroy the limiter from it. The first call
  // comes one interval after Create.
  std::function<void(const DirectStats&)> stats_callback;
  // 1 ms .. 1 h; used only with a stats_callback.
  absl::Duration stats_interval = absl::Seconds(10);

  // OK, or InvalidArgument naming the field and the accepted range (also
  // `redis`'s fields when no connection is given).
  absl::Status Validate() const;
};

class Limiter;

// What a DirectLimiter counted since it was created (DirectLimiter::
// stats()). docs/metrics.md gives each field's Prometheus name.
struct DirectStats {
  // Every decision returned (TryAcquire, Reserve, and their asynchronous
  // forms; not errors), by source and outcome: kDirect (Redis decided, or
  // fail_closed denied), kFailOpen, kFallback (fail_local).
  DecisionCounts decisions;
  // Script calls submitted to the connection (one per decision Redis was
  // asked for; a submit the full queue refused counts too).
  uint64_t redis_calls = 0;
  // decisions.Total() / redis_calls (0 before the first call): above 1
  // while the failure mode decides without calls.
  double decisions_per_call = 0;
  // Calls that got no decision from Redis (any error but InvalidArgument).
  uint64_t redis_failures = 0;
  // Of those, calls Redis answered with an error for the key: a wrong type
  // or a corrupt value in its keys (FailedPrecondition, Internal). With a
  // failure mode they are decided by it until the key is repaired: alert
  // on this counter.
  uint64_t key_errors = 0;
  // Decisions DirectLimiterOptions::failure_mode made for them.
  uint64_t fail_closed_denied = 0;
  uint64_t fail_open_admitted = 0;
  uint64_t fail_local_admitted = 0;
  uint64_t fail_local_denied = 0;
  // The instances kFailLocal's share is of now, and instance discovery's
  // announcements answered and failed (as LeaseStats).
  int32_t instances = 1;
  uint64_t announcements = 0;
  uint64_t announce_failures = 0;
  RedisStats redis;  // the connection's counters
};

namespace internal {
class LocalFallback;
}  // namespace internal

// A limit decided on Redis, one script call per decision. Thread-safe.
class DirectLimiter {
 public:
  // Called with the decision, or with an error if Redis gave none in time.
  using DecisionCallback = absl::AnyInvocable<void(absl::StatusOr<Decision>)>;
  using ReservationCallback =
      absl::AnyInvocable<void(absl::StatusOr<Reservation>)>;

  // Validates `spec` (ValidateSpec, plus the scripts' limits: whole
  // microseconds, see docs/lua-protocol.md) and `options`, and connects
  // (in the background) unless options.connection is given.
  static absl::StatusOr<std::unique_ptr<DirectLimiter>> Create(
      const LimitSpec& spec, const DirectLimiterOptions& options = {});
  // With instance discovery, withdraws this instance's announcement.
  ~DirectLimiter();

  // Asks Redis whether `cost` tokens of `key` may be taken now, and takes
  // them if so; blocks up to `timeout` (0: options.timeout). The decision's
  // source is kDirect and its times come from the Redis server's clock.
  // Errors (unless options.failure_mode turns them into decisions):
  // InvalidArgument (cost < 0 or above 2^50, or a key longer than
  // max_key_bytes; checked before any call to Redis; always an error),
  // DeadlineExceeded or Unavailable
  // (no answer in time; the call may or may not have been counted),
  // FailedPrecondition (a key of another type is in the way; the message
  // names it), ResourceExhausted (too many calls queued).
  absl::StatusOr<Decision> TryAcquire(
      std::string_view key, int64_t cost = 1,
      absl::Duration timeout = absl::ZeroDuration());

  // The same without blocking: `done` runs exactly once, on the connection's
  // client thread (keep it short), or on the calling thread before this
  // returns if the call could not be queued or the failure mode decided
  // without a call (the connection was kDown, also for the moments of a
  // reconnect).
  void TryAcquireAsync(std::string_view key, int64_t cost,
                       DecisionCallback done,
                       absl::Duration timeout = absl::ZeroDuration());

  // Borrowing (token bucket and GCRA bands with LimitSpec::max_borrow): takes
  // `cost` tokens now if they are available within `max_wait` (capped by
  // max_borrow); the caller must wait Reservation::wait before acting.
  absl::StatusOr<Reservation> Reserve(
      std::string_view key, int64_t cost, absl::Duration max_wait,
      absl::Duration timeout = absl::ZeroDuration());
  void ReserveAsync(std::string_view key, int64_t cost, absl::Duration max_wait,
                    ReservationCallback done,
                    absl::Duration timeout = absl::ZeroDuration());

  // The limit; the reference is valid while the limiter lives.
  const LimitSpec& spec() const { return spec_; }
  const std::string& key_prefix() const { return options_.key_prefix; }
  RedisConnection& connection() const { return *connection_; }
  // A snapshot of the counters (relaxed reads: each exact, not a joint
  // snapshot).
  DirectStats stats() const;

 private:
  DirectLimiter(const LimitSpec& spec, const DirectLimiterOptions& options,
                std::shared_ptr<RedisConnection> connection);
  struct Counters;
  struct Census;      // instance discovery (direct_limiter.cc)
  struct StatsTimer;  // the stats callback's timer (direct_limiter.cc)
  void Submit(std::string_view key, int64_t cost, int64_t max_wait_us,
              absl::Duration timeout, ReservationCallback done);
  // Instance discovery: announces and updates the share when due (one
  // caller at a time; the others go on).
  void TickCensus();

  const LimitSpec spec_;
  const DirectLimiterOptions options_;
  const std::shared_ptr<RedisConnection> connection_;
  // FailureMode::kFailLocal's share; null otherwise. Shared with callbacks
  // that may run on the client thread after this limiter is gone.
  std::shared_ptr<internal::LocalFallback> fallback_;
  std::shared_ptr<Counters> counters_;
  std::unique_ptr<Census> census_;  // null without an instance_group
  // Last: destroyed first, so the callback never sees a limiter being
  // destroyed. Null without a stats_callback.
  std::unique_ptr<StatsTimer> stats_timer_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_DIRECT_H_
