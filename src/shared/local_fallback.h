// FailureMode::kFailLocal's engine, for leased and direct mode: a local
// Limiter enforcing this instance's share of a shared limit (the limit
// divided by the instances that share it) while Redis cannot decide. With
// instance discovery the share follows the live count: one thread at a
// time (the census's driver) puts a new engine in place when the count
// changes, and deciding threads keep using the one they loaded until they
// leave it (epoch-based reclamation, base/epoch.h).
#ifndef TOKENLEASE_SRC_SHARED_LOCAL_FALLBACK_H_
#define TOKENLEASE_SRC_SHARED_LOCAL_FALLBACK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tokenlease/decision.h"
#include "tokenlease/limiter.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

class LocalFallback {
 public:
  // `spec` must be valid and its share of `instances` a valid local limit
  // (CheckSharedLimit checks this for 1 .. 65536 instances). `options`'
  // shadow is ignored: the shared limit applies shadow mode itself.
  LocalFallback(const LimitSpec& spec, const LimiterOptions& options,
                int32_t instances);
  ~LocalFallback();
  LocalFallback(const LocalFallback&) = delete;
  LocalFallback& operator=(const LocalFallback&) = delete;

  // Any thread: decides `key` from this instance's current share. As
  // Limiter::TryAcquire and Limiter::Reserve.
  Decision TryAcquire(std::string_view key, int64_t cost);
  Reservation Reserve(std::string_view key, int64_t cost,
                      absl::Duration max_wait);

  // One thread at a time: from now on the share is that of
  // `instances` (1 .. 65536). A change starts a new engine, so keys start
  // afresh with the new share (the count changes only while Redis answers,
  // when the engine decides for no key but those Redis refused with an
  // error). Also frees the engines no decision can still be using.
  void SetInstances(int32_t instances);
  // Any thread: the limit is `spec` from now on (its share, keeping each
  // key's state as Limiter::UpdateSpec does). `spec` passed the update
  // checks.
  absl::Status UpdateSpec(const LimitSpec& spec);
  // The count the current share is of. Any thread.
  int32_t instances() const {
    // relaxed: a value on its own (statistics).
    return instances_.load(std::memory_order_relaxed);
  }
  // Keys the current engine holds. Any thread.
  int64_t keys() const;

 private:
  // The current engine, with an epoch guard held by the caller.
  Limiter* Current() const;

  LimiterOptions options_;
  // Acquire by deciding threads, release by SetInstances: a new engine is
  // built before it is seen.
  std::atomic<Limiter*> current_;
  std::atomic<int32_t> instances_;
  // Guards spec_ and the engine swap against UpdateSpec (never taken by a
  // decision).
  mutable std::mutex mu_;
  LimitSpec spec_;
  // The engine in use, and those replaced, with the epoch they were
  // replaced at (guarded by mu_).
  std::unique_ptr<Limiter> owned_;
  std::vector<std::pair<uint64_t, std::unique_ptr<Limiter>>> retired_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_SHARED_LOCAL_FALLBACK_H_
