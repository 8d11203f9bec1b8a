// Leased mode: lock-free local buckets fed by token batches leased from a
// limit shared through Redis. The decision stays in-process (an atomic
// decrement, no clock read, no I/O); a reconciler thread leases batches
// with the acquire script before a key runs dry, returns what is unused,
// and charges what was admitted without a lease. docs/design.md gives the
// protocol and the accuracy bound.
#ifndef TOKENLEASE_LEASED_H_
#define TOKENLEASE_LEASED_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/decision.h"
#include "tokenlease/internal/decision_counts.h"
#include "tokenlease/internal/key_pin.h"
#include "tokenlease/internal/lease_hot.h"
#include "tokenlease/redis.h"
#include "tokenlease/shared_limit.h"
#include "tokenlease/spec.h"

namespace tokenlease {

namespace internal {
template <>
void KeyPin<LeaseHot>::AddPin(LeaseHot* e);
template <>
void KeyPin<LeaseHot>::RemovePin(LeaseHot* e);
}  // namespace internal

// What a key without a lease does (its first requests, and again after a
// lease ended). docs/design.md, "Keys without a lease", gives the bound.
enum class ColdKeyPolicy : uint8_t {
  // The default. Admit at once from the key's local credit: A =
  // max(1, floor(local_share x burst)) tokens for a key this instance has
  // not seen, then min(A, floor(remaining_share x what Redis said is
  // left)). Every token so admitted is charged to Redis in the next batch;
  // a key's credit plus its uncharged tokens never exceed A, so N instances
  // admit at most N x A beyond what Redis counted. A key that spends more
  // than half its credit asks for a lease, and decides from it.
  kLocalShare,
  kDeny,  // deny (and ask for a lease): nothing beyond what Redis granted
  kWait,  // wait up to LeaseOptions::cold_wait for the first lease
};

// How leases are sized, kept and returned. Every field has a usable
// default; Validate() (also run by LeasedLimiter::Create) says which one is
// out of range.
struct LeaseOptions {
  // A lease's tokens may be spent for at most this long after the grant;
  // the reconciler then returns what is left (also bounds how long tokens
  // can be stranded in an idle instance). 1 ms .. 1 h.
  absl::Duration lease_ttl = absl::Seconds(1);
  // No single lease takes more than this fraction of the first band's burst
  // (so one instance cannot hoard the limit). (0, 1].
  double max_lease_fraction = 0.1;
  // Nor more than this fraction of what Redis last reported as remaining:
  // as the shared limit nears exhaustion, leases shrink toward the minimum
  // batch and the last tokens spread over the instances that ask. (0, 1].
  double remaining_share = 0.25;
  // A lease request is only granted if at least the demand of this long is
  // available (at least 1 token); otherwise the key denies locally until
  // Redis says enough is there. Fewer, larger grants under contention.
  // 0 .. lease_ttl.
  absl::Duration min_batch = absl::Milliseconds(10);
  // Refill when the local balance falls below this fraction of the last
  // lease (cluster_low_water against a Redis Cluster). (0, 1).
  double low_water = 0.5;
  // low_water against a Redis Cluster (a "redis+cluster://" URL). Its
  // nodes take turns, one partial batch of calls each batch_window, so a
  // renewal may wait a window per node where one server's waits one; asked
  // earlier, it lands before the key runs dry. Lower: a key that runs dry
  // denies until its renewal, and that denial sends its node's batch at
  // once (with 0.5 on 3 primaries, 45 % of the calls went so: 30
  // decisions per Redis command in the long tail, against 45-48 with 0.8
  // and 48 on one server; docs/benchmarks.md, "Redis Cluster"). Higher:
  // the renewal is asked while more of the lease is unspent (what an
  // instance holds stays within the documented bound either way). (0, 1).
  double cluster_low_water = 0.8;
  ColdKeyPolicy cold_key_policy = ColdKeyPolicy::kLocalShare;
  // kWait: longest wait for a cold key's first lease. 0 .. 1 s.
  absl::Duration cold_wait = absl::Milliseconds(5);
  // kLocalShare: A, the most a key may admit without a lease in this
  // instance before Redis has counted it, as a fraction of the first band's
  // burst. Larger: longer bursts of a new key admitted at once; smaller:
  // less over-admission (at most instances x A per key). (0, 1].
  double local_share = 0.25;
  // The reconciler's period: lease expiry, denial-cache expiry and demand
  // estimates are checked this often, and calls leave at the end of a
  // tick. 100 us .. 1 s.
  absl::Duration tick = absl::Milliseconds(2);
  // Lease requests, charges and returns of many keys travel in one batch
  // call (lua/batch.lua, up to 64 items). A lone call leaves at the next
  // tick; after a partial batch, the next partial one waits until this
  // long after it. Full batches and a lease a decision is denied for leave
  // at once; the renewal of a key that would run dry waiting, and that
  // spends half a max-size lease within a window and a round trip (at its
  // pace or the limit's rate, whichever is lower), leaves by when Redis
  // may hold the request's minimum (docs/design.md, "The lease book and
  // the reconciler"). Larger: fewer Redis calls under a stream of keys (a
  // long tail of 100,000 keys: 20 ms made half the calls of 10 ms,
  // docs/benchmarks.md "Long tail"); smaller: charges reach Redis and
  // other keys' prefetched leases arrive sooner. 0 .. 1 s.
  absl::Duration batch_window = absl::Milliseconds(20);
  // A key that admitted from its local credit is charged this long after
  // its first such admission (what it admits meanwhile joins the same
  // charge; ReturnAll and Sync charge at once). The bound does not depend
  // on it (credit plus uncharged tokens never exceed A); larger: fewer
  // Redis items for keys visited often; smaller: Redis and the other
  // instances see the usage sooner. 0 .. lease_ttl.
  absl::Duration charge_delay = absl::Milliseconds(50);
  // One hash slot per batch call, as Redis Cluster needs (one script
  // call's keys must share a slot). Always on for a redis+cluster://
  // endpoint, whatever this says; a single Redis takes any keys in one
  // call.
  bool group_batches_by_slot = false;
  // Key entries kept ready, their memory already faulted in by the
  // reconciler, so that a decision on a new key allocates nothing and
  // touches no fresh page (a first touch costs about 10 us on a VM). About
  // 400 bytes each; a burst of more new keys than this within one tick
  // allocates the rest on the deciding thread (LeaseStats::spare_misses).
  // 0 .. 65536; 0: every new key allocates.
  int32_t spare_entries = 256;
  // A key with no lease and no activity for this long is dropped from
  // memory. >= 2 * lease_ttl.
  absl::Duration idle_evict = absl::Seconds(30);
  // On destruction, how long to wait for unused tokens to be returned.
  // 0 .. 1 min.
  absl::Duration release_deadline = absl::Seconds(1);
  // Hot keys (docs/design.md, "Hot keys: per-thread slices"): a key whose
  // adaptive lease reaches this many tokens (it spends that much within
  // about a lease's lead time) spreads its lease over per-thread slices, so
  // that threads deciding on it write only their own cache line (no locked
  // instruction). Slices hold parts of the lease, never more: the accuracy
  // bound does not change. Larger: fewer keys pay a slice's memory
  // (slices_per_key x 64 bytes); smaller: more keys scale with threads.
  // 0: never. 0 .. 2^40. Needs membarrier(2) (Linux >= 4.14); without it no
  // key gets slices.
  int64_t slice_threshold = 1024;
  // Slices per hot key: threads whose slice index (the lowest free one,
  // claimed at a thread's first sliced decision) is beyond it decide from
  // the key's balance. 0: 4 per CPU, 16 .. 256. 0 .. 1024.
  int32_t slices_per_key = 0;
  // Whether a hot key gets slices while one thread decides on it. true
  // (default): from the threshold on, whoever decides; a lone thread then
  // decides from its slice with plain loads and stores. false: only once
  // several threads do; a lone thread keeps the key's balance, one locked
  // fetch_sub a decision. What a lone thread gains depends on the CPU's
  // locked instructions: 2.7-3.2 ns a decision from its slice against
  // 10.3-10.6 ns from the balance on a 2-core Intel Xeon VM (a bare
  // fetch_sub: 7-8 ns); about even on an AMD EPYC VM (2.9-4.4 ns against
  // 2.9-4.3 ns; docs/benchmarks.md, "Measurements behind design
  // choices"). false saves the slices' memory and their idle returns'
  // process-wide barriers for keys only one thread decides on.
  bool slice_single_thread = true;
  // A slice whose tokens did not change for this long gives them back to
  // the key's balance (a thread that stops deciding holds nothing).
  // Smaller: fewer tokens idle in a quiet thread's slice; larger: fewer
  // process-wide barriers (one per sweep that returns any). Checked at
  // each tick. 0 .. 1 min.
  absl::Duration slice_idle = absl::Milliseconds(20);

  // OK, or InvalidArgument naming the field and the accepted range.
  absl::Status Validate() const;
};

// Options of a LeasedLimiter: the shared options (SharedLimitOptions,
// LimiterOptions) plus how leases are sized. Every field has a usable
// default; Validate() (also run by LeasedLimiter::Create) says which one is
// out of range.
struct LeasedLimiterOptions : SharedLimitOptions {
  LeaseOptions lease;
  // Metrics (docs/metrics.md). A key is near its limit (LeaseStats::
  // near_limit_keys) when it holds a lease or a cached refusal and Redis's
  // last reply about it said at most (1 - near_limit_fraction) x the first
  // band's burst is left. (0, 1]; 1: only keys Redis said were exhausted.
  double near_limit_fraction = 0.9;

  // OK, or InvalidArgument naming the field and the accepted range (also
  // `lease`'s, the shared fields', and `redis`'s when no connection is
  // given).
  absl::Status Validate() const;
};

// What this instance holds for one key (LeasedLimiter::Inspect). A snapshot
// of values that other threads change: for monitoring and tests.
struct LeaseKeyInfo {
  int64_t balance = 0;          // leased tokens this instance may still spend
  int64_t low_water = 0;        // a refill is asked for below this
  bool has_lease = false;       // a lease is active (else the key is cold)
  bool refill_pending = false;  // a lease request is queued or in flight
  bool denied = false;  // Redis refused; denying locally until it allows
  // A hot key: its lease is spread over per-thread slices
  // (LeaseOptions::slice_threshold); `balance` includes the
  // `sliced_tokens` they hold.
  bool sliced = false;
  int64_t sliced_tokens = 0;
};

// A limit shared through Redis, decided locally from leased tokens.
// Thread-safe. Bad input is denied with kInvalidArgument, a full registry
// with kKeyLimit, and while Redis cannot decide for a key that has no
// leased tokens left the failure mode decides (kFailClosed, kFailOpen,
// kFallback).
class LeasedLimiter {
 public:
  // A pre-resolved key: skips the lookup by name. Keeps its key in memory
  // while it exists; must not outlive its limiter. Copyable, like
  // Limiter::Handle: a copy is another pin on the key, and each copy keeps
  // its own refusal hint, so threads holding their own copies share nothing
  // but the key.
  class Handle : private internal::KeyPin<internal::LeaseHot> {
   public:
    Handle() = default;
    // True if this handle refers to a key (default-constructed and
    // moved-from ones do not).
    using KeyPin::valid;

   private:
    friend class LeasedLimiter;
    Handle(internal::LeaseHot* pinned, int64_t max_cost)
        : KeyPin(pinned), max_cost_(max_cost) {}
    // The limit's first-band burst when resolved (at most 2^40, spec.cc):
    // no lease can pay more, so a larger cost never touches the balance.
    // Kept here, not in the key, so that the inline path loads nothing the
    // entry pointer's load must precede. 0 when moved from, so that the
    // inline path leaves a handle without a key to SlowAcquire. After an
    // UpdateSpec it may be the old burst: a filter only, the balance holds
    // what Redis granted.
    internal::ResetOnMove<int64_t> max_cost_;
    // Set when a decision through this handle found too few tokens, cleared
    // when one finds enough: the next decision reads the balance before it
    // writes. Per handle, not per key.
    internal::RefusalHint expect_refusal_;
  };

  // Validates `spec` (as DirectLimiter does) and `options`, connects (in
  // the background) unless options.connection is given, and starts the
  // reconciler thread. Leased decisions never borrow: a spec with a
  // max_borrow is InvalidArgument (Limiter::Reserve and
  // DirectLimiter::Reserve borrow).
  static absl::StatusOr<std::unique_ptr<LeasedLimiter>> Create(
      const LimitSpec& spec, const LeasedLimiterOptions& options = {});
  // Returns every unused token to Redis and charges what was admitted
  // without a lease, waiting up to LeaseOptions::release_deadline.
  ~LeasedLimiter();
  LeasedLimiter(const LeasedLimiter&) = delete;
  LeasedLimiter& operator=(const LeasedLimiter&) = delete;

  // Never blocks (except ColdKeyPolicy::kWait on a key's first requests),
  // takes no lock and makes no system call (a new key is created lock-free
  // for readers; ShardedRegistry). Allowed decisions come from the key's
  // lease (source kLease; `remaining` is what is left of this instance's
  // lease) or from its local credit (kLocalCredit). Denials say when a retry
  // may succeed: the time Redis gave when it refused a lease, else an estimate
  // of the next lease's arrival.
  Decision TryAcquire(std::string_view key, int64_t cost = 1);
  // Inline: a decision served from the lease is three loads from the
  // handle (one a relaxed atomic), one relaxed fetch_sub and one relaxed
  // load on the key, and four compares, in the caller's code; counting it
  // (LimiterStats::decisions) adds a load and a store to a line only the
  // calling thread writes. Always inlined: GCC left the counted decision
  // as a call that returned the 32-byte Decision through memory, and the
  // next decision's locked fetch_sub waited for those stores to drain
  // (6-7 ns a decision instead of 3; docs/benchmarks.md, "Measurements
  // behind design choices").
  [[gnu::always_inline]] Decision TryAcquire(const Handle& handle,
                                             int64_t cost = 1) {
    return Decide<true>(handle, cost);
  }

  // A handle for `key` (created if needed). ResourceExhausted at max_keys;
  // InvalidArgument for a key longer than max_key_bytes.
  absl::StatusOr<Handle> Resolve(std::string_view key);

  // This instance's state for `key`; NotFound if the key is not in memory,
  // InvalidArgument if it is longer than max_key_bytes.
  absl::StatusOr<LeaseKeyInfo> Inspect(std::string_view key) const;

  // Replaces the limit. Leases requested from the reconciler's next step
  // on (within one LeaseOptions::tick) are sized for, and asked with, the
  // new spec, and Redis re-expresses each key's state under it (tokens
  // consumed stay consumed; docs/operations.md, "Changing a limit"); the
  // tokens of leases granted before are still spent until they expire
  // (lease_ttl). Keys' local credit and the fail_local share follow the new
  // spec. The rules are DirectLimiter::UpdateSpec's, and max_borrow stays
  // zero.
  absl::Status UpdateSpec(const LimitSpec& spec);

  // Returns every lease now and waits (up to `timeout`) for Redis to
  // confirm: for tests, and before a planned pause.
  absl::Status ReturnAll(absl::Duration timeout);

  // Waits (up to `timeout`) until the reconciler is idle: every lease
  // request, charge and return asked for before the call (and every call
  // they led to) has been answered by Redis and applied, and nothing else is
  // pending. For tests (a synchronisation point instead of polling) and for
  // tools that report after a burst of activity. DeadlineExceeded if Redis
  // did not answer in time, or if decisions kept asking for new leases.
  absl::Status Sync(absl::Duration timeout);

  // A snapshot of the counters and gauges (SharedLimitStats, with its
  // `lease` part). Walks the keys in memory for the gauges (O(keys)); takes
  // a process-wide mutex briefly to sum the decision counts, and the
  // limiter's slices mutex to add those counted in hot keys' slices
  // (O(slices ever in use at once)). Any thread.
  SharedLimitStats stats() const;
  // A copy of the spec in force when called.
  LimitSpec spec() const;
  RedisConnection& connection() const;

 private:
  class Impl;
  friend struct internal::LeaseBenchmarkAccess;
  explicit LeasedLimiter(std::unique_ptr<Impl> impl);

  // The handle decision; `kCount`: count it (LimiterStats::decisions). Only
  // benchmarks decide without counting (internal::LeaseBenchmarkAccess),
  // to measure what counting costs: the two differ in nothing else.
  template <bool kCount>
  [[gnu::always_inline]] Decision Decide(const Handle& handle, int64_t cost) {
    internal::LeaseHot* e = handle.entry_;
    // No load of the balance precedes the subtraction: on x86 a locked
    // instruction waits for earlier loads, and that dependent load cost
    // about 2 ns (docs/benchmarks.md,
    // "Measurements behind design choices"). A subtraction that
    // finds too few tokens is undone in AfterSubtract and sets the handle's
    // expect_refusal_, so that repeated denials (an exhausted limit under
    // load) only read the shared balance (SlowAcquire) instead of writing it
    // twice. A cost above the burst never subtracts, so each failed
    // subtraction in flight is at most 2^40: wrapping the balance around
    // would take 2^23 of them at once.
    // relaxed (expect_refusal_): a hint; either value gives a correct
    // decision.
    if (cost > 0 && cost <= handle.max_cost_.value &&
        !handle.expect_refusal_.flag.load(std::memory_order_relaxed))
        [[likely]] {
      // acquire: a hot key's slices are published once, fully built.
      if (internal::LeaseSlices* s = e->slices.load(std::memory_order_acquire))
          [[unlikely]] {
        return DecideSliced<kCount>(handle, *s, cost);
      }
      // relaxed: the balance is a count of tokens and publishes nothing
      // else; each token is taken by exactly one successful subtraction.
      // While a failed subtraction is in flight others see fewer tokens,
      // never more.
      const int64_t old = e->balance.fetch_sub(cost, std::memory_order_relaxed);
      // low_water >= 1, so this also says old >= cost; old - cost cannot
      // overflow (old >= -2^40 x threads, cost <= 2^40).
      if (old - cost >= e->low_water.load(std::memory_order_relaxed))
          [[likely]] {
        if constexpr (kCount) {
          internal::CountDecision(internal::DecisionCell(
              count_base_, true, DecisionSource::kLease));
        }
        return internal::LeaseAdmitted(old - cost);
      }
      return AfterSubtract<kCount>(handle, cost, old);
    }
    return SlowAcquire<kCount>(handle, cost);
  }

  // A hot key: pays `cost` from the calling thread's slice, in the slice
  // owner's critical section (tokenlease/internal/lease_hot.h): plain loads
  // and stores on a line only this thread writes, the decision counted in
  // the slice (LeaseSlice::ended). Else (no slice claimed
  // yet, too few tokens, or the reconciler is taking them) FromSlices.
  template <bool kCount>
  [[gnu::always_inline]] Decision DecideSliced(const Handle& handle,
                                               internal::LeaseSlices& s,
                                               int64_t cost) {
    int64_t remaining;
    if (internal::TakeFromSlice<kCount>(s, cost, &remaining)) [[likely]] {
      return internal::LeaseAdmitted(remaining);
    }
    return FromSlices<kCount>(handle, cost);
  }
  // Out of line: refills the thread's slice from the key's balance (or
  // decides from the balance). Counts the decision if kCount.
  template <bool kCount>
  Decision FromSlices(const Handle& handle, int64_t cost);

  // Out of line: the subtraction left the balance below the low-water mark
  // (ask for a refill) or found too few tokens (undo, mark the handle, and
  // take the slow path). Counts the decision if kCount.
  template <bool kCount>
  Decision AfterSubtract(const Handle& handle, int64_t cost, int64_t old);
  // The handle is invalid (max_cost_ is 0), the cost out of range, or the
  // handle expects a refusal: checks the balance before subtracting.
  // Counts the decision if kCount.
  template <bool kCount>
  Decision SlowAcquire(const Handle& handle, int64_t cost);

  std::unique_ptr<Impl> impl_;
  // This limiter's first cell in every thread's decision counts
  // (tokenlease/internal/decision_counts.h).
  const uint32_t count_base_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_LEASED_H_
