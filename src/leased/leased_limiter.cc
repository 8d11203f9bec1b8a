// src/leased: the leased mode (the public leased.h). Each key's decision
// is local, from a balance of tokens leased in batches from the shared
// limit in Redis: the handle path inline in leased.h, the rest in
// lease_decider.h; the keys in a ShardedRegistry (lease_keys.h); the lease
// accounting as a pure book (lease_book.h) with its sizing rule
// (lease_sizer.h); and the reconciler thread that drives the book over the
// Redis transport (reconciler.h). Failure modes, shadow mode, instance
// discovery and the counts are src/shared's. docs/design.md gives the
// protocol and the accuracy bound.
//
// This file: LeasedLimiter, its Impl (the owner of the parts, which wires
// them together), and LeasedLimiter::Handle.
#include <algorithm>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/absl_view.h"
#include "core/decision_counts.h"
#include "core/limiter_core.h"
#include "leased/lease_book.h"
#include "leased/lease_decider.h"
#include "leased/lease_entry.h"
#include "leased/lease_keys.h"
#include "leased/lease_transport.h"
#include "leased/reconciler.h"
#include "redis/instance_census.h"
#include "redis/redis_client.h"
#include "shared/census_driver.h"
#include "shared/failure_policy.h"
#include "shared/shared_checks.h"
#include "tokenlease/leased.h"

namespace tokenlease {

using internal::LeaseEntry;

namespace {

// Leased decisions never borrow (`who` names the caller).
absl::Status CheckNoBorrow(const LimitSpec& spec, std::string_view who) {
  if (spec.max_borrow == absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      internal::AbslView(who), ": spec.max_borrow is ",
      absl::FormatDuration(spec.max_borrow),
      ", but a leased decision never borrows (there is no Reserve in "
      "leased mode); set max_borrow to zero, or borrow with "
      "Limiter::Reserve or DirectLimiter::Reserve"));
}

// The book's options: against a Redis Cluster, cluster_low_water is the
// low-water mark (its nodes take turns for partial batches).
LeaseOptions BookOptions(LeaseOptions lease, bool cluster) {
  if (cluster) lease.low_water = lease.cluster_low_water;
  return lease;
}

}  // namespace

class LeasedLimiter::Impl {
 public:
  Impl(const LimitSpec& spec, const LeasedLimiterOptions& options,
       std::shared_ptr<RedisConnection> connection)
      : options_(options),
        connection_(std::move(connection)),
        client_(internal::RedisConnectionAccess::Client(*connection_)),
        clock_(options_.clock != nullptr ? options_.clock : DefaultClock()),
        spec_(spec),
        policy_(spec, options_, connection_->options().log),
        book_(spec, BookOptions(options_.lease, client_.cluster()),
              internal::RandomInstanceId(), std::random_device{}(),
              options_.near_limit_fraction),
        keys_(options_, &book_, &reconciler_),
        transport_(&client_, spec, options_.key_prefix, options_.start_empty),
        reconciler_(
            &book_, &keys_.registry(), &transport_, clock_, options_.lease,
            options_.key_prefix,
            static_cast<size_t>(std::min<int64_t>(options_.max_keys, 1 << 16))),
        census_(internal::CensusDriver::Create(options_, &client_,
                                               policy_.fallback())),
        decider_(options_, spec, &book_, &keys_, &reconciler_, &transport_,
                 &policy_) {
    book_.SetErrorSink([this](const absl::Status& error, bool key_error) {
      policy_.NoteError(error, key_error);
    });
    reconciler_.SetStepHook([this](int64_t now_ns) {
      if (census_ != nullptr) census_->MaybeTick(now_ns);
      // Without slice_single_thread, hot keys get slices once several
      // threads decide (LeaseSlicer).
      if (options_.lease.slice_threshold > 0) {
        book_.NoteDecidingThreads(
            internal::CountingThreads(policy_.count_base(), &counting_seen_));
      }
      ApplyPendingSpec();
    });
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
            options_.stats_callback(Stats());
          });
    }
    reconciler_.Start();
  }

  ~Impl() {
    closing_.store(true, std::memory_order_relaxed);  // relaxed: see above
    reconciler_.Stop(options_.lease.release_deadline);
    // After the reconciler's thread (the census's ticker) ended.
    census_.reset();
  }

  internal::FailurePolicy& policy() { return policy_; }
  internal::LeaseDecider& decider() { return decider_; }
  internal::LeaseKeys& keys() { return keys_; }
  internal::Reconciler& reconciler() { return reconciler_; }
  RedisConnection& connection() const { return *connection_; }

  absl::Status UpdateSpec(const LimitSpec& spec) {
    if (absl::Status s = CheckNoBorrow(spec, "LeasedLimiter::UpdateSpec");
        !s.ok()) {
      return s;
    }
    std::lock_guard<std::mutex> lock(spec_mu_);
    if (absl::Status s = internal::CheckSpecUpdate(spec_, spec, options_,
                                                   "LeasedLimiter::UpdateSpec",
                                                   LimiterMode::kLeased);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = policy_.UpdateSpec(spec); !s.ok()) return s;
    decider_.UpdateSpec(spec);
    spec_ = spec;
    pending_spec_ = spec;  // for the book and the transport
    return absl::OkStatus();
  }

  LimitSpec spec() const {
    std::lock_guard<std::mutex> lock(spec_mu_);
    return spec_;
  }

  SharedLimitStats Stats() const {
    SharedLimitStats s;
    s.mode = LimiterMode::kLeased;
    s.redis_calls = reconciler_.batch_calls();
    // Hot keys' slices count the decisions they admit inline.
    policy_.Fill(&s, /*share_keys=*/false, book_.slicer().Admitted());
    s.lease = book_.stats();
    // const_cast: the walk only reads the registry (epoch-guarded).
    const_cast<internal::LeaseKeys&>(keys_).AddGauges(&s);
    if (census_ != nullptr) census_->Fill(&s);
    s.redis = connection_->stats();
    return s;
  }

 private:
  // At the start of a reconciler step (its thread): the book and the
  // transport, which only that thread uses, take an updated spec.
  void ApplyPendingSpec() {
    std::optional<LimitSpec> spec;
    {
      std::lock_guard<std::mutex> lock(spec_mu_);
      spec.swap(pending_spec_);
    }
    if (!spec.has_value()) return;
    book_.SetSpec(*spec);
    transport_.SetSpec(*spec);
  }

  const LeasedLimiterOptions options_;
  const std::shared_ptr<RedisConnection> connection_;
  internal::RedisClient& client_;  // connection_'s
  Clock* const clock_;
  // The spec in force, and one the reconciler has yet to apply.
  mutable std::mutex spec_mu_;
  LimitSpec spec_;                         // guarded by spec_mu_
  std::optional<LimitSpec> pending_spec_;  // guarded by spec_mu_
  // Set when destruction begins: no stats callback from then on. Relaxed
  // (store and load): a hint, see the callback.
  std::atomic<bool> closing_{false};
  // The threads' decision counts at the last step (CountingThreads; the
  // reconciler's thread).
  std::vector<uint64_t> counting_seen_;
  internal::FailurePolicy policy_;
  // Destroyed in reverse: the reconciler (stopped first) before the keys
  // and the book it uses.
  internal::LeaseBook book_;
  internal::LeaseKeys keys_;
  internal::RedisLeaseTransport transport_;
  internal::Reconciler reconciler_;
  // Instance discovery (null without an instance_group), ticked at the
  // reconciler's steps.
  std::unique_ptr<internal::CensusDriver> census_;
  internal::LeaseDecider decider_;
};

// --- LeasedLimiter::Handle's pins ------------------------------------------

namespace internal {
template <>
void KeyPin<LeaseHot>::AddPin(LeaseHot* e) {
  // relaxed: the copied handle already holds a pin, so the entry is alive.
  if (e != nullptr) {
    static_cast<LeaseEntry*>(e)->pins.fetch_add(1, std::memory_order_relaxed);
  }
}
template <>
void KeyPin<LeaseHot>::RemovePin(LeaseHot* e) {
  // release: every use through the handle happens before an eviction that
  // sees zero pins (acquire).
  if (e != nullptr) {
    static_cast<LeaseEntry*>(e)->pins.fetch_sub(1, std::memory_order_release);
  }
}
}  // namespace internal

// --- LeasedLimiter ---------------------------------------------------------

absl::StatusOr<std::unique_ptr<LeasedLimiter>> LeasedLimiter::Create(
    const LimitSpec& spec, const LeasedLimiterOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = internal::CheckSharedLimit(
          spec, options, "LeasedLimiterOptions", LimiterMode::kLeased);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNoBorrow(spec, "LeasedLimiter::Create"); !s.ok()) {
    return s;
  }
  // After every check: a refused limiter opens no connection.
  absl::StatusOr<std::shared_ptr<RedisConnection>> connection =
      internal::GivenOrNewConnection(options.connection, options.redis);
  if (!connection.ok()) return connection.status();
  return std::unique_ptr<LeasedLimiter>(new LeasedLimiter(
      std::make_unique<Impl>(spec, options, *std::move(connection))));
}

LeasedLimiter::LeasedLimiter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)), count_base_(impl_->policy().count_base()) {}
LeasedLimiter::~LeasedLimiter() = default;

Decision LeasedLimiter::TryAcquire(std::string_view key, int64_t cost) {
  return impl_->decider().ByName(key, cost);
}

template <bool kCount>
Decision LeasedLimiter::AfterSubtract(const Handle& handle, int64_t cost,
                                      int64_t old) {
  LeaseEntry* e = static_cast<LeaseEntry*>(handle.entry_);
  if (old >= cost) {
    // Admitted, and below the low-water mark: ask for the refill now.
    impl_->decider().RequestRefill(e);
  } else {
    // relaxed: undoes this call's own subtraction (a count).
    e->balance.fetch_add(cost, std::memory_order_relaxed);
    // relaxed: a hint (see Decide); written only when it changes, so a
    // handle shared by threads is not written on every denial.
    if (!handle.expect_refusal_.flag.load(std::memory_order_relaxed)) {
      handle.expect_refusal_.flag.store(true, std::memory_order_relaxed);
    }
  }
  // One named result, built in place and finished in place on every path:
  // the caller's return slot, never copied (ApplyShadow says why).
  Decision d = old >= cost ? internal::LeaseAdmitted(old - cost)
                           : impl_->decider().Slow(e, cost, /*may_wait=*/true);
  if (!d.allowed) impl_->policy().Shadow(&d);
  if constexpr (kCount) internal::CountDecision(count_base_, d);
  return d;
}

template <bool kCount>
Decision LeasedLimiter::SlowAcquire(const Handle& handle, int64_t cost) {
  LeaseEntry* e = static_cast<LeaseEntry*>(handle.entry_);
  // Reached with an out-of-range cost, or when the handle expects a
  // refusal: Decide reads the balance before it subtracts, so denials
  // leave the balance's cache line shared. Enough tokens clear the mark.
  if (e != nullptr && cost > 0 && cost <= handle.max_cost_.value &&
      (e->balance.load(std::memory_order_relaxed) >= cost ||
       e->slices.load(std::memory_order_relaxed) != nullptr)) {
    // (A hot key decides from slices, which never set the mark.)
    handle.expect_refusal_.flag.store(false, std::memory_order_relaxed);
  }
  // One named result, as in AfterSubtract.
  Decision d = e == nullptr ? internal::LimiterCore::InvalidArgumentDecision()
                            : impl_->decider().Decide(e, cost);
  if (!d.allowed) impl_->policy().Shadow(&d);
  if constexpr (kCount) internal::CountDecision(count_base_, d);
  return d;
}

template <bool kCount>
Decision LeasedLimiter::FromSlices(const Handle& handle, int64_t cost) {
  LeaseEntry* e = static_cast<LeaseEntry*>(handle.entry_);
  // One named result, as in AfterSubtract. acquire: see LeaseHot::slices
  // (set once, never reset while a handle pins the key).
  Decision d = impl_->decider().FromSlices(
      e, e->slices.load(std::memory_order_acquire), cost, /*may_wait=*/true);
  if (!d.allowed) impl_->policy().Shadow(&d);
  if constexpr (kCount) internal::CountDecision(count_base_, d);
  return d;
}

// The two variants of the out-of-line halves (leased.h: counted, and for
// benchmarks uncounted).
template Decision LeasedLimiter::AfterSubtract<true>(const Handle&, int64_t,
                                                     int64_t);
template Decision LeasedLimiter::AfterSubtract<false>(const Handle&, int64_t,
                                                      int64_t);
template Decision LeasedLimiter::SlowAcquire<true>(const Handle&, int64_t);
template Decision LeasedLimiter::SlowAcquire<false>(const Handle&, int64_t);
template Decision LeasedLimiter::FromSlices<true>(const Handle&, int64_t);
template Decision LeasedLimiter::FromSlices<false>(const Handle&, int64_t);

absl::StatusOr<LeasedLimiter::Handle> LeasedLimiter::Resolve(
    std::string_view key) {
  absl::StatusOr<LeaseEntry*> e = impl_->keys().Pin(key);
  if (!e.ok()) return e.status();
  return Handle(static_cast<internal::LeaseHot*>(*e),
                impl_->decider().max_cost());
}

absl::StatusOr<LeaseKeyInfo> LeasedLimiter::Inspect(
    std::string_view key) const {
  return impl_->keys().Inspect(key);
}
absl::Status LeasedLimiter::UpdateSpec(const LimitSpec& spec) {
  return impl_->UpdateSpec(spec);
}
absl::Status LeasedLimiter::ReturnAll(absl::Duration timeout) {
  return impl_->reconciler().ReturnAll(timeout);
}
absl::Status LeasedLimiter::Sync(absl::Duration timeout) {
  return impl_->reconciler().Sync(timeout);
}
SharedLimitStats LeasedLimiter::stats() const { return impl_->Stats(); }
LimitSpec LeasedLimiter::spec() const { return impl_->spec(); }
RedisConnection& LeasedLimiter::connection() const {
  return impl_->connection();
}

}  // namespace tokenlease
