// The lease book: all of leased mode's accounting, as transitions driven by
// the caller's clock that return the Redis calls to send. No thread, no
// wake-up, no transport, no flow control: the reconciler (reconciler.h)
// feeds it events and sends what it returns, and unit tests drive it
// through every transition without a Redis server.
//
// Per key (LeaseEntry::record) it keeps: the current lease (id, grant time,
// size) and the one merged into it, the expiry, the adaptive lease size
// (lease_sizer.h), the refusal cache and error backoff, charges of tokens
// admitted without a lease (one in flight per key, the rest retried), and
// what a ReturnAll must still take back. It writes the decision path's
// atomics of the key (balance, low-water mark, flags, deny_until_ns) with
// the memory orders stated at each write.
//
// Single-threaded: every method runs on one thread (the reconciler's),
// except the accessors marked "any thread".
#ifndef TOKENLEASE_SRC_LEASED_LEASE_BOOK_H_
#define TOKENLEASE_SRC_LEASED_LEASE_BOOK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/spare_blocks.h"
#include "leased/lease_entry.h"
#include "leased/lease_sizer.h"
#include "leased/lease_slices.h"
#include "redis/redis_client.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "tokenlease/leased.h"
#include "tokenlease/shared_limit.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// LeaseCall::leave_by_ns of a call that waits for the batch window.
inline constexpr int64_t kNoDeadline = INT64_MAX;

// One Redis call the book asks for.
struct LeaseCall {
  enum class Kind : uint8_t {
    kLease,    // acquire: a lease of up to `amount` tokens
    kCharge,   // acquire with charge=1: `amount` tokens admitted unleased
    kRelease,  // release: give `amount` unused tokens back
  };
  Kind kind = Kind::kLease;
  LeaseEntry* entry = nullptr;
  int64_t amount = 0;
  // The item of a batch call (lua/batch.lua) that carries it.
  BatchItem item;
  // When the call must leave, fuller batch or not (book clock): now for a
  // lease a decision is denied for until it is answered (nothing left
  // locally while Redis may have tokens), soon for the renewal of a key
  // the batch window would cap (LeaseBook::Lease), kNoDeadline for the
  // rest, which wait for the window.
  int64_t leave_by_ns = kNoDeadline;
  // A charge that is sent after the leases queued with it (see
  // LeaseBook::Charge).
  bool background = false;
};

// The calls a book transition asks for, in order.
using LeaseCalls = std::vector<LeaseCall>;

class LeaseBook {
 public:
  // `spec` must satisfy ValidateScriptSpec and `options` Validate();
  // `instance_id` makes lease ids unique across instances; `seed` seeds
  // the retry jitter (fixed in tests). A key whose last reply said at most
  // (1 - near_limit_fraction) x burst is left is flagged kNearLimit
  // (LeasedLimiterOptions::near_limit_fraction).
  LeaseBook(const LimitSpec& spec, const LeaseOptions& options,
            std::string instance_id, uint64_t seed,
            double near_limit_fraction = 0.9);

  // The local credit a new key starts with: max(1, floor(local_share x
  // burst)) under ColdKeyPolicy::kLocalShare, else 0.
  static int64_t InitialCredit(const LimitSpec& spec,
                               const LeaseOptions& options);
  int64_t initial_credit() const {
    return credit_.load(std::memory_order_relaxed);  // relaxed: see credit_
  }
  // The limit is `spec` from now on: sizes, credit and the near-limit mark
  // follow it (LeasedLimiter::UpdateSpec; the reconciler's thread). `spec`
  // satisfies ValidateScriptSpec.
  void SetSpec(const LimitSpec& spec);
  // Receives every request that got no answer or an error from Redis
  // (lease, charge and return items); `key_error`: Redis answered with an
  // error for the key. Before the first step.
  void SetErrorSink(
      absl::AnyInvocable<void(const absl::Status&, bool key_error)> sink) {
    error_sink_ = std::move(sink);
  }

  // Any thread: a new entry for `name` with the initial credit, built in a
  // spare block when one is ready (no allocation, no page fault on the
  // deciding thread; LeaseOptions::spare_entries).
  LeaseEntry* NewEntry(std::string_view name);
  // Frees an entry no decision can reach (or one never published); its
  // block goes back to the spares. The reconciler's thread for a published
  // entry (its slices are the slicer's); any thread for one never
  // published.
  void FreeEntry(LeaseEntry* e);
  // Tops the spare entry blocks up (allocates and faults their pages: the
  // reconciler's job, off the decision path).
  void RefillSpares() { spares_.Refill(); }

  // A new step at `now` (book clock, ns): publishes it for coarse_now_ns().
  void BeginStep(int64_t now);

  // `e` asked for a lease (the decision path set kRefillQueued): charges
  // its unleased admissions, then asks for a lease sized by the sizing
  // rule. kRefillQueued stays set until the reply is applied.
  void Lease(LeaseEntry* e, int64_t now, LeaseCalls* out);
  // Answers `e`'s request without a lease (while returning everything):
  // charges its unleased admissions and clears kRefillQueued.
  void Decline(LeaseEntry* e, LeaseCalls* out);

  // Applies Redis's answer (or the transport's error) to a call this book
  // asked for.
  void Apply(const LeaseCall& call, const absl::StatusOr<RedisReply>& reply,
             int64_t now, LeaseCalls* out);

  // Redis went down (RedisHealth::kDown): remembers the round-trip
  // estimate of before.
  void OutageBegan();
  // Redis answers again at `now`: the round-trip estimate is restored, and
  // keys backing off after failed calls (lease requests, charges) are
  // retried at this step instead of after their backoff.
  void Recovered(int64_t now);

  // Returns the leftovers of leases whose lifetime is over, and lifts
  // cached refusals whose time has come: keys whose decisions were denied
  // meanwhile (and that are below their low-water mark) are flagged
  // kRefillQueued again and appended to `ask_again`.
  void Expire(int64_t now, LeaseCalls* out,
              std::vector<LeaseEntry*>* ask_again);
  // Sends the charges that waited (one was in flight) or failed.
  // (Those backing off after an error wait until their time.)
  void RetryCharges(int64_t now, LeaseCalls* out);
  // True if charges wait for the next RetryCharges.
  bool HasRetries() const { return !charge_retry_.empty(); }
  // True if buried entries still owe a charge.
  bool HasGraveyard() const { return !graveyard_.empty(); }
  // Hot keys' idle slices give their tokens back to the key's balance
  // (LeaseSlicer::Sweep).
  void SweepSlices(int64_t now) { slicer_.Sweep(now); }
  // How many threads decided on the limiter since the last step
  // (LeaseSlicer::NoteDecidingThreads).
  void NoteDecidingThreads(int threads) {
    slicer_.NoteDecidingThreads(threads);
  }
  const LeaseSlicer& slicer() const { return slicer_; }

  // Charges the admissions from `e`'s local credit (the decision path queued
  // it: kChargeQueued, which this clears first, so that later admissions
  // queue it again).
  void ChargeQueued(LeaseEntry* e, LeaseCalls* out);
  // Charges `e`'s uncharged admissions without touching kChargeQueued (the
  // sweep after a dropped charge request: `e` is not in the queue).
  void ChargeUnqueued(LeaseEntry* e, LeaseCalls* out) {
    Charge(e, out, /*background=*/true);
  }
  // Takes back `e`'s unspent local credit (the entry is being retired: a
  // decision still on it must not spend credit its successor gets anew).
  void RevokeCredit(LeaseEntry* e);

  // Charges `e`'s unleased admissions, takes its balance back and returns
  // the unused tokens of its leases. False if the balance
  // was negative while a lease was active (a decision's add-back is on its
  // way): the return is retried on the next step (also through the expiry).
  // A lease so ended counts as returned (LeaseStats::leases_returned).
  bool ReturnLease(LeaseEntry* e, int64_t now, LeaseCalls* out) {
    return EndLease(e, now, out, /*expired=*/false);
  }
  // Every lease was returned at `now`: grants asked for before it are
  // given back as soon as they arrive.
  void ReturnedAll(int64_t now) { returned_all_at_ns_ = now; }

  // True if `e` holds nothing and waits for nothing (no lease, balance,
  // unleased admissions, call in flight or scheduled, cached refusal), was
  // last active `idle_evict` ago, and a fresh entry's credit would be no
  // more than it could get (CreditIsFresh): dropping it changes nothing.
  // A key no sweep has seen before is not idle (a decision just created
  // it): its first sweep stamps it active at `now`.
  bool Evictable(LeaseEntry* e, int64_t now);
  // Takes over a retired entry that no decision can reach any more: a
  // decision that admitted from its local share after Evictable said yes
  // left tokens to charge, which DrainGraveyard sends before it deletes the
  // entry. An entry with nothing to charge is deleted at once.
  void Bury(LeaseEntry* e);
  // Charges what the buried entries still owe and deletes those with
  // nothing pending.
  void DrainGraveyard(LeaseCalls* out);
  ~LeaseBook();

  // Any thread: an estimate of a lease request's round trip (for
  // retry_after), and the clock as of the last step (so decisions read no
  // clock).
  int64_t round_trip_ns() const {
    return rtt_ns_.load(std::memory_order_relaxed);  // relaxed: an estimate
  }
  int64_t coarse_now_ns() const {
    return coarse_now_ns_.load(std::memory_order_relaxed);  // relaxed: a hint
  }
  // Any thread: the counters (the gauges are left for the caller).
  LeaseStats stats() const;

  // The reconciler's thread (SetSpec changes it).
  const LeaseSizing& sizing() const { return sizing_; }

 private:
  struct Expiry {
    int64_t at_ns;
    LeaseEntry* entry;
    uint64_t lease_seq;
    bool operator>(const Expiry& o) const { return at_ns > o.at_ns; }
  };

  void ApplyLease(LeaseEntry* e, const BatchItem& item,
                  const absl::StatusOr<RedisReply>& r, int64_t now,
                  LeaseCalls* out);
  void ApplyGrant(LeaseEntry* e, const AcquireResult& res, bool ran_dry,
                  int64_t now, LeaseCalls* out);
  void ApplyRefusal(LeaseEntry* e, const AcquireResult& res, int64_t now);
  void ApplyCharge(const LeaseCall& call,
                   const absl::StatusOr<RedisReply>& reply, int64_t now);
  void ApplyRelease(const LeaseCall& call,
                    const absl::StatusOr<RedisReply>& reply);
  // `background`: from the charge queue, a retry or the graveyard (sent
  // after leases); else made with the key's lease call (sent before it).
  void Charge(LeaseEntry* e, LeaseCalls* out, bool background = false);
  // The id of this key's lease number `seq` (unique per instance and grant).
  std::string LeaseId(const LeaseRecord& rec, uint64_t seq) const {
    return absl::StrCat(instance_id_, ":", rec.id, ":", seq);
  }
  void Release(LeaseEntry* e, const std::string& lease_id,
               int64_t granted_at_us, int64_t amount, LeaseCalls* out);
  // ReturnLease; `expired`: the lease reached its lifetime (counted as
  // expired, with its unspent tokens), else it is returned early.
  bool EndLease(LeaseEntry* e, int64_t now, LeaseCalls* out, bool expired);
  // Redis said `remaining` is left for `e`: sets or clears kNearLimit.
  void NoteRemaining(LeaseEntry* e, int64_t remaining);
  void ScheduleExpiry(LeaseEntry* e);
  void CacheDenial(LeaseEntry* e, int64_t until_ns);
  // What Redis last said is left (`remaining`, if `known`; negative in
  // debt) makes the key's local credit: min(A, floor(max(0, remaining) x
  // remaining_share)), A when unknown, less a charge in flight, so that
  // credit plus uncharged admissions never exceed A.
  void SetCredit(LeaseEntry* e, int64_t remaining, bool known);
  // True if dropping `e` and creating it anew (with credit A) gives no more
  // credit than the key could get now.
  bool CreditIsFresh(const LeaseEntry* e, int64_t now) const;

  void NoteError(const absl::Status& error, bool key_error) {
    if (error_sink_) error_sink_(error, key_error);
  }

  const LeaseOptions options_;
  const std::string instance_id_;
  const double near_limit_fraction_;
  // What the spec makes of the book (SetSpec; the reconciler's thread).
  LeaseSizing sizing_;
  // The first band's burst: the largest lease or cost, and the most debt a
  // charge may leave (an outage should not close the limit for longer than
  // a full refill).
  int64_t burst_ = 0;
  bool fixed_window_first_ = false;  // expiry also at the window's end
  // A, the local credit of a cold key. relaxed: a value on its own, read
  // by NewEntry on any thread.
  std::atomic<int64_t> credit_{0};
  // A key whose credit is below A is kept this long after its last
  // activity (twice FullRefillNanos): a key evicted and created anew starts
  // with A, which must not come sooner than Redis would give it back.
  int64_t credit_refill_ns_ = 0;
  // kNearLimit when what Redis said is left is at most this.
  int64_t near_limit_remaining_ = 0;
  absl::AnyInvocable<void(const absl::Status&, bool)> error_sink_;

  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<>> expiry_;
  std::vector<LeaseEntry*> denied_;        // keys with a cached refusal
  std::vector<LeaseEntry*> charge_retry_;  // charges to send next step
  std::vector<LeaseEntry*> graveyard_;     // retired, charges still owed
  std::mt19937_64 rng_;
  uint64_t next_entry_id_ = 0;
  // When every lease was last returned (book clock): a grant asked for
  // before it is given back as soon as it arrives.
  int64_t returned_all_at_ns_ = -1;
  bool in_outage_ = false;
  int64_t rtt_before_outage_ns_ = 0;

  std::atomic<int64_t> rtt_ns_{1'000'000};
  std::atomic<int64_t> coarse_now_ns_{0};
  // Relaxed: statistics, written here and read by stats() on any thread.
  struct Counters {
    std::atomic<uint64_t> lease_requests{0}, tokens_granted{0},
        tokens_returned{0}, denied_by_redis{0}, charges{0}, tokens_charged{0},
        leases_granted{0}, leases_expired{0}, tokens_expired{0},
        leases_returned{0};
  };
  Counters counters_;
  SpareBlocks spares_;  // blocks for NewEntry
  LeaseSlicer slicer_;  // hot keys' per-thread slices
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_BOOK_H_
