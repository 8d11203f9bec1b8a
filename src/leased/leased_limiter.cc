// src/leased: the leased mode (the public leased.h). Each key's decision
// is local, from a balance of tokens leased in batches from the shared
// limit in Redis: the decision path here and inline in leased.h; the key
// (lease_entry.h) in a ShardedRegistry; the lease accounting as a pure
// book (lease_book.h) with its sizing rule (lease_sizer.h); and the
// reconciler thread that drives the book over the Redis transport
// (reconciler.h). docs/design.md gives the protocol and the accuracy bound.
//
// This file: LeasedLimiter, its Impl (the decision path's slow half and the
// owner of the parts), and LeaseHandle.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/absl_view.h"
#include "core/local_fallback.h"
#include "core/options_checks.h"
#include "leased/decision_counts.h"
#include "leased/failure_mode.h"
#include "leased/lease_book.h"
#include "leased/lease_entry.h"
#include "leased/lease_transport.h"
#include "leased/reconciler.h"
#include "local/spec_facts.h"
#include "redis/instance_census.h"
#include "redis/redis_client.h"
#include "redis/script_call.h"
#include "tokenlease/leased.h"
#include "tokenlease/limiter.h"

namespace tokenlease {

using internal::kDenied;
using internal::kHasLease;
using internal::kNearLimit;
using internal::kRanDry;
using internal::kRedisFailed;
using internal::kRefillQueued;
using internal::kRetired;
using internal::kWantedWhileDenied;
using internal::LeaseEntry;

namespace {

// kFailLocal: the in-process engine enforcing this instance's share.
std::unique_ptr<internal::LocalFallback> MakeFallback(
    const LimitSpec& spec, const LeasedLimiterOptions& options, Clock* clock) {
  if (options.failure_mode != FailureMode::kFailLocal) return nullptr;
  LimiterOptions o;
  o.clock = clock;
  o.max_keys = options.max_keys;
  o.shards = options.shards;
  o.max_key_bytes = options.max_key_bytes;
  return std::make_unique<internal::LocalFallback>(spec, o,
                                                   options.fallback_instances);
}

// Instance discovery (LeasedLimiterOptions::instance_group), or null.
std::unique_ptr<internal::InstanceCensus> MakeCensus(
    const LeasedLimiterOptions& options, RedisConnection& connection,
    const std::string& instance_id) {
  if (options.instance_group.empty()) return nullptr;
  return std::make_unique<internal::InstanceCensus>(
      &connection.client(),
      internal::InstancesKey(options.key_prefix, options.instance_group),
      instance_id, options.announce_ttl, options.fallback_instances);
}

Decision InvalidArgumentDecision() {
  Decision d;
  d.source = DecisionSource::kInvalidArgument;
  d.retry_after_ns = kNever;
  return d;
}

}  // namespace

class LeasedLimiter::Impl final : public internal::LeaseRegistry::Owner {
 public:
  Impl(const LimitSpec& spec, const LeasedLimiterOptions& options,
       std::shared_ptr<RedisConnection> connection)
      : spec_(spec),
        options_(options),
        connection_(std::move(connection)),
        clock_(options_.clock != nullptr ? options_.clock : DefaultClock()),
        max_cost_(internal::FirstBandBurst(spec_)),
        max_key_bytes_(static_cast<size_t>(options_.max_key_bytes)),
        instance_id_(internal::RandomInstanceId()),
        count_base_(internal::AcquireDecisionCells()),
        book_(spec_, options_.lease, instance_id_, std::random_device{}(),
              options_.near_limit_fraction),
        registry_(this, options_.max_keys, options_.shards,
                  internal::LeaseRegistry::Growth::kRefusesWhenFull),
        credit_(book_.initial_credit()),
        fallback_(MakeFallback(spec_, options_, clock_)),
        census_(MakeCensus(options_, *connection_, instance_id_)),
        transport_(&connection_->client(), spec_, options_.key_prefix,
                   options_.start_empty),
        reconciler_(&book_, &registry_, &transport_, clock_, options_.lease,
                    options_.key_prefix,
                    static_cast<size_t>(
                        std::min<int64_t>(options_.max_keys, 1 << 16))) {
    if (census_ != nullptr) {
      reconciler_.SetStepHook([this](int64_t now_ns) {
        census_->Tick(now_ns);
        if (fallback_ != nullptr) fallback_->SetInstances(census_->count());
      });
    }
    if (options_.stats_callback) {
      const int64_t interval =
          absl::ToInt64Nanoseconds(options_.stats_interval);
      reconciler_.SetStepEndHook(
          [this, interval,
           due = clock_->NowNanos() + interval](int64_t now_ns) mutable {
            // relaxed: a hint; a callback that still runs while the
            // limiter is being destroyed finds every part alive (the
            // reconciler stops first).
            if (now_ns < due || closing_.load(std::memory_order_relaxed)) {
              return;
            }
            // From now, not from `due`: a clock that jumped calls once.
            due = now_ns + interval;
            options_.stats_callback(stats());
          });
    }
    reconciler_.Start();
  }

  ~Impl() override {
    closing_.store(true, std::memory_order_relaxed);  // relaxed: see above
    reconciler_.Stop(options_.lease.release_deadline);
    // After the reconciler's thread (the census's owner) ended.
    if (census_ != nullptr) census_->Leave();
    internal::ReleaseDecisionCells(count_base_);
  }

  // The first of this limiter's decision-count cells.
  uint32_t count_base() const { return count_base_; }
  // Counts a decision returned by name or out of line (LeaseStats::
  // decisions).
  void Count(const Decision& d) const {
    internal::CountDecision(
        internal::DecisionCell(count_base_, d.allowed, d.source));
  }

  // LeaseRegistry::Owner. Entries are retired only by the reconciler
  // (Growth::kRefusesWhenFull), which alone may read the book. A key the
  // book calls evictable is marked kRetired with a compare-and-swap on its
  // flags, which fails if a decision has queued a refill or a charge
  // meanwhile; neither is queued after the mark (Reconciler::RequestRefill,
  // RequestCharge), and a decision that admitted from the key's local
  // credit after the book's check is charged when the entry is freed
  // (LeaseBook::Bury).
  LeaseEntry* NewEntry(std::string_view name, int64_t) override {
    return book_.NewEntry(name);
  }
  // After the grace period: no decision can reach `e` any more.
  void DeleteEntry(LeaseEntry* e) override { book_.Bury(e); }
  bool TryRetire(LeaseEntry* e, int64_t now_ns) override {
    if (!book_.Evictable(e, now_ns)) return false;
    // Relaxed: the compare-and-swap below decides.
    uint32_t f = e->flags.load(std::memory_order_relaxed);
    // seq_cst: one side of the store-load pair with a handle's pin (see
    // ShardedRegistry), and ordered against RequestRefill's fetch_or.
    // kNearLimit is a metric: it never keeps a key in memory.
    if ((f & ~kNearLimit) != 0 ||
        !e->flags.compare_exchange_strong(f, f | kRetired,
                                          std::memory_order_seq_cst)) {
      return false;
    }
    // A decision still on this entry must not spend credit its successor
    // gets anew (what it already spent is charged when the entry is freed).
    book_.RevokeCredit(e);
    return true;
  }
  void Revive(LeaseEntry* e) override {
    e->flags.fetch_and(~kRetired, std::memory_order_seq_cst);
    // A charge request undone while it was retired: queue it again.
    if (e->Uncharged() > 0) {
      reconciler_.RequestCharge(e);
    }
  }

  // Pins `e` for a handle or a wait, unless it was retired (then the
  // caller looks the key up again). seq_cst: the other side of the pair in
  // TryRetire.
  static bool PinLive(LeaseEntry* e) {
    e->pins.fetch_add(1, std::memory_order_seq_cst);
    if (!(e->flags.load(std::memory_order_seq_cst) & kRetired)) [[likely]] {
      return true;
    }
    e->pins.fetch_sub(1, std::memory_order_release);
    return false;
  }

  // `may_wait`: false inside a registry lookup (ColdKeyPolicy::kWait must
  // not wait there: a long epoch critical section delays reclamation).
  [[gnu::always_inline]] Decision Decide(LeaseEntry* e, int64_t cost,
                                         bool may_wait = true) {
    // relaxed throughout: the balance is a count of tokens and publishes no
    // other memory; every token is taken by exactly one successful
    // subtraction, whatever the interleaving.
    if (cost > 0 && e->balance.load(std::memory_order_relaxed) >= cost) {
      const int64_t old = e->balance.fetch_sub(cost, std::memory_order_relaxed);
      if (old >= cost) [[likely]] {
        if (old - cost < e->low_water.load(std::memory_order_relaxed)) {
          reconciler_.RequestRefill(e);
        }
        return internal::LeaseAdmitted(old - cost);
      }
      e->balance.fetch_add(cost, std::memory_order_relaxed);
    }
    return Slow(e, cost, may_wait);
  }

  // True if a cold key's decision should wait for its first lease.
  bool ShouldWait(LeaseEntry* e, int64_t cost) const {
    return options_.lease.cold_key_policy == ColdKeyPolicy::kWait && cost > 0 &&
           cost <= max_cost_ &&
           !(e->flags.load(std::memory_order_acquire) & kHasLease);
  }

  // The largest cost a lease can pay (LeaseHandle::max_cost_).
  int64_t max_cost() const { return max_cost_; }

  Decision Slow(LeaseEntry* e, int64_t cost, bool may_wait) {
    if (cost < 0) return InvalidArgumentDecision();
    Decision d;
    d.source = DecisionSource::kLease;
    if (cost == 0) {
      d.allowed = true;
      d.remaining =
          std::max<int64_t>(0, e->balance.load(std::memory_order_relaxed));
      return d;
    }
    if (cost > max_cost_) {
      d.retry_after_ns = kNever;
      return d;
    }
    // relaxed: a sizing hint for the reconciler (the next lease covers at
    // least the largest cost denied). Only after the burst check: a cost no
    // lease can cover must not make every later lease request ask for it.
    if (e->wanted_cost.load(std::memory_order_relaxed) < cost) {
      e->wanted_cost.store(cost, std::memory_order_relaxed);
    }
    // acquire: pairs with the reconciler's flag updates.
    const uint32_t flags = e->flags.load(std::memory_order_acquire);
    // Redis cannot decide for this key: its failure mode decides, instead
    // of local credit (whose charge could not be made) or a wait.
    const bool no_redis = (flags & kRedisFailed) || transport_.Down();
    if (!(flags & kHasLease) && !no_redis) {
      switch (options_.lease.cold_key_policy) {
        case ColdKeyPolicy::kLocalShare:
          if (TakeLocalCredit(e, cost, &d)) return d;
          break;
        case ColdKeyPolicy::kWait:
          if (may_wait && WaitForLease(e, cost)) {
            d.allowed = true;
            d.remaining = std::max<int64_t>(
                0, e->balance.load(std::memory_order_relaxed));
            return d;
          }
          break;
        case ColdKeyPolicy::kDeny:
          break;
      }
    }
    if ((flags & kHasLease) && (flags & kRefillQueued) && !(flags & kRanDry)) {
      // The lease ran out before its refill arrived: lease larger next time.
      e->flags.fetch_or(kRanDry, std::memory_order_relaxed);
    }
    reconciler_.RequestRefill(e);
    if ((flags & kDenied) && !(flags & kWantedWhileDenied)) {
      // Tells the reconciler the key still has demand when the cached
      // refusal ends (an idle key is not asked for again).
      e->flags.fetch_or(kWantedWhileDenied, std::memory_order_relaxed);
    }
    if (no_redis) return FailureDecision(e, cost, d);
    if (flags & kDenied) {
      const int64_t until = e->deny_until_ns.load(std::memory_order_relaxed);
      // The reconciler's clock as of its last step (within one tick): a
      // denial reads no clock either.
      d.retry_after_ns = std::max<int64_t>(0, until - book_.coarse_now_ns());
    } else {
      d.retry_after_ns = book_.round_trip_ns();
    }
    return d;
  }

  // ColdKeyPolicy::kLocalShare: admits from the key's local credit, counts
  // the tokens as uncharged and queues the key for a charge. A key that has
  // spent more than half of A asks for a lease as well (it is busy enough
  // to decide from one).
  bool TakeLocalCredit(LeaseEntry* e, int64_t cost, Decision* d) {
    // relaxed: the credit is a count of tokens, as the balance; a failed
    // subtraction is undone and only makes others see fewer tokens.
    if (e->local_share.load(std::memory_order_relaxed) < cost) return false;
    const int64_t old =
        e->local_share.fetch_sub(cost, std::memory_order_relaxed);
    if (old < cost) {
      e->local_share.fetch_add(cost, std::memory_order_relaxed);
      return false;
    }
    // acq_rel: the reconciler's exchange takes whole admissions. Added
    // before the key is queued, so the charge the queue leads to sees it.
    e->unsynced.fetch_add(cost, std::memory_order_acq_rel);
    reconciler_.RequestCharge(e);
    if (2 * (old - cost) < credit_) reconciler_.RequestRefill(e);
    d->allowed = true;
    d->source = DecisionSource::kLocalCredit;
    d->remaining = old - cost;
    return true;
  }

  // The failure mode's decision (`d`: the denial Redis's absence leads to,
  // with its retry hint). Leases that arrive still pay first: this runs
  // only after the balance came up short.
  Decision FailureDecision(LeaseEntry* e, int64_t cost, Decision d) {
    switch (options_.failure_mode) {
      case FailureMode::kFailClosed:
        Count(counters_.fail_closed_denied);
        // The lease request (asked for above) is the probe: retry once it
        // may have come back.
        d.retry_after_ns =
            std::max(book_.round_trip_ns(),
                     absl::ToInt64Nanoseconds(options_.lease.tick));
        return d;
      case FailureMode::kFailOpen:
        Count(counters_.fail_open_admitted);
        d.allowed = true;
        d.source = DecisionSource::kFailOpen;
        d.retry_after_ns = 0;
        ChargeLater(e, cost);
        return d;
      case FailureMode::kFailLocal:
        break;
    }
    if (fallback_ == nullptr) [[unlikely]] {  // Create checked it; defensive
      Count(counters_.fail_closed_denied);
      return d;
    }
    // Reads the clock: only during an outage (the local engine needs the
    // time; the leased path does not).
    Decision local = fallback_->TryAcquire(e->name(), cost, clock_->NowNanos());
    local.source = DecisionSource::kFallback;
    if (local.allowed) {
      Count(counters_.fail_local_admitted);
      ChargeLater(e, cost);
    } else {
      Count(counters_.fail_local_denied);
    }
    return local;
  }

  // OutageUsage::kCharge: the failure mode's admission is charged when
  // Redis answers again.
  void ChargeLater(LeaseEntry* e, int64_t cost) {
    if (options_.outage_usage != OutageUsage::kCharge) return;
    // acq_rel: as `unsynced` (the charge that the queue leads to sees it).
    e->outage_unsynced.fetch_add(cost, std::memory_order_acq_rel);
    reconciler_.RequestCharge(e);
  }

  // Shadow mode: a denial is admitted (and counted), never charged.
  Decision Shadow(Decision d) {
    if (!shadow_ || d.allowed || d.source == DecisionSource::kInvalidArgument) {
      return d;
    }
    Count(counters_.shadow_denied);
    d.allowed = true;
    d.source = DecisionSource::kShadow;
    d.retry_after_ns = 0;
    return d;
  }

  bool WaitForLease(LeaseEntry* e, int64_t cost) {
    reconciler_.RequestRefill(e);
    reconciler_.WakeNow();  // this decision waits for it anyway
    const auto deadline = std::chrono::steady_clock::now() +
                          absl::ToChronoNanoseconds(options_.lease.cold_wait);
    while (std::chrono::steady_clock::now() < deadline) {
      if (e->flags.load(std::memory_order_acquire) & (kHasLease | kDenied)) {
        if (e->balance.fetch_sub(cost, std::memory_order_relaxed) >= cost) {
          return true;
        }
        e->balance.fetch_add(cost, std::memory_order_relaxed);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return false;
  }

  Decision TryAcquire(std::string_view key, int64_t cost) {
    LeaseEntry* wait_on = nullptr;
    bool retired = false;
    auto decide = [&](LeaseEntry* e) {
      if (e == nullptr) {
        Decision denied;
        denied.source = DecisionSource::kKeyLimit;
        denied.retry_after_ns = kNever;
        return denied;
      }
      if (ShouldWait(e, cost)) {
        // Wait outside the lookup, holding a pin instead.
        if (PinLive(e)) {
          wait_on = e;
        } else {
          retired = true;
        }
        return Decision{};
      }
      return Decide(e, cost, /*may_wait=*/false);
    };
    // One named result returned on every path (the caller's return slot;
    // see LimiterCore::DecideByName: an early return of another object
    // costs a copy and a store-forwarding stall, 12 ns measured). 0: the
    // decision path reads no clock (NewEntry ignores the time).
    Decision d = key.size() > max_key_bytes_ ? InvalidArgumentDecision()
                                             : registry_.With(key, 0, decide);
    while (retired) [[unlikely]] {  // look the key up again
        retired = false;
        d = registry_.With(key, 0, decide);
      }
    if (wait_on != nullptr) [[unlikely]] {
      d = Decide(wait_on, cost);
      // release: pairs with the reclaimer's acquire load of pins.
      wait_on->pins.fetch_sub(1, std::memory_order_release);
    }
    if (!d.allowed) [[unlikely]] {
      d = Shadow(d);
    }
    Count(d);
    return d;
  }

  absl::StatusOr<LeaseEntry*> Pin(std::string_view key) {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    for (;;) {
      bool retired = false;
      absl::StatusOr<LeaseEntry*> pinned = registry_.With(
          key, 0, [&](LeaseEntry* e) -> absl::StatusOr<LeaseEntry*> {
            if (e == nullptr) {
              return absl::ResourceExhaustedError(absl::StrCat(
                  "the limiter holds max_keys (", options_.max_keys,
                  ") keys and none is idle; raise "
                  "LeasedLimiterOptions::max_keys"));
            }
            retired = !PinLive(e);
            return e;
          });
      if (!retired) return pinned;
    }
  }

  void RequestRefill(LeaseEntry* e) { reconciler_.RequestRefill(e); }

  // OK, or InvalidArgument for a key longer than max_key_bytes.
  absl::Status CheckKey(std::string_view key) const {
    return internal::CheckKeySize("LeasedLimiterOptions", key,
                                  options_.max_key_bytes);
  }

  absl::StatusOr<LeaseKeyInfo> Inspect(std::string_view key) {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    return registry_.Find(
        key, [&](LeaseEntry* e) -> absl::StatusOr<LeaseKeyInfo> {
          if (e == nullptr) {
            return absl::NotFoundError(
                absl::StrCat("key \"", internal::AbslView(key),
                             "\" is not in memory (never used, or evicted)"));
          }
          LeaseKeyInfo info;
          // relaxed: a monitoring snapshot.
          info.balance = e->balance.load(std::memory_order_relaxed);
          info.low_water = e->low_water.load(std::memory_order_relaxed);
          const uint32_t f = e->flags.load(std::memory_order_acquire);
          info.has_lease = f & kHasLease;
          info.refill_pending = f & kRefillQueued;
          info.denied = f & kDenied;
          return info;
        });
  }

  LeaseStats stats() const {
    LeaseStats s = book_.stats();
    s.decisions = internal::SumDecisionCells(count_base_);
    s.keys = static_cast<uint64_t>(registry_.size());
    s.batch_calls = reconciler_.batch_calls();
    s.decisions_per_call = s.batch_calls == 0
                               ? 0
                               : static_cast<double>(s.decisions.Total()) /
                                     static_cast<double>(s.batch_calls);
    AddKeyGauges(&s);
    s.redis = connection_->stats();
    // relaxed: statistics.
    s.fail_closed_denied =
        counters_.fail_closed_denied.load(std::memory_order_relaxed);
    s.fail_open_admitted =
        counters_.fail_open_admitted.load(std::memory_order_relaxed);
    s.fail_local_admitted =
        counters_.fail_local_admitted.load(std::memory_order_relaxed);
    s.fail_local_denied =
        counters_.fail_local_denied.load(std::memory_order_relaxed);
    s.shadow_denied = counters_.shadow_denied.load(std::memory_order_relaxed);
    // The count the share in force is of: the census's latest count
    // reaches the share at the reconciler's next step.
    s.instances = fallback_ != nullptr ? fallback_->instances()
                  : census_ != nullptr ? census_->count()
                                       : options_.fallback_instances;
    if (census_ != nullptr) {
      s.announcements = census_->answered();
      s.announce_failures = census_->failed();
    }
    return s;
  }

  // The gauges summed over the keys in memory (LeaseStats).
  void AddKeyGauges(LeaseStats* s) const {
    // const_cast: ForEach only reads the registry (an epoch-guarded walk).
    const_cast<internal::LeaseRegistry&>(registry_).ForEach([s](LeaseEntry* e) {
      // relaxed: a monitoring snapshot of counts that decisions change
      // meanwhile; a negative balance is a failed subtraction about to
      // be undone, and holds nothing.
      s->held_tokens +=
          std::max<int64_t>(0, e->balance.load(std::memory_order_relaxed));
      s->credit_tokens +=
          std::max<int64_t>(0, e->local_share.load(std::memory_order_relaxed));
      s->uncharged_tokens += std::max<int64_t>(0, e->Uncharged());
      // relaxed: a snapshot of the flags (a metric, nothing read
      // through it).
      const uint32_t f = e->flags.load(std::memory_order_relaxed);
      if ((f & kNearLimit) && (f & (kHasLease | kDenied))) {
        ++s->near_limit_keys;
      }
    });
    s->overshoot_tokens =
        s->held_tokens + s->credit_tokens + s->uncharged_tokens;
  }

  absl::Status ReturnAll(absl::Duration timeout) {
    return reconciler_.ReturnAll(timeout);
  }
  absl::Status Sync(absl::Duration timeout) {
    return reconciler_.Sync(timeout);
  }

  const LimitSpec& spec() const { return spec_; }
  RedisConnection& connection() const { return *connection_; }

 private:
  const LimitSpec spec_;
  const LeasedLimiterOptions options_;
  const std::shared_ptr<RedisConnection> connection_;
  Clock* const clock_;
  const int64_t max_cost_;  // the first band's burst
  // options_.max_key_bytes, beside what the decision path reads.
  const size_t max_key_bytes_;
  const std::string instance_id_;  // unique per limiter instance
  // This limiter's decision-count cells (src/leased/decision_counts.h),
  // released after the reconciler stopped.
  const uint32_t count_base_;
  // Set when destruction begins: no stats callback from then on. Relaxed
  // (store and load): a hint, see the callback.
  std::atomic<bool> closing_{false};
  // Destroyed in reverse: the reconciler (stopped first) before the
  // registry and the book it uses.
  internal::LeaseBook book_;
  internal::LeaseRegistry registry_;
  const int64_t credit_;  // A: a new key's local credit (book_)
  const bool shadow_ = options_.shadow;
  // kFailLocal's engine (null for the other modes).
  const std::unique_ptr<internal::LocalFallback> fallback_;
  // Instance discovery (null without an instance_group); driven by the
  // reconciler's steps.
  const std::unique_ptr<internal::InstanceCensus> census_;
  // Counts of the failure and shadow paths (never the lease path). Relaxed:
  // statistics. Own cache line: they are written during outages by every
  // deciding thread, and must not slow the lines the lease path reads.
  struct alignas(64) Counters {
    std::atomic<uint64_t> fail_closed_denied{0}, fail_open_admitted{0},
        fail_local_admitted{0}, fail_local_denied{0}, shadow_denied{0};
  };
  Counters counters_;
  static void Count(std::atomic<uint64_t>& c) {
    c.fetch_add(1, std::memory_order_relaxed);
  }
  internal::RedisLeaseTransport transport_;
  internal::Reconciler reconciler_;
};

// --- LeaseHandle ----------------------------------------------------------

namespace {
void Unpin(internal::LeaseHot* entry) {
  // release: every use through the handle happens before an eviction that
  // sees zero pins (acquire).
  if (entry != nullptr) {
    static_cast<LeaseEntry*>(entry)->pins.fetch_sub(1,
                                                    std::memory_order_release);
  }
}
void AddPin(internal::LeaseHot* entry) {
  // relaxed: the copied handle already holds a pin, so the entry is alive.
  if (entry != nullptr) {
    static_cast<LeaseEntry*>(entry)->pins.fetch_add(1,
                                                    std::memory_order_relaxed);
  }
}
}  // namespace

LeaseHandle::LeaseHandle(const LeaseHandle& other)
    : entry_(other.entry_), max_cost_(other.max_cost_) {
  AddPin(entry_);
}
LeaseHandle& LeaseHandle::operator=(const LeaseHandle& other) {
  if (this != &other) {
    AddPin(other.entry_);
    Unpin(entry_);
    entry_ = other.entry_;
    max_cost_ = other.max_cost_;
    expect_refusal_.store(false, std::memory_order_relaxed);
  }
  return *this;
}
LeaseHandle::LeaseHandle(LeaseHandle&& other) noexcept
    : entry_(other.entry_), max_cost_(other.max_cost_) {
  other.entry_ = nullptr;
  other.max_cost_ = 0;
}
LeaseHandle& LeaseHandle::operator=(LeaseHandle&& other) noexcept {
  if (this != &other) {
    Unpin(entry_);
    entry_ = other.entry_;
    max_cost_ = other.max_cost_;
    expect_refusal_.store(false, std::memory_order_relaxed);
    other.entry_ = nullptr;
    other.max_cost_ = 0;
  }
  return *this;
}
LeaseHandle::~LeaseHandle() { Unpin(entry_); }

// --- LeasedLimiter ---------------------------------------------------------

absl::StatusOr<std::unique_ptr<LeasedLimiter>> LeasedLimiter::Create(
    const LimitSpec& spec, const LeasedLimiterOptions& options) {
  if (absl::Status s = internal::ValidateScriptSpec(spec); !s.ok()) return s;
  if (spec.max_borrow != absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LeasedLimiter::Create: spec.max_borrow is ",
        absl::FormatDuration(spec.max_borrow),
        ", but a leased decision never borrows (there is no Reserve in "
        "leased mode); set max_borrow to zero, or borrow with "
        "Limiter::Reserve or DirectLimiter::Reserve"));
  }
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = internal::CheckFailureOptions(spec, options); !s.ok()) {
    return s;
  }
  if (options.failure_mode == FailureMode::kFailLocal) {
    // The share must be a limit the local engine can keep exactly: the
    // configured count's, and with discovery the smallest share too.
    LimiterOptions o;
    o.max_keys = options.max_keys;
    o.shards = options.shards;
    o.max_key_bytes = options.max_key_bytes;
    for (int32_t instances : {options.fallback_instances,
                              options.instance_group.empty()
                                  ? options.fallback_instances
                                  : internal::InstanceCensus::kMaxInstances}) {
      absl::StatusOr<std::unique_ptr<Limiter>> share =
          Limiter::Create(internal::ShareOfLimit(spec, instances), o);
      if (!share.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "FailureMode::kFailLocal: the share of one of ", instances,
            " instances is not a valid local limit (", share.status().message(),
            "); choose another fallback_instances",
            options.instance_group.empty() ? "" : " or no instance_group"));
      }
    }
  }
  absl::StatusOr<std::shared_ptr<RedisConnection>> connection =
      internal::GivenOrNewConnection(options.connection, options.redis);
  if (!connection.ok()) return connection.status();
  return std::unique_ptr<LeasedLimiter>(new LeasedLimiter(
      std::make_unique<Impl>(spec, options, *std::move(connection))));
}

LeasedLimiter::LeasedLimiter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)), count_base_(impl_->count_base()) {}
LeasedLimiter::~LeasedLimiter() = default;

Decision LeasedLimiter::TryAcquire(std::string_view key, int64_t cost) {
  return impl_->TryAcquire(key, cost);
}

template <bool kCount>
Decision LeasedLimiter::AfterSubtract(const LeaseHandle& handle, int64_t cost,
                                      int64_t old) {
  LeaseEntry* e = static_cast<LeaseEntry*>(handle.entry_);
  // One named result on every path, counted before it returns: the
  // caller's return slot, with no copy (see Impl::TryAcquire).
  Decision d;
  if (old >= cost) {
    // Admitted, and below the low-water mark: ask for the refill now.
    impl_->RequestRefill(e);
    d = internal::LeaseAdmitted(old - cost);
  } else {
    // relaxed: undoes this call's own subtraction (a count).
    e->balance.fetch_add(cost, std::memory_order_relaxed);
    // relaxed: a hint (see TryAcquire); written only when it changes, so a
    // handle shared by threads is not written on every denial.
    if (!handle.expect_refusal_.load(std::memory_order_relaxed)) {
      handle.expect_refusal_.store(true, std::memory_order_relaxed);
    }
    d = impl_->Shadow(impl_->Slow(e, cost, /*may_wait=*/true));
  }
  if constexpr (kCount) {
    internal::CountDecision(
        internal::DecisionCell(count_base_, d.allowed, d.source));
  }
  return d;
}

template <bool kCount>
Decision LeasedLimiter::SlowAcquire(const LeaseHandle& handle, int64_t cost) {
  Decision d;  // one named result, as in AfterSubtract
  if (handle.entry_ == nullptr) {
    d = InvalidArgumentDecision();
  } else {
    LeaseEntry* e = static_cast<LeaseEntry*>(handle.entry_);
    // Reached with an out-of-range cost, or when the handle expects a
    // refusal: Decide reads the balance before it subtracts, so denials
    // leave the balance's cache line shared. Enough tokens clear the mark.
    if (cost > 0 && cost <= handle.max_cost_ &&
        e->balance.load(std::memory_order_relaxed) >= cost) {
      handle.expect_refusal_.store(false, std::memory_order_relaxed);
    }
    d = impl_->Shadow(impl_->Decide(e, cost));
  }
  if constexpr (kCount) {
    internal::CountDecision(
        internal::DecisionCell(count_base_, d.allowed, d.source));
  }
  return d;
}

// The two variants of the out-of-line halves (leased.h: counted, and for
// benchmarks uncounted).
template Decision LeasedLimiter::AfterSubtract<true>(const LeaseHandle&,
                                                     int64_t, int64_t);
template Decision LeasedLimiter::AfterSubtract<false>(const LeaseHandle&,
                                                      int64_t, int64_t);
template Decision LeasedLimiter::SlowAcquire<true>(const LeaseHandle&, int64_t);
template Decision LeasedLimiter::SlowAcquire<false>(const LeaseHandle&,
                                                    int64_t);

absl::StatusOr<LeaseHandle> LeasedLimiter::Resolve(std::string_view key) {
  absl::StatusOr<LeaseEntry*> e = impl_->Pin(key);
  if (!e.ok()) return e.status();
  return LeaseHandle(static_cast<internal::LeaseHot*>(*e), impl_->max_cost());
}

absl::Status LeasedLimiter::ReturnAll(absl::Duration timeout) {
  return impl_->ReturnAll(timeout);
}

absl::Status LeasedLimiter::Sync(absl::Duration timeout) {
  return impl_->Sync(timeout);
}

LeaseStats LeasedLimiter::stats() const { return impl_->stats(); }
absl::StatusOr<LeaseKeyInfo> LeasedLimiter::Inspect(
    std::string_view key) const {
  return impl_->Inspect(key);
}
const LimitSpec& LeasedLimiter::spec() const { return impl_->spec(); }
RedisConnection& LeasedLimiter::connection() const {
  return impl_->connection();
}

}  // namespace tokenlease
