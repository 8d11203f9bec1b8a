// Direct mode: every decision is one exact, atomic script call on Redis.
// The right mode for strict, low-rate limits shared by many processes (one
// SMS per day per user): no tokens are ever held locally, so the shared
// limit is exact, at the price of one round trip per decision. Concurrent
// callers are pipelined by the connection's client thread; a blocking call
// with few callers in flight makes its round trip on its own thread, on a
// caller lane (RedisOptions::caller_lanes).
#ifndef TOKENLEASE_DIRECT_H_
#define TOKENLEASE_DIRECT_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/decision.h"
#include "tokenlease/redis.h"
#include "tokenlease/shared_limit.h"
#include "tokenlease/spec.h"

namespace tokenlease {

// Options of a DirectLimiter: the shared options (SharedLimitOptions,
// LimiterOptions) plus the deadline of a call. Every field has a usable
// default; Validate() (also run by DirectLimiter::Create) says which one is
// out of range.
struct DirectLimiterOptions : SharedLimitOptions {
  // Deadline of a decision when the call gives none; 0 means the
  // connection's RedisOptions::command_timeout. A call that gets no answer
  // by then is decided by the failure mode. 0 .. 1 min.
  absl::Duration timeout = absl::ZeroDuration();

  // OK, or InvalidArgument naming the field and the accepted range (also
  // the shared fields', and `redis`'s when no connection is given).
  absl::Status Validate() const;
};

// A limit decided on Redis, one script call per decision. Thread-safe.
//
// Every call returns a Decision (or Reservation), as in the other modes:
// Redis's answer (source kDirect, times from the Redis server's clock), or
// the failure mode's decision when Redis gives none (no answer by the
// deadline, no connection, a full queue, an error for the key; sources
// kFailClosed, kFailOpen, kFallback); while the connection is kDown the
// mode decides at once, without a call. Bad input is denied with
// kInvalidArgument before any call. What went wrong is counted
// (SharedLimitStats::redis_errors, key_errors) and each new kind of error
// is logged through RedisOptions::log. Nothing admitted by the failure
// mode is charged to Redis later.
class DirectLimiter {
 public:
  // Called with the decision: exactly once, on the connection's client
  // thread (keep it short), or on the calling thread before the call
  // returns if the call could not be queued or the failure mode decided
  // without a call.
  using DecisionCallback = absl::AnyInvocable<void(Decision)>;
  using ReservationCallback = absl::AnyInvocable<void(Reservation)>;

  // Validates `spec` (ValidateSpec, plus the scripts' limits: whole
  // microseconds, see docs/lua-protocol.md) and `options`, and connects
  // (in the background) unless options.connection is given.
  static absl::StatusOr<std::unique_ptr<DirectLimiter>> Create(
      const LimitSpec& spec, const DirectLimiterOptions& options = {});
  // With instance discovery, withdraws this instance's announcement.
  ~DirectLimiter();
  DirectLimiter(const DirectLimiter&) = delete;
  DirectLimiter& operator=(const DirectLimiter&) = delete;

  // Asks Redis whether `cost` tokens of `key` may be taken now, and takes
  // them if so; blocks for the round trip, up to `timeout` (0:
  // options.timeout), made on this thread when a caller lane is free
  // (RedisOptions::caller_lanes), else through the client thread. Denied
  // with kInvalidArgument for a cost below 0 or above 2^50 or a key longer
  // than max_key_bytes.
  Decision TryAcquire(std::string_view key, int64_t cost = 1,
                      absl::Duration timeout = absl::ZeroDuration());
  // The same without blocking: `done` runs as DecisionCallback says.
  void TryAcquireAsync(std::string_view key, int64_t cost,
                       DecisionCallback done,
                       absl::Duration timeout = absl::ZeroDuration());

  // Borrowing (token bucket and GCRA bands with LimitSpec::max_borrow): takes
  // `cost` tokens now if they are available within `max_wait` (capped by
  // max_borrow); the caller must wait Reservation::wait before acting.
  // Blocks for the round trip as TryAcquire.
  Reservation Reserve(std::string_view key, int64_t cost,
                      absl::Duration max_wait,
                      absl::Duration timeout = absl::ZeroDuration());
  void ReserveAsync(std::string_view key, int64_t cost, absl::Duration max_wait,
                    ReservationCallback done,
                    absl::Duration timeout = absl::ZeroDuration());

  // Replaces the limit for calls made from now on (calls in flight keep
  // theirs). Redis keeps each key's state and re-expresses it under the
  // new spec: tokens consumed stay consumed (docs/operations.md, "Changing
  // a limit"). The new spec must keep the bands' number, algorithms and
  // refill styles, and each window band its period and alignment
  // (InvalidArgument otherwise: Redis could not take the state over). The
  // fail_local share follows.
  absl::Status UpdateSpec(const LimitSpec& spec);

  // A copy of the spec in force when called.
  LimitSpec spec() const;
  RedisConnection& connection() const;
  // A snapshot of the counters (relaxed reads: each exact, not a joint
  // snapshot).
  SharedLimitStats stats() const;

 private:
  class Impl;
  explicit DirectLimiter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_DIRECT_H_
