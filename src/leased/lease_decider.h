// The decision path of a LeasedLimiter beyond the inline handle path
// (tokenlease/leased.h): a key's balance when the handle path could not
// decide, keys without a lease (local credit, waiting for the first lease,
// or denial), refill and charge requests to the reconciler, and the
// failure mode's decision (src/shared) while Redis cannot decide. Any
// thread; reads no clock except on a cold key's wait (ColdKeyPolicy::kWait)
// and in the fail_local share.
#ifndef TOKENLEASE_SRC_LEASED_LEASE_DECIDER_H_
#define TOKENLEASE_SRC_LEASED_LEASE_DECIDER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "leased/lease_book.h"
#include "leased/lease_entry.h"
#include "leased/lease_keys.h"
#include "leased/lease_slices.h"
#include "leased/lease_transport.h"
#include "leased/reconciler.h"
#include "shared/failure_policy.h"
#include "tokenlease/leased.h"

namespace tokenlease::internal {

// A denial by a cached refusal of Redis: retry after `retry_after_ns`.
inline Decision LeaseRefused(int64_t retry_after_ns) {
  Decision d;
  d.source = DecisionSource::kLease;
  d.retry_after_ns = retry_after_ns;
  return d;
}

class LeaseDecider {
 public:
  // Every pointer must outlive the decider. `spec` gives the largest cost
  // (the first band's burst) and the book a new key's credit.
  LeaseDecider(const LeasedLimiterOptions& options, const LimitSpec& spec,
               LeaseBook* book, LeaseKeys* keys, Reconciler* reconciler,
               LeaseTransport* transport, FailurePolicy* policy);

  // Decides for `e` (kept alive by the caller: a lookup or a pin), from
  // its balance, else Slow. Not counted, no shadow mode. `may_wait`: false
  // inside a registry lookup (ColdKeyPolicy::kWait must not wait there: a
  // long epoch critical section delays reclamation).
  [[gnu::always_inline]] Decision Decide(LeaseEntry* e, int64_t cost,
                                         bool may_wait = true) {
    // acquire: a hot key's slices are published once, fully built.
    if (LeaseSlices* s = e->slices.load(std::memory_order_acquire))
        [[unlikely]] {
      int64_t remaining;
      if (cost > 0 && TakeFromSlice<false>(*s, cost, &remaining)) [[likely]] {
        return LeaseAdmitted(remaining);
      }
      return FromSlices(e, s, cost, may_wait);
    }
    return FromBalance(e, cost, may_wait);
  }

  // A hot key: from the calling thread's slice (refilled from the balance,
  // lease_slices.h), else from the balance.
  Decision FromSlices(LeaseEntry* e, LeaseSlices* s, int64_t cost,
                      bool may_wait);

  // From the key's balance, else Slow.
  [[gnu::always_inline]] Decision FromBalance(LeaseEntry* e, int64_t cost,
                                              bool may_wait) {
    // relaxed throughout: the balance is a count of tokens and publishes no
    // other memory; every token is taken by exactly one successful
    // subtraction, whatever the interleaving.
    if (cost > 0 && e->balance.load(std::memory_order_relaxed) >= cost) {
      const int64_t old = e->balance.fetch_sub(cost, std::memory_order_relaxed);
      if (old >= cost) [[likely]] {
        if (old - cost < e->low_water.load(std::memory_order_relaxed)) {
          reconciler_->RequestRefill(e);
        }
        return LeaseAdmitted(old - cost);
      }
      e->balance.fetch_add(cost, std::memory_order_relaxed);
    }
    // Every return builds the caller's result in place: a Decision assigned
    // from Slow's was copied through the stack, and its reload waited on
    // the stores (a store-forwarding stall, 27 % of a denial by name).
    int64_t retry_after_ns;
    if (CachedRefusal(e, cost, &retry_after_ns)) {
      return LeaseRefused(retry_after_ns);
    }
    return Slow(e, cost, may_wait);
  }

  // A key whose refusal by Redis is cached (kDenied) and whose demand is
  // already noted (kWantedWhileDenied), asked again with a cost a lease
  // can pay: Slow's decision and side effects without its calls (the
  // common denial of a busy limit: by name, 1.31x the mutex baseline
  // before, 1.02x after on the AMD VM, docs/benchmarks.md, "Measurements
  // behind design choices"): true, with the refusal's retry in
  // `*retry_after_ns`. False leaves every other case to Slow.
  [[gnu::always_inline]] bool CachedRefusal(LeaseEntry* e, int64_t cost,
                                            int64_t* retry_after_ns) {
    // acquire: as Slow's (pairs with the reconciler's flag updates).
    const uint32_t f = e->flags.load(std::memory_order_acquire);
    // Not while a request is queued or in flight (Slow may mark kRanDry),
    // nor after a failed request (the failure mode decides).
    constexpr uint32_t kMask =
        kDenied | kWantedWhileDenied | kRefillQueued | kRedisFailed;
    if ((f & kMask) != (kDenied | kWantedWhileDenied) || cost <= 0 ||
        cost > max_cost()) {
      return false;
    }
    // relaxed (wanted_cost, local_share, deny_until_ns): read as Slow reads
    // them (a sizing hint, a count of tokens, a retry hint).
    if (e->wanted_cost.load(std::memory_order_relaxed) < cost) return false;
    if (!(f & kHasLease)) {
      // A cold key's policy may still admit or wait (Slow).
      const ColdKeyPolicy policy = options_.lease.cold_key_policy;
      if (policy == ColdKeyPolicy::kWait) return false;
      if (policy == ColdKeyPolicy::kLocalShare &&
          e->local_share.load(std::memory_order_relaxed) >= cost) {
        return false;
      }
    }
    if (transport_->DownFor(e->name())) return false;
    // RequestRefill's only effect on a denied key.
    if (!(f & kManyThreads)) NoteRefiller(e);
    const int64_t until = e->deny_until_ns.load(std::memory_order_relaxed);
    *retry_after_ns = std::max<int64_t>(0, until - book_->coarse_now_ns());
    return true;
  }

  // The balance had too few tokens for `cost` (or cost is out of range).
  Decision Slow(LeaseEntry* e, int64_t cost, bool may_wait);

  // A decision by name, finished (shadow mode, counted).
  Decision ByName(std::string_view key, int64_t cost);

  void RequestRefill(LeaseEntry* e) { reconciler_->RequestRefill(e); }

  // The largest cost a lease can pay (Handle::max_cost_).
  int64_t max_cost() const {
    // relaxed: a value on its own (UpdateSpec's).
    return max_cost_.load(std::memory_order_relaxed);
  }
  // The limit is `spec` from now on (UpdateSpec): the largest cost, and
  // the credit below which a key asks for a lease.
  void UpdateSpec(const LimitSpec& spec);

 private:
  // True if a cold key's decision should wait for its first lease.
  bool ShouldWait(LeaseEntry* e, int64_t cost) const {
    // acquire: pairs with the reconciler's flag updates.
    return options_.lease.cold_key_policy == ColdKeyPolicy::kWait && cost > 0 &&
           cost <= max_cost() &&
           !(e->flags.load(std::memory_order_acquire) & kHasLease);
  }
  // ColdKeyPolicy::kLocalShare: admits from the key's local credit.
  bool TakeLocalCredit(LeaseEntry* e, int64_t cost, Decision* d);
  // ColdKeyPolicy::kWait: waits (real time, up to cold_wait) for a lease.
  bool WaitForLease(LeaseEntry* e, int64_t cost);
  // The failure mode's decision while Redis cannot decide for `e`.
  Decision FailureDecision(LeaseEntry* e, int64_t cost);
  // OutageUsage::kCharge: the failure mode's admission is charged when
  // Redis answers again.
  void ChargeLater(LeaseEntry* e, int64_t cost);

  const LeasedLimiterOptions& options_;  // the limiter's
  const size_t max_key_bytes_;
  LeaseBook* const book_;
  LeaseKeys* const keys_;
  Reconciler* const reconciler_;
  LeaseTransport* const transport_;
  FailurePolicy* const policy_;
  // relaxed (both): values on their own, replaced by UpdateSpec.
  std::atomic<int64_t> max_cost_;  // the first band's burst
  std::atomic<int64_t> credit_;    // A: a new key's local credit
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_DECIDER_H_
