// One key of a LeasedLimiter: the atomics the decision path and the
// reconciler share, and the record only the lease book (reconciler thread)
// touches.
#ifndef TOKENLEASE_SRC_LEASED_LEASE_ENTRY_H_
#define TOKENLEASE_SRC_LEASED_LEASE_ENTRY_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/key_name.h"
#include "tokenlease/leased.h"

namespace tokenlease::internal {

// Flag bits of LeaseEntry::flags, in numeric order.
inline constexpr uint32_t kRefillQueued = 1;   // in the reconciler's queue or
                                               // a lease request is in flight
inline constexpr uint32_t kDenied = 2;         // Redis refused: deny locally
                                               // until deny_until_ns
inline constexpr uint32_t kHasLease = 4;       // a lease is active
inline constexpr uint32_t kRanDry = 8;         // denied while a refill was
                                               // on its way: lease too small
inline constexpr uint32_t kChargeQueued = 16;  // in the reconciler's charge
                                               // queue
inline constexpr uint32_t kWantedWhileDenied = 32;  // a decision was denied
                                                    // while kDenied was set
inline constexpr uint32_t kRetired = 64;       // removed from the registry: no
                                               // refill is queued for it and no
                                               // new handle may pin it
inline constexpr uint32_t kRedisFailed = 128;  // the last lease request
                                               // failed: Redis cannot decide
                                               // for this key (FailureMode)
inline constexpr uint32_t kNearLimit = 256;    // Redis's last reply said at
                                               // most (1 - near_limit_
                                               // fraction) x burst is left
                                               // (a metric; never blocks
                                               // eviction)
inline constexpr uint32_t kManyThreads = 512;  // two threads asked for its
                                               // refills: it gets slices
                                               // once its lease is large
                                               // (a hint; never blocks
                                               // eviction)

// LeaseRecord::last_active_ns of a key no sweep has seen yet: a decision
// created it since the last sweep, maybe a decision still running on it.
inline constexpr int64_t kNotSeen = INT64_MIN;

// The lease book's record of one key (LeaseBook; reconciler thread only).
struct LeaseRecord {
  uint64_t id = 0;            // unique within the limiter (lease ids)
  uint64_t lease_seq = 0;     // numbers this key's leases
  std::string lease_id;       // id of the current lease ("" if none)
  int64_t granted_at_us = 0;  // Redis time of the current lease's grant
  int64_t lease_granted = 0;  // tokens of the current lease
  // When the current lease landed (book clock) and what the key held then
  // (balance and slices, the leftover included): the pace of its spending
  // (RenewalCannotWait). 0: no lease yet.
  int64_t landed_at_ns = 0;
  int64_t held_at_landing = 0;
  // The lease the current one was merged into (its leftover was still in
  // the balance when the grant landed): up to prev_returnable of the
  // balance can go back under its id. Older leftovers are dropped.
  std::string prev_lease_id;
  int64_t prev_granted_at_us = 0;
  int64_t prev_returnable = 0;
  int64_t expires_at_ns = 0;     // book clock; 0: no lease
  int64_t lease_size = 0;        // the adaptive target size (0: not yet set)
  int64_t last_remaining = -1;   // what Redis last said is left (-1 unknown;
                                 // the sizer treats debt as unknown too)
  bool remaining_known = false;  // a reply said what is left (maybe < 0)
  int64_t remaining_at_ns = 0;   // when that reply landed (book clock)
  int64_t requested_at_ns = 0;   // when the in-flight request left
  bool request_in_flight = false;
  int error_streak = 0;  // consecutive failed lease requests
  bool charge_in_flight = false;
  int64_t charge_amount = 0;       // tokens of the charge in flight
  int64_t charge_outage = 0;       // of which admitted under the failure mode
  int charge_error_streak = 0;     // consecutive failed charges
  int64_t charge_retry_at_ns = 0;  // book clock: no charge before this
  // Last refill request, grant or charge; kNotSeen until the reconciler's
  // first sweep over the key (LeaseBook::Evictable).
  int64_t last_active_ns = kNotSeen;
  int heap_refs = 0;          // entries in the expiry heap
  int releases_pending = 0;   // releases queued or in flight
  int charge_retry_refs = 0;  // times the key waits in the charge retries
  // Local credit handed to the decision path and not yet taken by a charge:
  // always equal to local_share + unsynced once in-flight decisions land
  // (the book's own count, so it never reads the two atomics as a pair).
  int64_t credit_given = 0;
  // The key's place in the slicer's list (LeaseSlicer), -1 without slices.
  int32_t slice_index = -1;
  // The key's place in the slicer's candidates, -1 if not one.
  int32_t slice_candidate = -1;
};

// LeaseHot (balance, low_water) comes first: the decision path subtracts
// from the balance with one relaxed fetch_sub (a count, publishing nothing)
// and adds back on failure; the book adds grants, takes leftovers with a
// compare-exchange, and sets the low-water mark. Cache-line aligned, so
// two keys' balances never share a line.
struct alignas(64) LeaseEntry : LeaseHot {
  // `credit`: the local credit a key without a lease starts with
  // (LeaseOptions::local_share; 0 for the other cold-key policies).
  explicit LeaseEntry(std::string_view key, int64_t credit = 0)
      : local_share(credit), name_(key) {
    record.credit_given = credit;
  }

  // The key (the registry's map views it).
  std::string_view name() const { return name_.view(); }

  std::atomic<uint32_t> flags{0};
  // Handles holding this key (ShardedRegistry explains the orders).
  std::atomic<uint32_t> pins{0};
  // kDenied: until when (book clock, ns).
  std::atomic<int64_t> deny_until_ns{0};
  // kLocalShare: tokens a key without a lease may still admit (its local
  // credit; docs/design.md, "Keys without a lease"), and tokens so admitted
  // that no charge has taken yet.
  std::atomic<int64_t> local_share{0};
  std::atomic<int64_t> unsynced{0};
  // OutageUsage::kCharge: tokens admitted under the failure mode that no
  // charge has taken yet (not local credit: they never count against it).
  std::atomic<int64_t> outage_unsynced{0};

  // Tokens admitted that no charge has taken yet, of either kind. Relaxed:
  // the reconciler's checks (the decision path queues a charge after it
  // adds, so a stale zero is caught by the queued charge).
  int64_t Uncharged() const {
    return unsynced.load(std::memory_order_relaxed) +
           outage_unsynced.load(std::memory_order_relaxed);
  }
  // The largest cost denied since the last lease request: the next request
  // asks for at least this much.
  std::atomic<int64_t> wanted_cost{0};
  // The slice index (plus one) of the thread that last asked for a refill:
  // another thread asking sets kManyThreads (LeaseSlicer, without
  // slice_single_thread: only keys that several threads decide on get
  // slices). relaxed: a hint.
  std::atomic<uint32_t> refiller{0};

  LeaseRecord record;  // the lease book's; reconciler thread only

 private:
  const KeyName name_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_ENTRY_H_
