#include "leased/lease_decider.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/limiter_core.h"
#include "local/spec_facts.h"

namespace tokenlease::internal {

LeaseDecider::LeaseDecider(const LeasedLimiterOptions& options,
                           const LimitSpec& spec, LeaseBook* book,
                           LeaseKeys* keys, Reconciler* reconciler,
                           LeaseTransport* transport, FailurePolicy* policy)
    : options_(options),
      max_key_bytes_(static_cast<size_t>(options.max_key_bytes)),
      book_(book),
      keys_(keys),
      reconciler_(reconciler),
      transport_(transport),
      policy_(policy),
      max_cost_(FirstBandBurst(spec)),
      credit_(book->initial_credit()) {}

void LeaseDecider::UpdateSpec(const LimitSpec& spec) {
  max_cost_.store(FirstBandBurst(spec), std::memory_order_relaxed);
  credit_.store(LeaseBook::InitialCredit(spec, options_.lease),
                std::memory_order_relaxed);
}

Decision LeaseDecider::Slow(LeaseEntry* e, int64_t cost, bool may_wait) {
  // Every path returns `d`, the caller's return slot (ApplyShadow says why
  // a copy costs: a refused decision by handle paid 4 ns for it).
  Decision d;
  if (cost < 0) {
    d = LimiterCore::InvalidArgumentDecision();
    return d;
  }
  d.source = DecisionSource::kLease;
  if (cost == 0) {
    d.allowed = true;
    d.remaining =
        std::max<int64_t>(0, e->balance.load(std::memory_order_relaxed));
    return d;
  }
  if (cost > max_cost()) {
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
  const bool no_redis =
      (flags & kRedisFailed) || transport_->DownFor(e->name());
  if (!(flags & kHasLease) && !no_redis) {
    switch (options_.lease.cold_key_policy) {
      case ColdKeyPolicy::kLocalShare:
        if (TakeLocalCredit(e, cost, &d)) return d;
        break;
      case ColdKeyPolicy::kWait:
        if (may_wait && WaitForLease(e, cost)) {
          d.allowed = true;
          d.remaining =
              std::max<int64_t>(0, e->balance.load(std::memory_order_relaxed));
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
  reconciler_->RequestRefill(e);
  if ((flags & kDenied) && !(flags & kWantedWhileDenied)) {
    // Tells the reconciler the key still has demand when the cached
    // refusal ends (an idle key is not asked for again).
    e->flags.fetch_or(kWantedWhileDenied, std::memory_order_relaxed);
  }
  if (no_redis) {
    d = FailureDecision(e, cost);
    return d;
  }
  if (flags & kDenied) {
    const int64_t until = e->deny_until_ns.load(std::memory_order_relaxed);
    // The reconciler's clock as of its last step (within one tick): a
    // denial reads no clock either.
    d.retry_after_ns = std::max<int64_t>(0, until - book_->coarse_now_ns());
  } else {
    d.retry_after_ns = book_->round_trip_ns();
  }
  return d;
}

Decision LeaseDecider::FromSlices(LeaseEntry* e, LeaseSlices* s, int64_t cost,
                                  bool may_wait) {
  if (cost <= 0 || cost > max_cost()) return Slow(e, cost, may_wait);
  int64_t remaining = 0;
  bool below_low_water = false;
  const SliceRefill r = RefillSlice(e, s, cost, &remaining, &below_low_water);
  if (below_low_water) reconciler_->RequestRefill(e);
  switch (r) {
    case SliceRefill::kAdmitted:
      return LeaseAdmitted(remaining);
    case SliceRefill::kShort:
      return Slow(e, cost, may_wait);
    case SliceRefill::kNoSlice:
      break;
  }
  return FromBalance(e, cost, may_wait);
}

// A key that has spent more than half of A asks for a lease as well (it is
// busy enough to decide from one).
bool LeaseDecider::TakeLocalCredit(LeaseEntry* e, int64_t cost, Decision* d) {
  // relaxed: the credit is a count of tokens, as the balance; a failed
  // subtraction is undone and only makes others see fewer tokens.
  if (e->local_share.load(std::memory_order_relaxed) < cost) return false;
  const int64_t old = e->local_share.fetch_sub(cost, std::memory_order_relaxed);
  if (old < cost) {
    e->local_share.fetch_add(cost, std::memory_order_relaxed);
    return false;
  }
  // acq_rel: the reconciler's exchange takes whole admissions. Added
  // before the key is queued, so the charge the queue leads to sees it.
  e->unsynced.fetch_add(cost, std::memory_order_acq_rel);
  reconciler_->RequestCharge(e);
  if (2 * (old - cost) < credit_.load(std::memory_order_relaxed)) {
    reconciler_->RequestRefill(e);
  }
  d->allowed = true;
  d->source = DecisionSource::kLocalCredit;
  d->remaining = old - cost;
  return true;
}

// Leases that arrive still pay first: this runs only after the balance
// came up short.
Decision LeaseDecider::FailureDecision(LeaseEntry* e, int64_t cost) {
  // kFailClosed's retry: the lease request (asked for by Slow) is the
  // probe; retry once it may have come back.
  const int64_t retry_ns = std::max(
      book_->round_trip_ns(), absl::ToInt64Nanoseconds(options_.lease.tick));
  Decision d = policy_->Decide(e->name(), cost, retry_ns);
  if (d.allowed) ChargeLater(e, cost);
  return d;
}

void LeaseDecider::ChargeLater(LeaseEntry* e, int64_t cost) {
  if (options_.outage_usage != OutageUsage::kCharge) return;
  // acq_rel: as `unsynced` (the charge that the queue leads to sees it).
  e->outage_unsynced.fetch_add(cost, std::memory_order_acq_rel);
  reconciler_->RequestCharge(e);
}

bool LeaseDecider::WaitForLease(LeaseEntry* e, int64_t cost) {
  reconciler_->RequestRefill(e);
  reconciler_->WakeNow();  // this decision waits for it anyway
  // Real time: a bound on the caller's wait, not a limit's time.
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

Decision LeaseDecider::ByName(std::string_view key, int64_t cost) {
  LeaseEntry* wait_on = nullptr;
  bool retired = false;
  // Inline: a call would put its captures in memory (LimiterCore's lookup
  // says the same).
  auto decide = [&](LeaseEntry * e) __attribute__((always_inline)) {
    if (e == nullptr) {
      Decision denied;
      denied.source = DecisionSource::kKeyLimit;
      denied.retry_after_ns = kNever;
      return denied;
    }
    if (ShouldWait(e, cost)) {
      // Wait outside the lookup, holding a pin instead.
      if (LeaseKeys::PinLive(e)) {
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
  Decision d = key.size() > max_key_bytes_
                   ? LimiterCore::InvalidArgumentDecision()
                   : keys_->registry().With(key, 0, decide);
  while (retired) [[unlikely]] {  // look the key up again
      retired = false;
      d = keys_->registry().With(key, 0, decide);
    }
  if (wait_on != nullptr) [[unlikely]] {
    d = Decide(wait_on, cost);
    // release: pairs with the reclaimer's acquire load of pins.
    wait_on->pins.fetch_sub(1, std::memory_order_release);
  }
  if (!d.allowed) [[unlikely]] {
    policy_->Shadow(&d);
  }
  policy_->Count(d);
  return d;
}

}  // namespace tokenlease::internal
