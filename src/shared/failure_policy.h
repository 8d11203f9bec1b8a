// What a limit shared through Redis does when Redis cannot decide for a key
// (SharedLimitOptions::failure_mode), shadow mode, and the counts both Redis
// modes keep of their decisions and of Redis's errors. One per limiter; in
// direct mode shared with the reply callbacks, which may run after the
// limiter is gone (so it owns no connection). Thread-safe.
#ifndef TOKENLEASE_SRC_SHARED_FAILURE_POLICY_H_
#define TOKENLEASE_SRC_SHARED_FAILURE_POLICY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/decision_counts.h"
#include "core/limiter_core.h"
#include "shared/local_fallback.h"
#include "tokenlease/shared_limit.h"

namespace tokenlease::internal {

class FailurePolicy {
 public:
  // `spec` and `options` passed CheckSharedLimit. `log` (may be empty)
  // receives one line per new kind of error (NoteError).
  FailurePolicy(const LimitSpec& spec, const SharedLimitOptions& options,
                std::function<void(std::string_view)> log);
  FailurePolicy(const FailurePolicy&) = delete;
  FailurePolicy& operator=(const FailurePolicy&) = delete;

  // The decision for `cost` tokens of `key` while Redis cannot decide:
  // denied with source kFailClosed and retry_after `retry_ns`, admitted
  // with kFailOpen, or decided by this instance's share (kFallback). Not
  // counted (Finish does).
  Decision Decide(std::string_view key, int64_t cost, int64_t retry_ns);
  // The same for a reservation: kFailLocal borrows from the share.
  Reservation Reserve(std::string_view key, int64_t cost,
                      absl::Duration max_wait, int64_t retry_ns);

  // Shadow mode applied to a denial, in place (LimiterOptions::shadow;
  // ApplyShadow says why in place).
  void Shadow(Decision* d) const { ApplyShadow(d, shadow_); }
  // Counts `d` (LimiterStats::decisions).
  void Count(const Decision& d) const { counter_.Count(d); }
  // Makes `*d` what the caller gets: shadow mode applied, then counted.
  void Finish(Decision* d) const {
    if (!d->allowed) Shadow(d);
    Count(*d);
  }
  // The first cell of this limiter's decision counts (for an inline path
  // that counts by itself).
  uint32_t count_base() const { return counter_.base(); }

  // A request that got no decision from Redis: counted (redis_errors; and
  // key_errors when Redis answered with an error for the key), and logged:
  // at most a line a second, the same message at most once a minute (the
  // next line says how many were not logged).
  void NoteError(const absl::Status& error, bool key_error);
  // A script call sent (redis_calls; direct mode, which counts per call).
  void NoteCall() { calls_.fetch_add(1, std::memory_order_relaxed); }

  // The limit is `spec` from now on (the share follows).
  absl::Status UpdateSpec(const LimitSpec& spec);

  FailureMode mode() const { return mode_; }
  // kFailLocal's engine; null in the other modes.
  LocalFallback* fallback() const { return fallback_.get(); }

  // Fills decisions, redis_calls (this policy's count if it counted calls,
  // else the caller's, set before), decisions_per_call, redis_errors,
  // key_errors and instances (the share's, else fallback_instances), and
  // `keys` with the share's keys when `share_keys`. `lease_admitted`:
  // decisions admitted from the lease that the caller counted outside the
  // threads' counts (a leased limiter's slices), added to decisions.
  void Fill(SharedLimitStats* s, bool share_keys,
            uint64_t lease_admitted = 0) const;

 private:
  const FailureMode mode_;
  const bool shadow_;
  const int32_t configured_instances_;
  const std::unique_ptr<LocalFallback> fallback_;  // kFailLocal only
  DecisionCounter counter_;
  // relaxed: counters, read by Fill only; nothing is published through
  // them.
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> key_errors_{0};

  // The error log (rare: a mutex).
  const std::function<void(std::string_view)> log_;
  std::mutex log_mu_;
  std::string last_logged_;          // guarded by log_mu_
  int64_t last_log_ns_ = INT64_MIN;  // steady clock; guarded by log_mu_
  uint64_t unlogged_ = 0;            // guarded by log_mu_
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_SHARED_FAILURE_POLICY_H_
