// The local rate limiter: answers TryAcquire(key, cost) in-process, lock-free
// for single-band limits, without I/O or allocation once a key exists. Its
// options are the base of every mode's (docs/design.md, "The contract").
#ifndef TOKENLEASE_LIMITER_H_
#define TOKENLEASE_LIMITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/internal/key_pin.h"
#include "tokenlease/metrics.h"
#include "tokenlease/spec.h"

namespace tokenlease {

namespace internal {
class LimiterCore;
struct KeyEntry;
template <>
void KeyPin<KeyEntry>::AddPin(KeyEntry* e);
template <>
void KeyPin<KeyEntry>::RemovePin(KeyEntry* e);
}  // namespace internal

// Settings of a Limiter that are not part of the limit itself, and the
// base of every mode's options (SharedLimitOptions, DirectLimiterOptions,
// LeasedLimiterOptions embed it): the same fields mean the same thing in
// every mode. Every field has a sensible default; Validate() says which
// one is out of range.
struct LimiterOptions {
  // Time source of what is decided in the process: every local decision,
  // and in the Redis modes the fail_local share, the census and (leased
  // mode) every choice of the reconciler: lease expiry, cached refusals,
  // the batch window, the charge delay, eviction, the stats interval.
  // Decisions on Redis read Redis's clock. nullptr means DefaultClock().
  // Not owned; must outlive the limiter.
  Clock* clock = nullptr;
  // Most keys held at once (Redis modes: in the fail_local share; leased
  // mode: leased keys too). A new key beyond it first reclaims idle keys
  // (those whose state is back to initial); if none, it is denied with
  // DecisionSource::kKeyLimit. Each local key costs about 130 bytes, a
  // leased one about 400 (docs/design.md, "Key registry"). 1 .. 2^30.
  int64_t max_keys = 1 << 20;
  // Registry shards (a power of two, 1 .. 4096). More shards, less
  // contention between threads that create keys by name; each costs 64
  // bytes plus an empty map.
  int32_t shards = 64;
  // Longest key accepted, in bytes. A decision on a longer key is denied
  // with DecisionSource::kInvalidArgument (Resolve, Inspect:
  // InvalidArgument) before the key is stored or sent to Redis: it bounds
  // what one key's name can cost in memory. 1 .. 65536.
  int32_t max_key_bytes = 1024;
  // Shadow mode: decide and count as usual, but admit every request a
  // decision would deny (source kShadow; the decision's counts show how
  // many). For trying a limit on live traffic before enforcing it. What
  // shadow mode admits is charged nowhere. Bad input (kInvalidArgument)
  // is still denied.
  bool shadow = false;

  // Returns OK or InvalidArgument naming the field and the accepted range.
  absl::Status Validate() const;
};

// A rate limiter for one LimitSpec over many keys, in this process only.
// Thread-safe: every method may be called concurrently from any thread.
//
// Guarantees:
//  - TryAcquire never blocks on I/O, never sleeps, and does not allocate
//    once the key exists (creating a key allocates once).
//  - Single-band token bucket, GCRA, fixed window and sliding counter keys
//    are updated with one 16-byte compare-and-swap: lock-free.
//  - Sliding-log bands and multi-band limits take a per-key spin lock held
//    for a few dozen instructions (docs/design.md, "Per-key lock").
//  - A request is charged to every band or to none.
//  - A clock that moves backwards never mints tokens.
class Limiter {
 public:
  // A pre-resolved key: skips the hash lookup on every call. The key stays
  // registered (is never evicted) while a handle to it exists. A handle must
  // not outlive its Limiter.
  //
  // Copyable, like LeasedLimiter::Handle: a copy is another pin on the same
  // key (one relaxed atomic increment when copied, nothing per decision),
  // so each worker thread or request context can hold its own copy without
  // a shared_ptr around it (an extra indirection on every decision) and
  // without threads sharing the handle's cache line.
  class Handle : private internal::KeyPin<internal::KeyEntry> {
   public:
    Handle() = default;
    // True if this handle refers to a key (default-constructed and
    // moved-from ones do not).
    using KeyPin::valid;
    // The key's name.
    std::string_view key() const;

   private:
    friend class Limiter;
    Handle(internal::LimiterCore* core, internal::KeyEntry* pinned)
        : KeyPin(pinned), core_(core) {}

    internal::LimiterCore* core_ = nullptr;
  };

  // Validates `spec` and `options`; returns InvalidArgument naming the wrong
  // field.
  static absl::StatusOr<std::unique_ptr<Limiter>> Create(
      const LimitSpec& spec, const LimiterOptions& options = {});

  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  // Admits and charges `cost` tokens for `key` if every band has them now;
  // never waits. cost 0 charges nothing and reports the state; a negative
  // cost is denied with DecisionSource::kInvalidArgument.
  Decision TryAcquire(std::string_view key, int64_t cost = 1);
  // Same, at the caller's time (nanoseconds since the Unix epoch), which
  // saves the clock read when the caller already has it. Times outside
  // [0, 2^62 - 1] (1970 to 2116) are clamped into it, as a custom Clock's
  // are.
  Decision TryAcquire(std::string_view key, int64_t cost, int64_t now_ns);
  // Same through a pre-resolved handle (no hash lookup).
  Decision TryAcquire(const Handle& handle, int64_t cost = 1);
  Decision TryAcquire(const Handle& handle, int64_t cost, int64_t now_ns);

  // Resolves `key` once for repeated use. ResourceExhausted if the registry
  // is at max_keys and no idle key can be reclaimed; InvalidArgument if the
  // key is longer than LimiterOptions::max_key_bytes.
  absl::StatusOr<Handle> Resolve(std::string_view key);

  // Borrowing: takes `cost` tokens now even if the bucket must go into debt,
  // provided the caller would have to wait at most min(max_wait,
  // spec.max_borrow) for them; the caller must then wait
  // Reservation::wait before acting. With max_borrow 0 this grants only
  // what TryAcquire would. Denied with kInvalidArgument (nothing charged)
  // unless every band is a token bucket or GCRA, and for a negative cost
  // or max_wait or a key longer than max_key_bytes.
  Reservation Reserve(std::string_view key, int64_t cost,
                      absl::Duration max_wait);

  // Waits for its turn (shaping, the "leaky bucket as a queue"): returns an
  // allowed Decision once `cost` tokens were charged, or a denied one if that
  // cannot happen within `timeout` (nothing is charged then). Token-bucket
  // and GCRA limits book a slot in arrival order (FIFO); window algorithms
  // retry after each retry_after. Sleeps on the Limiter's clock only if it is
  // the system clock; with another clock it sleeps in real time for the
  // computed wait, bounded by `timeout`.
  Decision Acquire(std::string_view key, int64_t cost, absl::Duration timeout);

  // Replaces the limit at run time and keeps each key's state: tokens
  // consumed stay consumed (a lowered rate does not refill anyone; keys idle
  // across 16 updates: see below), counts in windows and logs are kept. The
  // new spec must have the same number of bands with the same algorithm and
  // refill style (InvalidArgument otherwise); at most 2^24 - 1 updates per
  // Limiter (ResourceExhausted).
  //
  // Memory does not grow with the number of updates: the Limiter keeps the
  // last 16 compiled specs (a few hundred bytes each) and frees an older one
  // as soon as no thread uses it. A thread keeps the one it last decided
  // with until its next decision on this Limiter or its exit, so at most
  // one more per thread is kept. This call never waits for other threads.
  //
  // A token bucket or GCRA key whose last decision was 16 or more updates
  // ago, and that still owes tokens, keeps the time at which its bucket is
  // full again instead of its consumed tokens, rounded up to the next whole
  // nanosecond: it never gets more than a new key would, but after a lowered
  // rate it owes fewer tokens than an exact conversion would charge, after a
  // raised one more (docs/design.md, "Spec generations").
  absl::Status UpdateSpec(const LimitSpec& spec);

  // A copy of the spec in force when called.
  LimitSpec spec() const;
  // The clock in use.
  Clock* clock() const;
  // Keys currently registered.
  int64_t key_count() const;
  // Removes every key whose state is back to initial (bucket full, window
  // over, log empty) and that has no handle; returns how many. Also happens
  // automatically as the registry grows.
  int64_t EvictIdle();
  // Decisions counted since creation and keys now (a snapshot; counting
  // costs a store to a line only the deciding thread writes).
  LimiterStats stats() const;

 private:
  explicit Limiter(std::unique_ptr<internal::LimiterCore> core);
  std::unique_ptr<internal::LimiterCore> core_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_LIMITER_H_
