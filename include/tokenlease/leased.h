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
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/failure_mode.h"
#include "tokenlease/metrics.h"
#include "tokenlease/redis.h"
#include "tokenlease/spec.h"

namespace tokenlease {

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

// FailureMode (tokenlease/failure_mode.h): what a decision does when Redis
// cannot decide for its key.

// What happens to tokens admitted under kFailOpen or kFailLocal.
enum class OutageUsage : uint8_t {
  // The default: not charged. The shared limit does not see them.
  kForget,
  // Charged to Redis when it answers again (the debt a charge may leave is
  // at most one burst, so the long-run rate holds and an outage never
  // closes the limit for longer than a full refill). Token bucket and GCRA
  // bands only: a window that ended must not pay for its usage in a new
  // one (Create refuses kCharge with window bands).
  kCharge,
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
  // lease. (0, 1).
  double low_water = 0.5;
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
  // long after it (full batches, and a lease a decision is denied for,
  // leave at once). Larger: fewer Redis calls under a stream of keys;
  // smaller: charges reach Redis and prefetched leases arrive sooner.
  // 0 .. 1 s.
  absl::Duration batch_window = absl::Milliseconds(10);
  // A key that admitted from its local credit is charged this long after
  // its first such admission (what it admits meanwhile joins the same
  // charge; ReturnAll and Sync charge at once). The bound does not depend
  // on it (credit plus uncharged tokens never exceed A); larger: fewer
  // Redis items for keys visited often; smaller: Redis and the other
  // instances see the usage sooner. 0 .. lease_ttl.
  absl::Duration charge_delay = absl::Milliseconds(50);
  // One hash slot per batch call (for Redis Cluster, where one script call
  // must stay within one slot). A single Redis takes any keys in one call.
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

  // OK, or InvalidArgument naming the field and the accepted range.
  absl::Status Validate() const;
};

// Options of a LeasedLimiter. Every field has a usable default; Validate()
// (also run by LeasedLimiter::Create) says which one is out of range.
struct LeasedLimiterOptions {
  // The connection to use (shared with other limiters); if null, the limiter
  // creates its own from `redis`.
  std::shared_ptr<RedisConnection> connection;
  RedisOptions redis;
  // Same meaning as DirectLimiterOptions::key_prefix: instances (and direct
  // limiters) share a limit when prefix, key and spec are equal.
  std::string key_prefix = "tokenlease:";
  LeaseOptions lease;
  // Keys held in memory at most (as LimiterOptions::max_keys); a new key
  // beyond it is denied with source kKeyLimit until idle keys are evicted
  // (LeaseOptions::idle_evict). 1 .. 2^30.
  int64_t max_keys = 1 << 20;
  // Registry shards (as LimiterOptions::shards): a power of two, 1 .. 4096.
  int32_t shards = 64;
  // Longest key accepted, in bytes (as LimiterOptions::max_key_bytes): a
  // longer key is denied with kInvalidArgument (Resolve, Inspect:
  // InvalidArgument) before it is stored or sent to Redis. 1 .. 65536.
  int32_t max_key_bytes = 1024;
  // While Redis cannot decide for a key (FailureMode). Chosen per limit.
  FailureMode failure_mode = FailureMode::kFailClosed;
  // kFailLocal: how many instances share the limit; each enforces
  // 1/fallback_instances of it while Redis is away. Too small: the
  // instances together admit more than the limit during an outage; too
  // large: less. 1 .. 65536.
  int32_t fallback_instances = 1;
  // Instance discovery, for kFailLocal's share. Empty (the default): the
  // share is of fallback_instances. Otherwise every limiter of this group
  // announces itself in Redis every announce_ttl / 3, in the sorted set
  // "{<key_prefix><instance_group>}:instances" (docs/lua-protocol.md,
  // announce.lua; Redis's time), and the share is of the instances whose
  // announcement has not expired: the highest count seen within the last
  // announce_ttl (so a share never grows while the instances of a Redis
  // that restarted empty announce themselves again), fallback_instances
  // until the first count, and the last count while Redis is away.
  // Limiters that share a limit use one group; give different limits
  // different groups. 1 .. 256 bytes without '{' or '}'.
  std::string instance_group;
  // How long an announcement lasts: a stopped instance leaves the count
  // after at most this long (one that ends normally leaves at once), and
  // the others' shares grow one announce_ttl later. Shorter: the count
  // follows the fleet sooner; longer: fewer calls (3 per announce_ttl per
  // instance). 100 ms .. 10 min.
  absl::Duration announce_ttl = absl::Seconds(3);
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
  // Shadow mode: decide and count as usual, but admit every request a
  // decision would deny (source kShadow, LeaseStats::shadow_denied). For
  // trying a limit on live traffic before enforcing it. What shadow mode
  // admits is not charged.
  bool shadow = false;
  // The reconciler's clock (lease expiry, demand estimates, the stats
  // callback's interval). The decision path reads no clock. Null:
  // DefaultClock(). Not owned; must outlive the limiter.
  Clock* clock = nullptr;

  // Metrics (docs/metrics.md). A key is near its limit (LeaseStats::
  // near_limit_keys) when it holds a lease or a cached refusal and Redis's
  // last reply about it said at most (1 - near_limit_fraction) x the first
  // band's burst is left. (0, 1]; 1: only keys Redis said were exhausted.
  double near_limit_fraction = 0.9;
  // If set, called with stats() about every stats_interval (on `clock`),
  // on the reconciler's thread, after a step: keep it short (it delays the
  // next step's leases), and do not destroy the limiter from it. The first
  // call comes one interval after Create.
  std::function<void(const LeaseStats&)> stats_callback;
  // 1 ms .. 1 h; used only with a stats_callback.
  absl::Duration stats_interval = absl::Seconds(10);

  // OK, or InvalidArgument naming the field and the accepted range (also
  // `lease`'s, and `redis`'s when no connection is given).
  absl::Status Validate() const;
};

// A snapshot of a leased limiter (LeasedLimiter::stats()): counters since
// creation, and gauges read now. Each field is exact when read; fields are
// not read at one instant while traffic runs. docs/metrics.md gives each
// one's Prometheus name.
struct LeaseStats {
  // Every decision returned, by source and outcome: kLease (admitted from
  // a lease; denied: no leased token left, Redis refused or cannot
  // decide), kLocalCredit, kFailOpen, kFallback (fail_local), kShadow,
  // kKeyLimit, kInvalidArgument.
  DecisionCounts decisions;
  uint64_t lease_requests = 0;  // acquire calls sent for leases
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
  uint64_t charges = 0;          // charge calls for unleased admissions
  uint64_t tokens_charged = 0;
  uint64_t redis_errors = 0;  // lease/release/charge calls that failed
  uint64_t batch_calls = 0;   // script calls sent (each 1 to 64 of the above)
  // Decisions per script call since creation (decisions.Total() /
  // batch_calls; 0 before the first call): how many decisions each Redis
  // command of this limiter paid for.
  double decisions_per_call = 0;
  // New keys that found no spare entry and allocated on the deciding
  // thread (LeaseOptions::spare_entries).
  uint64_t spare_misses = 0;
  uint64_t keys = 0;  // keys in memory now
  // Decisions made while Redis could not decide for their key
  // (FailureMode).
  uint64_t fail_closed_denied = 0;
  uint64_t fail_open_admitted = 0;
  uint64_t fail_local_admitted = 0;
  uint64_t fail_local_denied = 0;
  uint64_t shadow_denied = 0;  // denials shadow mode admitted
  // The instances kFailLocal's share is of now: fallback_instances, or the
  // count discovered (LeasedLimiterOptions::instance_group).
  int32_t instances = 1;
  // Instance discovery: announcements Redis answered, and those that
  // failed (no connection, a timeout, an error such as a wrong-type key).
  uint64_t announcements = 0;
  uint64_t announce_failures = 0;
  // Gauges, summed over the keys in memory when stats() is called (it
  // walks them: O(keys)).
  // Tokens of unexpired leases this instance holds and may still spend
  // without asking Redis (the positive balances). Redis counted them when
  // it granted them, so if they are all spent at a moment the shared
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
  RedisStats redis;  // the connection's counters
};

class LeasedLimiter;

namespace internal {
// The part of a leased key the inline decision path touches (the rest is in
// src/leased/lease_entry.h). Not an API: it is here so that
// LeasedLimiter::TryAcquire(handle) can be inlined into the caller.
// The decision for a request paid from the lease, `remaining` tokens left.
inline Decision LeaseAdmitted(int64_t remaining) {
  Decision d;
  d.allowed = true;
  d.source = DecisionSource::kLease;
  d.remaining = remaining;
  return d;
}

struct LeaseHot {
  // Tokens this instance may still spend; see docs/design.md.
  std::atomic<int64_t> balance{0};
  // A refill is asked for below this.
  std::atomic<int64_t> low_water{1};
};

// Decision counting (src/leased/decision_counts.h): each thread counts into
// an array only it writes; each limiter owns kCountsPerLimiter cells of
// every thread's array, its admitted decisions first, one cell per
// DecisionSource, then its denied ones.
inline constexpr uint32_t kCountsPerLimiter = 2 * kDecisionSources;
// The cell of a decision in the range starting at `base`.
constexpr uint32_t DecisionCell(uint32_t base, bool allowed,
                                DecisionSource source) {
  return base + (allowed ? 0 : kDecisionSources) +
         static_cast<uint32_t>(source);
}
// The calling thread's array (empty until its first count).
struct ThreadDecisionCounts {
  std::atomic<uint64_t>* cells = nullptr;
  uint32_t size = 0;
};
// Initial-exec: one fs-relative access, no __tls_get_addr call; constant
// initialization, so no guard either.
inline constinit thread_local ThreadDecisionCounts tls_decision_counts
    __attribute__((tls_model("initial-exec")));
// Counts into `cell` when the thread's array does not reach it yet (the
// thread's first decision for a limiter): takes a mutex once.
void CountDecisionSlow(uint32_t cell);
// Counts one decision into `cell` of the calling thread's array.
inline void CountDecision(uint32_t cell) {
  const ThreadDecisionCounts& t = tls_decision_counts;
  if (cell < t.size) [[likely]] {
    std::atomic<uint64_t>& c = t.cells[cell];
    // relaxed load and store, not fetch_add: only this thread writes its
    // array, so no locked instruction is needed; stats() sums the cells
    // with relaxed loads (a count publishes nothing).
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    CountDecisionSlow(cell);
  }
}

struct LeaseBenchmarkAccess;
}  // namespace internal

// What this instance holds for one key (LeasedLimiter::Inspect). A snapshot
// of values that other threads change: for monitoring and tests.
struct LeaseKeyInfo {
  int64_t balance = 0;          // leased tokens this instance may still spend
  int64_t low_water = 0;        // a refill is asked for below this
  bool has_lease = false;       // a lease is active (else the key is cold)
  bool refill_pending = false;  // a lease request is queued or in flight
  bool denied = false;  // Redis refused; denying locally until it allows
};

// A pre-resolved key: skips the lookup by name. Keeps its key in memory
// while it exists; must not outlive its limiter. Copyable, like KeyHandle:
// a copy is another pin on the key, and each copy keeps its own refusal
// hint, so threads holding their own copies share nothing but the key.
class LeaseHandle {
 public:
  LeaseHandle() = default;
  LeaseHandle(const LeaseHandle& other);
  LeaseHandle& operator=(const LeaseHandle& other);
  LeaseHandle(LeaseHandle&& other) noexcept;
  LeaseHandle& operator=(LeaseHandle&& other) noexcept;
  ~LeaseHandle();
  bool valid() const { return entry_ != nullptr; }

 private:
  friend class LeasedLimiter;
  LeaseHandle(internal::LeaseHot* entry, int64_t max_cost)
      : entry_(entry), max_cost_(max_cost) {}
  internal::LeaseHot* entry_ = nullptr;
  // The limit's first-band burst (at most 2^40, spec.cc): no lease can pay
  // more, so a larger cost never touches the balance. Kept here, not in the
  // key, so that the inline path loads nothing the entry pointer's load
  // must precede.
  int64_t max_cost_ = 0;
  // Set when a decision through this handle found too few tokens, cleared
  // when one finds enough: the next decision reads the balance before it
  // writes. Per handle, not per key: a copy, or a handle assigned to, starts
  // without it.
  mutable std::atomic<bool> expect_refusal_{false};
};

// A limit shared through Redis, decided locally from leased tokens.
// Thread-safe.
class LeasedLimiter {
 public:
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
  // (LeaseStats::decisions) adds a load and a store to a line only the
  // calling thread writes.
  Decision TryAcquire(const LeaseHandle& handle, int64_t cost = 1) {
    return Decide<true>(handle, cost);
  }

  // A handle for `key` (created if needed). ResourceExhausted at max_keys;
  // InvalidArgument for a key longer than max_key_bytes.
  absl::StatusOr<LeaseHandle> Resolve(std::string_view key);

  // This instance's state for `key`; NotFound if the key is not in memory,
  // InvalidArgument if it is longer than max_key_bytes.
  absl::StatusOr<LeaseKeyInfo> Inspect(std::string_view key) const;

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

  // A snapshot of the counters and gauges (LeaseStats). Walks the keys in
  // memory for the gauges (O(keys)); takes a process-wide mutex briefly to
  // sum the decision counts. Any thread.
  LeaseStats stats() const;
  // The limit; the reference is valid while the limiter lives.
  const LimitSpec& spec() const;
  RedisConnection& connection() const;

  class Impl;

 private:
  friend struct internal::LeaseBenchmarkAccess;
  explicit LeasedLimiter(std::unique_ptr<Impl> impl);

  // The handle decision; `kCount`: count it (LeaseStats::decisions). Only
  // benchmarks decide without counting (internal::LeaseBenchmarkAccess),
  // to measure what counting costs: the two differ in nothing else.
  template <bool kCount>
  Decision Decide(const LeaseHandle& handle, int64_t cost) {
    internal::LeaseHot* e = handle.entry_;
    // No load of the balance precedes the subtraction: on x86 a locked
    // instruction waits for earlier loads, and that dependent load cost
    // about 2 ns (docs/benchmarks.md, "before/after"). A subtraction that
    // finds too few tokens is undone in AfterSubtract and sets the handle's
    // expect_refusal_, so that repeated denials (an exhausted limit under
    // load) only read the shared balance (SlowAcquire) instead of writing it
    // twice. A cost above the burst never subtracts, so each failed
    // subtraction in flight is at most 2^40: wrapping the balance around
    // would take 2^23 of them at once.
    // relaxed (expect_refusal_): a hint; either value gives a correct
    // decision.
    if (cost > 0 && cost <= handle.max_cost_ &&
        !handle.expect_refusal_.load(std::memory_order_relaxed)) [[likely]] {
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

  // Out of line: the subtraction left the balance below the low-water mark
  // (ask for a refill) or found too few tokens (undo, mark the handle, and
  // take the slow path). Counts the decision if kCount.
  template <bool kCount>
  Decision AfterSubtract(const LeaseHandle& handle, int64_t cost, int64_t old);
  // The handle is invalid (max_cost_ is 0), the cost out of range, or the
  // handle expects a refusal: checks the balance before subtracting.
  // Counts the decision if kCount.
  template <bool kCount>
  Decision SlowAcquire(const LeaseHandle& handle, int64_t cost);

  std::unique_ptr<Impl> impl_;
  // This limiter's first cell in every thread's decision counts
  // (src/leased/decision_counts.h).
  const uint32_t count_base_;
};

namespace internal {
// For benchmarks only (bench/lease_bench.cc): the handle decision without
// counting it, to show what counting costs. Not an API.
struct LeaseBenchmarkAccess {
  static Decision TryAcquireUncounted(LeasedLimiter& limiter,
                                      const LeaseHandle& handle,
                                      int64_t cost = 1) {
    return limiter.Decide<false>(handle, cost);
  }
};
}  // namespace internal

}  // namespace tokenlease

#endif  // TOKENLEASE_LEASED_H_
