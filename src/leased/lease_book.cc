#include "leased/lease_book.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "local/spec_facts.h"
#include "redis/script_call.h"

namespace tokenlease::internal {

int64_t LeaseBook::InitialCredit(const LimitSpec& spec,
                                 const LeaseOptions& options) {
  if (options.cold_key_policy != ColdKeyPolicy::kLocalShare) return 0;
  return std::max<int64_t>(
      1, static_cast<int64_t>(options.local_share *
                              static_cast<double>(FirstBandBurst(spec))));
}

LeaseBook::LeaseBook(const LimitSpec& spec, const LeaseOptions& options,
                     std::string instance_id, uint64_t seed,
                     double near_limit_fraction)
    : options_(options),
      instance_id_(std::move(instance_id)),
      near_limit_fraction_(near_limit_fraction),
      rng_(seed),
      spares_(sizeof(LeaseEntry), alignof(LeaseEntry),
              static_cast<size_t>(std::max(options.spare_entries, 0))),
      slicer_(options.slice_threshold,
              static_cast<uint32_t>(std::max(options.slices_per_key, 0)),
              absl::ToInt64Nanoseconds(options.slice_idle),
              options.slice_single_thread) {
  SetSpec(spec);
}

void LeaseBook::SetSpec(const LimitSpec& spec) {
  sizing_ = ComputeSizing(spec, options_);
  burst_ = FirstBandBurst(spec);
  fixed_window_first_ = spec.bands.front().algorithm == Algorithm::kFixedWindow;
  // relaxed: a value on its own, read by NewEntry on any thread.
  credit_.store(InitialCredit(spec, options_), std::memory_order_relaxed);
  credit_refill_ns_ = FullRefillNanos(spec) > INT64_MAX / 2
                          ? INT64_MAX
                          : 2 * FullRefillNanos(spec);
  // The small tolerance keeps (1 - 0.9) x 100 at 10, not 9.
  near_limit_remaining_ = static_cast<int64_t>(
      (1.0 - near_limit_fraction_) * static_cast<double>(burst_) + 1e-6);
  // Refusals Redis gave under the old spec end now: keys with demand ask
  // again under the new one (Expire, at this step). relaxed: written only
  // by this thread, read by decisions as a retry hint.
  for (LeaseEntry* e : denied_) {
    e->deny_until_ns.store(0, std::memory_order_relaxed);
  }
}

LeaseEntry* LeaseBook::NewEntry(std::string_view name) {
  return new (spares_.Allocate())
      LeaseEntry(name, credit_.load(std::memory_order_relaxed));
}

void LeaseBook::FreeEntry(LeaseEntry* e) {
  // Only published entries have slices, and they are freed on the
  // reconciler's thread (the slicer's).
  if (e->record.slice_index >= 0 || e->record.slice_candidate >= 0) {
    slicer_.Forget(e);
  }
  e->~LeaseEntry();
  spares_.Free(e);
}

void LeaseBook::BeginStep(int64_t now) {
  coarse_now_ns_.store(now, std::memory_order_relaxed);
}

// --- Leases ------------------------------------------------------------------

void LeaseBook::Lease(LeaseEntry* e, int64_t now, LeaseCalls* out) {
  if (e->Uncharged() > 0) Charge(e, out);
  LeaseRecord& r = e->record;
  if (r.id == 0) r.id = ++next_entry_id_;
  if (r.lease_size == 0) r.lease_size = sizing_.initial_size;
  // relaxed: a sizing hint written by the decision path, which only writes
  // costs a lease can pay (<= the burst); clamped anyway.
  const int64_t hint = std::clamp<int64_t>(
      e->wanted_cost.exchange(0, std::memory_order_relaxed), 1, burst_);
  const LeaseAsk ask =
      ComputeAsk(sizing_, options_, r.lease_size, r.last_remaining, hint);
  AcquireArgs args;
  args.wanted = ask.wanted;
  args.minimum = ask.minimum;
  // The id its grant will have (ApplyGrant): Redis records the grant under
  // it, and a return gives back at most that grant. Only one request per
  // key is in flight; a refused or lost one leaves the id to the next.
  args.lease_id = LeaseId(r, r.lease_seq + 1);
  r.request_in_flight = true;
  r.requested_at_ns = now;
  r.last_active_ns = now;
  counters_.lease_requests.fetch_add(1, std::memory_order_relaxed);
  // relaxed: hints; a wrong guess only moves the request by one batch
  // window. A key over its limit (Redis said nothing is left) waits for
  // the window: asking sooner would only be refused sooner. Else a key
  // that a decision is denied for (its balance, what a thread without
  // tokens in a slice decides from, is empty) must leave now, and the
  // renewal of a key the window would cap (RenewalCannotWait) by the time
  // Redis, refilling since its last reply, may hold the request's minimum
  // (TimeToMinimum; sent sooner it may be refused, and then retried only
  // after the retry time Redis gives), at most a window from now. Any
  // call may leave sooner, with a partial batch that leaves anyway.
  int64_t leave_by = kNoDeadline;
  if (!r.remaining_known || r.last_remaining > 0) {
    const int64_t balance = e->balance.load(std::memory_order_relaxed);
    const int64_t window = absl::ToInt64Nanoseconds(options_.batch_window);
    if (balance < 1 && e->local_share.load(std::memory_order_relaxed) < 1) {
      leave_by = now;
    } else if (r.expires_at_ns != 0 &&
               RenewalCannotWait(
                   sizing_, options_.low_water, r.held_at_landing,
                   r.landed_at_ns, balance + LeaseSlicer::Held(e), now,
                   window + rtt_ns_.load(std::memory_order_relaxed))) {
      // A key with a lease has had a grant, whose reply said what is left.
      const int64_t wait = TimeToMinimum(sizing_, ask.minimum, r.last_remaining,
                                         now - r.remaining_at_ns);
      leave_by = now + std::min(wait, window);
    }
  }
  out->push_back(LeaseCall{LeaseCall::Kind::kLease, e, ask.wanted,
                           BatchItem::Acquire(std::string(e->name()), args),
                           leave_by});
}

void LeaseBook::Decline(LeaseEntry* e, LeaseCalls* out) {
  if (e->Uncharged() > 0) Charge(e, out);
  // acq_rel: as every flag change (docs/design.md, memory orders).
  e->flags.fetch_and(~kRefillQueued, std::memory_order_acq_rel);
}

void LeaseBook::Apply(const LeaseCall& call,
                      const absl::StatusOr<RedisReply>& reply, int64_t now,
                      LeaseCalls* out) {
  switch (call.kind) {
    case LeaseCall::Kind::kLease:
      ApplyLease(call.entry, call.item, reply, now, out);
      break;
    case LeaseCall::Kind::kCharge:
      ApplyCharge(call, reply, now);
      break;
    case LeaseCall::Kind::kRelease:
      ApplyRelease(call, reply);
      break;
  }
}

void LeaseBook::ApplyLease(LeaseEntry* e, const BatchItem& item,
                           const absl::StatusOr<RedisReply>& r, int64_t now,
                           LeaseCalls* out) {
  LeaseRecord& rec = e->record;
  rec.request_in_flight = false;
  const absl::StatusOr<AcquireResult> res =
      r.ok() ? ParseAcquireItemReply(*r, item)
             : absl::StatusOr<AcquireResult>(r.status());
  // Answers only: a timeout says nothing of the next lease's arrival, and
  // would keep retry_after estimates high long after Redis is back.
  const int64_t sample = now - rec.requested_at_ns;
  if (res.ok() && sample > 0) {
    const int64_t rtt = rtt_ns_.load(std::memory_order_relaxed);
    rtt_ns_.store(rtt - rtt / 8 + sample / 8, std::memory_order_relaxed);
  }
  if (!res.ok()) {
    // acq_rel: as every flag change. Decisions apply the failure mode.
    e->flags.fetch_or(kRedisFailed, std::memory_order_acq_rel);
    NoteError(res.status(), /*key_error=*/r.ok());
    // Back off, per key: Redis is slow, gone or refusing; the key keeps
    // spending what it holds and asks again after tick x 2^(n-1), n the
    // consecutive errors (at most 250 ms).
    rec.error_streak = std::min(rec.error_streak + 1, 16);
    const int64_t backoff =
        std::min<int64_t>(250'000'000, absl::ToInt64Nanoseconds(options_.tick)
                                           << (rec.error_streak - 1));
    CacheDenial(e, now + backoff);
  } else {
    rec.error_streak = 0;
    e->flags.fetch_and(~kRedisFailed, std::memory_order_acq_rel);
    rec.last_remaining = res->remaining;
    rec.remaining_known = true;
    rec.remaining_at_ns = now;
    NoteRemaining(e, res->remaining);
    SetCredit(e, res->remaining, /*known=*/true);
    // acq_rel: clears the mark a decision set when it ran dry.
    const bool ran_dry =
        e->flags.fetch_and(~kRanDry, std::memory_order_acq_rel) & kRanDry;
    if (res->granted > 0) {
      ApplyGrant(e, *res, ran_dry, now, out);
    } else {
      ApplyRefusal(e, *res, now);
    }
  }
  // After kDenied is set (CacheDenial): a decision that sees the request
  // answered never re-asks while a refusal is cached.
  e->flags.fetch_and(~kRefillQueued, std::memory_order_acq_rel);
}

void LeaseBook::ApplyGrant(LeaseEntry* e, const AcquireResult& res,
                           bool ran_dry, int64_t now, LeaseCalls* out) {
  LeaseRecord& rec = e->record;
  rec.lease_size =
      AdaptTarget(sizing_, std::max<int64_t>(rec.lease_size, 1), ran_dry, 0);
  ++rec.lease_seq;
  std::string merged_id =
      std::exchange(rec.lease_id, LeaseId(rec, rec.lease_seq));
  const int64_t merged_granted_at_us =
      std::exchange(rec.granted_at_us, res.now_us);
  const int64_t merged_granted = std::exchange(rec.lease_granted, res.granted);
  int64_t life = absl::ToInt64Nanoseconds(options_.lease_ttl);
  if (fixed_window_first_ && res.reset_after_us > 0) {
    // Tokens of one fixed window must not be spent in the next.
    life = std::min(life, res.reset_after_us * 1000);
  }
  // Counted from when the request left (the grant is at least that old).
  rec.expires_at_ns = std::min(now, rec.requested_at_ns) + life;
  ScheduleExpiry(e);
  rec.last_active_ns = now;
  counters_.tokens_granted.fetch_add(res.granted, std::memory_order_relaxed);
  counters_.leases_granted.fetch_add(1, std::memory_order_relaxed);
  // relaxed: a threshold; a stale value only shifts one refill.
  e->low_water.store(
      std::max<int64_t>(
          1, static_cast<int64_t>(rec.lease_size * options_.low_water)),
      std::memory_order_relaxed);
  // A lease end still closing the slices (an owner was preempted in its
  // section, or an add-back was pending) is superseded by this grant: the
  // lease goes on, its slices open again, and what was taken from them goes
  // back to the balance. relaxed: a count of tokens.
  if (slicer_.Closing(e)) {
    e->balance.fetch_add(slicer_.Reopen(e), std::memory_order_relaxed);
  }
  // relaxed: a count of tokens; it publishes nothing else. A hot key's
  // slices hold part of the leftover (a snapshot: at the return, what goes
  // back under the old id is also bounded by what is left beyond the new
  // grant, so a high estimate returns nothing that was spent).
  const int64_t leftover =
      e->balance.fetch_add(res.granted, std::memory_order_relaxed) +
      LeaseSlicer::Held(e);
  rec.landed_at_ns = now;
  rec.held_at_landing = leftover + res.granted;
  // The grant (the cost hint can make it larger than the target) or the
  // target, whichever is larger, measures how hot the key is.
  slicer_.OnGrant(e, std::max(rec.lease_size, res.granted));
  // The leftover of an active lease is merged into this one; what of it is
  // left at the return can still go back under the old id. (A failed
  // subtraction in flight makes `leftover` smaller: fewer tokens returned,
  // never more than were granted.)
  rec.prev_returnable =
      merged_id.empty() ? 0 : std::clamp<int64_t>(leftover, 0, merged_granted);
  rec.prev_lease_id = rec.prev_returnable > 0 ? std::move(merged_id) : "";
  rec.prev_granted_at_us = merged_granted_at_us;
  e->flags.fetch_or(kHasLease, std::memory_order_acq_rel);
  if (rec.requested_at_ns <= returned_all_at_ns_) {
    ReturnLease(e, now, out);  // asked for before ReturnAll: give it back
  }
}

void LeaseBook::ApplyRefusal(LeaseEntry* e, const AcquireResult& res,
                             int64_t now) {
  counters_.denied_by_redis.fetch_add(1, std::memory_order_relaxed);
  int64_t wait = res.retry_after_us < 0
                     ? absl::ToInt64Nanoseconds(options_.lease_ttl)
                     : res.retry_after_us * 1000;
  // Jitter (up to +25%) so that instances refused together do not all come
  // back at the same instant: whoever returns first is random.
  wait += static_cast<int64_t>(
      std::uniform_real_distribution<double>(0, 0.25)(rng_) * wait);
  CacheDenial(e, now + std::max<int64_t>(wait, 1));
}

void LeaseBook::NoteRemaining(LeaseEntry* e, int64_t remaining) {
  const bool near = remaining <= near_limit_remaining_;
  // relaxed load: only this thread writes kNearLimit; acq_rel on the
  // change, as every flag change (the other bits are shared).
  if (near == static_cast<bool>(e->flags.load(std::memory_order_relaxed) &
                                kNearLimit)) {
    return;
  }
  if (near) {
    e->flags.fetch_or(kNearLimit, std::memory_order_acq_rel);
  } else {
    e->flags.fetch_and(~kNearLimit, std::memory_order_acq_rel);
  }
}

void LeaseBook::CacheDenial(LeaseEntry* e, int64_t until_ns) {
  // relaxed: the decision path reads it only to compute a retry hint.
  e->deny_until_ns.store(until_ns, std::memory_order_relaxed);
  if (!(e->flags.fetch_or(kDenied, std::memory_order_acq_rel) & kDenied)) {
    denied_.push_back(e);
  }
}

void LeaseBook::ScheduleExpiry(LeaseEntry* e) {
  LeaseRecord& rec = e->record;
  expiry_.push(Expiry{rec.expires_at_ns, e, rec.lease_seq});
  ++rec.heap_refs;
}

// --- Charges -----------------------------------------------------------------

void LeaseBook::Charge(LeaseEntry* e, LeaseCalls* out, bool background) {
  LeaseRecord& rec = e->record;
  if (rec.charge_in_flight ||
      rec.charge_retry_at_ns > coarse_now_ns_.load(std::memory_order_relaxed)) {
    // One charge per key at a time, none while backing off after an error;
    // the next waits (the key stays in memory while it has unsynced
    // tokens).
    ++rec.charge_retry_refs;
    charge_retry_.push_back(e);
    return;
  }
  // acq_rel: takes exactly the admissions counted so far.
  const int64_t credit = e->unsynced.exchange(0, std::memory_order_acq_rel);
  const int64_t outage =
      e->outage_unsynced.exchange(0, std::memory_order_acq_rel);
  const int64_t n = credit + outage;
  if (n <= 0) return;
  rec.charge_in_flight = true;
  rec.charge_amount = n;
  rec.charge_outage = outage;
  // Now in flight. (Clamped: every uncharged credit token came from the
  // credit, but a count must not go negative if that ever changes.)
  rec.credit_given = std::max<int64_t>(0, rec.credit_given - credit);
  AcquireArgs args;
  args.wanted = n;
  args.minimum = 0;
  args.charge = true;
  // Debt is bounded by one burst: beyond it the limit would stay closed for
  // longer than a full refill, which an outage should not cause.
  args.max_debt = burst_;
  counters_.charges.fetch_add(1, std::memory_order_relaxed);
  out->push_back(LeaseCall{LeaseCall::Kind::kCharge, e, n,
                           BatchItem::Acquire(std::string(e->name()), args),
                           kNoDeadline, background});
}

void LeaseBook::ChargeQueued(LeaseEntry* e, LeaseCalls* out) {
  // acq_rel: as every flag change; an admission after this clear queues the
  // key again, and its tokens are in `unsynced` before it does (the
  // decision adds them first).
  e->flags.fetch_and(~kChargeQueued, std::memory_order_acq_rel);
  // Admitted since the last step: the key is active (not evicted for
  // idle_evict from now).
  e->record.last_active_ns = coarse_now_ns_.load(std::memory_order_relaxed);
  // Unconditional: Charge's exchange (a read-modify-write) and the
  // decision's fetch_or cannot both miss each other, as two loads could.
  Charge(e, out, /*background=*/true);
}

void LeaseBook::RevokeCredit(LeaseEntry* e) {
  LeaseRecord& rec = e->record;
  // Only unspent credit, never a decision's subtraction in flight. acq_rel:
  // atomic against concurrent decisions.
  int64_t c = e->local_share.load(std::memory_order_relaxed);
  while (c > 0 && !e->local_share.compare_exchange_weak(
                      c, 0, std::memory_order_acq_rel)) {
  }
  if (c > 0) rec.credit_given = std::max<int64_t>(0, rec.credit_given - c);
}

void LeaseBook::SetCredit(LeaseEntry* e, int64_t remaining, bool known) {
  LeaseRecord& rec = e->record;
  int64_t target = credit_.load(std::memory_order_relaxed);
  if (known) {
    // In debt (remaining < 0) or empty: no credit.
    target = std::min<int64_t>(
        target, static_cast<int64_t>(
                    static_cast<double>(std::max<int64_t>(0, remaining)) *
                    options_.remaining_share));
  }
  target = std::max<int64_t>(0, target - rec.charge_amount);
  if (target < rec.credit_given) {
    // Takes back only unspent credit, never a decision's subtraction in
    // flight (a negative value about to be added back). acq_rel: atomic
    // against concurrent decisions.
    int64_t c = e->local_share.load(std::memory_order_relaxed);
    int64_t take = 0;
    do {
      take = std::min(c, rec.credit_given - target);
    } while (take > 0 && !e->local_share.compare_exchange_weak(
                             c, c - take, std::memory_order_acq_rel));
    if (take > 0) rec.credit_given -= take;
  }
  if (target > rec.credit_given) {
    // relaxed: a count of tokens, as the balance.
    e->local_share.fetch_add(target - rec.credit_given,
                             std::memory_order_relaxed);
    rec.credit_given = target;
  }
}

void LeaseBook::RetryCharges(int64_t now, LeaseCalls* out) {
  std::vector<LeaseEntry*> retry;
  retry.swap(charge_retry_);
  for (LeaseEntry* e : retry) {
    if (e->record.charge_retry_at_ns > now) {
      charge_retry_.push_back(e);  // backing off after an error
      continue;
    }
    --e->record.charge_retry_refs;
    e->record.charge_retry_at_ns = 0;  // its time has come
    Charge(e, out, /*background=*/true);
  }
}

void LeaseBook::ApplyCharge(const LeaseCall& call,
                            const absl::StatusOr<RedisReply>& reply,
                            int64_t now) {
  LeaseEntry* e = call.entry;
  e->record.charge_in_flight = false;
  e->record.charge_amount = 0;
  const absl::StatusOr<AcquireResult> r =
      reply.ok() ? ParseAcquireItemReply(*reply, call.item)
                 : absl::StatusOr<AcquireResult>(reply.status());
  if (r.ok()) {
    counters_.tokens_charged.fetch_add(r->granted, std::memory_order_relaxed);
    e->record.charge_outage = 0;
    e->record.charge_error_streak = 0;
    e->record.last_remaining = r->remaining;
    e->record.remaining_known = true;
    e->record.remaining_at_ns = now;
    NoteRemaining(e, r->remaining);
    SetCredit(e, r->remaining, /*known=*/true);
    return;
  }
  // Charge again: over-charging keeps the limit safe; losing the charge
  // would not. After tick x 2^(n-1) (n the key's consecutive failed
  // charges, at most 250 ms), as a lease request's errors: a key that
  // keeps failing (another type in Redis) costs Redis 4 items a second,
  // not one per step.
  LeaseRecord& rec = e->record;
  rec.charge_error_streak = std::min(rec.charge_error_streak + 1, 16);
  rec.charge_retry_at_ns =
      now +
      std::min<int64_t>(250'000'000, absl::ToInt64Nanoseconds(options_.tick)
                                         << (rec.charge_error_streak - 1));
  const int64_t outage = rec.charge_outage;
  rec.charge_outage = 0;
  e->unsynced.fetch_add(call.amount - outage, std::memory_order_acq_rel);
  e->outage_unsynced.fetch_add(outage, std::memory_order_acq_rel);
  e->record.credit_given += call.amount - outage;
  ++e->record.charge_retry_refs;
  charge_retry_.push_back(e);
  NoteError(r.status(), /*key_error=*/reply.ok());
}

// --- Returns -----------------------------------------------------------------

void LeaseBook::Release(LeaseEntry* e, const std::string& lease_id,
                        int64_t granted_at_us, int64_t amount,
                        LeaseCalls* out) {
  ReleaseArgs args;
  args.amount = amount;
  args.lease_id = lease_id;
  args.granted_at_us = granted_at_us;
  ++e->record.releases_pending;
  out->push_back(LeaseCall{LeaseCall::Kind::kRelease, e, amount,
                           BatchItem::Release(std::string(e->name()), args)});
}

void LeaseBook::ApplyRelease(const LeaseCall& call,
                             const absl::StatusOr<RedisReply>& reply) {
  --call.entry->record.releases_pending;
  const absl::StatusOr<int64_t> n =
      reply.ok() ? ParseReleaseItemReply(*reply, call.item)
                 : absl::StatusOr<int64_t>(reply.status());
  if (n.ok()) {
    counters_.tokens_returned.fetch_add(*n, std::memory_order_relaxed);
  } else {
    NoteError(n.status(), /*key_error=*/reply.ok());
  }
}

bool LeaseBook::EndLease(LeaseEntry* e, int64_t now, LeaseCalls* out,
                         bool expired) {
  LeaseRecord& rec = e->record;
  if (e->Uncharged() > 0) Charge(e, out);
  // A hot key's slices first (their owners then decide from the balance),
  // then the balance: a token is in exactly one of them, and none can move
  // from the balance to a slice once the slices are closed. A key without
  // a lease whose slices hold nothing has nothing to close.
  const bool close_slices =
      rec.expires_at_ns != 0 || slicer_.Closing(e) || LeaseSlicer::Held(e) != 0;
  const bool closed = !close_slices || slicer_.Close(e);
  // Takes the balance only when it is not negative: a negative balance is a
  // decision's failed subtraction that is about to be added back, and
  // taking it would let the add-back create tokens (or leave them behind
  // with no lease). acq_rel: atomic against concurrent decisions.
  int64_t left = e->balance.load(std::memory_order_relaxed);
  while (
      closed && left > 0 &&
      !e->balance.compare_exchange_weak(left, 0, std::memory_order_acq_rel)) {
  }
  if (!closed || left < 0) {
    // Try again on the next step, when the add-back has landed (or the
    // preempted slice owner left its critical section). The slices stay
    // closed meanwhile and the tokens taken from them wait in the slicer:
    // put back in the balance, they would hide the add-back.
    if (rec.expires_at_ns != 0) {
      rec.expires_at_ns = now + 1;
      ScheduleExpiry(e);
      return false;
    }
    // Without a lease there is nothing to take back: a dry key being
    // hammered must not hold up a ReturnAll. Its slices' tokens go back to
    // the balance (spendable as before the call).
    // relaxed: a count of tokens.
    const int64_t sliced = slicer_.Reopen(e);
    if (sliced != 0) e->balance.fetch_add(sliced, std::memory_order_relaxed);
    return closed;
  }
  left += slicer_.Reopen(e);
  if (rec.expires_at_ns == 0 && left == 0) return true;
  if (rec.expires_at_ns != 0) {  // a lease ends (not a stray add-back)
    if (expired) {
      counters_.leases_expired.fetch_add(1, std::memory_order_relaxed);
      counters_.tokens_expired.fetch_add(static_cast<uint64_t>(left),
                                         std::memory_order_relaxed);
    } else {
      counters_.leases_returned.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const double unused =
      rec.lease_granted > 0 ? static_cast<double>(left) / rec.lease_granted : 0;
  rec.lease_size = AdaptTarget(sizing_, std::max<int64_t>(rec.lease_size, 1),
                               /*ran_dry=*/false, unused);
  // Each grant's tokens go back under its own lease id and grant time (the
  // script credits them only into the window they were granted in): first
  // the current lease's, then the leftover of the lease merged into it.
  // Leftovers merged from older leases are dropped (stranded, not minted).
  const int64_t give = std::min(left, rec.lease_granted);
  if (give > 0 && !rec.lease_id.empty()) {
    Release(e, rec.lease_id, rec.granted_at_us, give, out);
  }
  const int64_t give_prev = std::min(left - give, rec.prev_returnable);
  if (give_prev > 0 && !rec.prev_lease_id.empty()) {
    Release(e, rec.prev_lease_id, rec.prev_granted_at_us, give_prev, out);
  }
  rec.prev_lease_id.clear();
  rec.prev_returnable = 0;
  rec.expires_at_ns = 0;
  rec.lease_id.clear();
  rec.lease_granted = 0;
  rec.last_active_ns = now;
  // The key is cold again: its cold-key policy applies to its next
  // requests (kLocalShare: a credit from what Redis said last is left).
  SetCredit(e, rec.last_remaining, rec.remaining_known);
  e->flags.fetch_and(~kHasLease, std::memory_order_acq_rel);
  return true;
}

// --- Outages
// ------------------------------------------------------------------

void LeaseBook::OutageBegan() {
  if (in_outage_) return;
  in_outage_ = true;
  rtt_before_outage_ns_ = rtt_ns_.load(std::memory_order_relaxed);
}

void LeaseBook::Recovered(int64_t now) {
  if (!in_outage_) return;
  in_outage_ = false;
  // relaxed: an estimate. The samples of the outage's last moments (replies
  // that waited for a frozen server) say nothing of the next round trip.
  rtt_ns_.store(rtt_before_outage_ns_, std::memory_order_relaxed);
  // Keys backing off after failed calls ask again now, not after their
  // backoff: leasing resumes at this step (Expire lifts the refusals).
  for (LeaseEntry* e : denied_) {
    if (e->flags.load(std::memory_order_relaxed) & kRedisFailed) {
      e->deny_until_ns.store(now, std::memory_order_relaxed);
    }
  }
  for (LeaseEntry* e : charge_retry_) e->record.charge_retry_at_ns = 0;
}

// --- Time --------------------------------------------------------------------

void LeaseBook::Expire(int64_t now, LeaseCalls* out,
                       std::vector<LeaseEntry*>* ask_again) {
  // Leases past their lifetime give their leftovers back.
  while (!expiry_.empty() && expiry_.top().at_ns <= now) {
    const Expiry x = expiry_.top();
    expiry_.pop();
    LeaseRecord& rec = x.entry->record;
    --rec.heap_refs;
    if (x.lease_seq == rec.lease_seq && rec.expires_at_ns != 0 &&
        rec.expires_at_ns <= now) {
      EndLease(x.entry, now, out, /*expired=*/true);
    }
  }
  // Cached refusals that are over: the key may ask again.
  for (size_t i = 0; i < denied_.size();) {
    LeaseEntry* e = denied_[i];
    // relaxed: written only by this thread.
    if (e->deny_until_ns.load(std::memory_order_relaxed) > now) {
      ++i;
      continue;
    }
    denied_[i] = denied_.back();
    denied_.pop_back();
    // kRedisFailed too: an idle key must become evictable; while Redis is
    // still down the connection's health keeps the failure mode on.
    const uint32_t before =
        e->flags.fetch_and(~(kDenied | kWantedWhileDenied | kRedisFailed),
                           std::memory_order_acq_rel);
    // Ask again at once only if decisions were denied meanwhile and the key
    // is below its low-water mark; an idle key is left alone (and can be
    // evicted), so an outage does not turn into polling every key.
    if ((before & kWantedWhileDenied) &&
        e->balance.load(std::memory_order_relaxed) <
            e->low_water.load(std::memory_order_relaxed) &&
        !(e->flags.fetch_or(kRefillQueued, std::memory_order_acq_rel) &
          kRefillQueued)) {
      ask_again->push_back(e);
    }
  }
}

bool LeaseBook::Evictable(LeaseEntry* e, int64_t now) {
  LeaseRecord& rec = e->record;
  if (rec.last_active_ns == kNotSeen) {
    // Retiring it now could deny the decision creating it, or leave its
    // charge to the graveyard after Sync said the book was idle.
    rec.last_active_ns = now;
    return false;
  }
  // relaxed loads: the caller holds the registry's writer lock (no lookup by
  // name), pins are zero (no handle), and the rest is this thread's state.
  return e->balance.load(std::memory_order_relaxed) == 0 &&
         LeaseSlicer::Held(e) == 0 && !slicer_.Closing(e) &&
         e->Uncharged() == 0 &&
         (e->flags.load(std::memory_order_relaxed) &
          (kRefillQueued | kDenied)) == 0 &&
         !rec.request_in_flight && !rec.charge_in_flight &&
         rec.heap_refs == 0 && rec.releases_pending == 0 &&
         rec.charge_retry_refs == 0 &&
         now - rec.last_active_ns >=
             absl::ToInt64Nanoseconds(options_.idle_evict) &&
         CreditIsFresh(e, now);
}

bool LeaseBook::CreditIsFresh(const LeaseEntry* e, int64_t now) const {
  const LeaseRecord& rec = e->record;
  // A key created anew starts with A: evict only if A is what it would get
  // now anyway (nothing known, or Redis said enough is left), or after the
  // limit has had time to refill.
  const int64_t credit = credit_.load(std::memory_order_relaxed);
  if (credit == 0 || !rec.remaining_known) return true;
  if (static_cast<double>(rec.last_remaining) * options_.remaining_share >=
      static_cast<double>(credit)) {
    return true;
  }
  return now - rec.last_active_ns >= credit_refill_ns_;
}

LeaseBook::~LeaseBook() {
  for (LeaseEntry* e : graveyard_) FreeEntry(e);
}

void LeaseBook::Bury(LeaseEntry* e) {
  // Relaxed: no decision can reach `e` (the registry's grace period ended).
  if (e->Uncharged() == 0 && !e->record.charge_in_flight &&
      e->record.charge_retry_refs == 0) {
    FreeEntry(e);
    return;
  }
  graveyard_.push_back(e);
}

void LeaseBook::DrainGraveyard(LeaseCalls* out) {
  size_t keep = 0;
  for (LeaseEntry* e : graveyard_) {
    const LeaseRecord& rec = e->record;
    if (rec.charge_in_flight || rec.charge_retry_refs > 0) {
      graveyard_[keep++] = e;
    } else if (e->Uncharged() > 0) {
      Charge(e, out, /*background=*/true);
      graveyard_[keep++] = e;
    } else {
      FreeEntry(e);
    }
  }
  graveyard_.resize(keep);
}

LeaseStats LeaseBook::stats() const {
  LeaseStats s;
  s.lease_requests = counters_.lease_requests.load(std::memory_order_relaxed);
  s.tokens_granted = counters_.tokens_granted.load(std::memory_order_relaxed);
  s.tokens_returned = counters_.tokens_returned.load(std::memory_order_relaxed);
  s.denied_by_redis = counters_.denied_by_redis.load(std::memory_order_relaxed);
  s.charges = counters_.charges.load(std::memory_order_relaxed);
  s.tokens_charged = counters_.tokens_charged.load(std::memory_order_relaxed);
  s.leases_granted = counters_.leases_granted.load(std::memory_order_relaxed);
  s.leases_expired = counters_.leases_expired.load(std::memory_order_relaxed);
  s.tokens_expired = counters_.tokens_expired.load(std::memory_order_relaxed);
  s.leases_returned = counters_.leases_returned.load(std::memory_order_relaxed);
  s.spare_misses = static_cast<uint64_t>(spares_.misses());
  return s;
}

}  // namespace tokenlease::internal
