#include "leased/lease_keys.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/absl_view.h"
#include "core/options_checks.h"
#include "leased/lease_slices.h"

namespace tokenlease::internal {

LeaseKeys::LeaseKeys(const LeasedLimiterOptions& options, LeaseBook* book,
                     Reconciler* reconciler)
    : max_keys_(options.max_keys),
      max_key_bytes_(options.max_key_bytes),
      book_(book),
      reconciler_(reconciler),
      registry_(this, options.max_keys, options.shards,
                LeaseRegistry::Growth::kRefusesWhenFull) {}

bool LeaseKeys::TryRetire(LeaseEntry* e, int64_t now_ns) {
  if (!book_->Evictable(e, now_ns)) return false;
  // Relaxed: the compare-and-swap below decides.
  uint32_t f = e->flags.load(std::memory_order_relaxed);
  // seq_cst: one side of the store-load pair with a handle's pin (see
  // ShardedRegistry), and ordered against RequestRefill's fetch_or.
  // kNearLimit (a metric) and kManyThreads (a hint) never keep a key in
  // memory.
  if ((f & ~(kNearLimit | kManyThreads)) != 0 ||
      !e->flags.compare_exchange_strong(f, f | kRetired,
                                        std::memory_order_seq_cst)) {
    return false;
  }
  // A decision still on this entry must not spend credit its successor
  // gets anew (what it already spent is charged when the entry is freed).
  book_->RevokeCredit(e);
  return true;
}

void LeaseKeys::Revive(LeaseEntry* e) {
  e->flags.fetch_and(~kRetired, std::memory_order_seq_cst);
  // A charge request undone while it was retired: queue it again.
  if (e->Uncharged() > 0) reconciler_->RequestCharge(e);
}

absl::Status LeaseKeys::CheckKey(std::string_view key) const {
  return CheckKeySize("LeasedLimiterOptions", key, max_key_bytes_);
}

absl::StatusOr<LeaseEntry*> LeaseKeys::Pin(std::string_view key) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  for (;;) {
    bool retired = false;
    absl::StatusOr<LeaseEntry*> pinned = registry_.With(
        key, 0, [&](LeaseEntry* e) -> absl::StatusOr<LeaseEntry*> {
          if (e == nullptr) {
            return absl::ResourceExhaustedError(
                absl::StrCat("the limiter holds max_keys (", max_keys_,
                             ") keys and none is idle; raise "
                             "LeasedLimiterOptions::max_keys"));
          }
          retired = !PinLive(e);
          return e;
        });
    if (!retired) return pinned;
  }
}

absl::StatusOr<LeaseKeyInfo> LeaseKeys::Inspect(std::string_view key) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  return registry_.Find(
      key, [&](LeaseEntry* e) -> absl::StatusOr<LeaseKeyInfo> {
        if (e == nullptr) {
          return absl::NotFoundError(
              absl::StrCat("key \"", AbslView(key),
                           "\" is not in memory (never used, or evicted)"));
        }
        LeaseKeyInfo info;
        // relaxed: a monitoring snapshot.
        info.sliced_tokens = LeaseSlicer::Held(e);
        info.balance =
            e->balance.load(std::memory_order_relaxed) + info.sliced_tokens;
        // acquire: see LeaseHot::slices.
        info.sliced = e->slices.load(std::memory_order_acquire) != nullptr;
        info.low_water = e->low_water.load(std::memory_order_relaxed);
        const uint32_t f = e->flags.load(std::memory_order_acquire);
        info.has_lease = f & kHasLease;
        info.refill_pending = f & kRefillQueued;
        info.denied = f & kDenied;
        return info;
      });
}

void LeaseKeys::AddGauges(SharedLimitStats* stats) {
  stats->keys = static_cast<uint64_t>(registry_.size());
  LeaseStats* s = &stats->lease;
  // ForEach only reads the registry (an epoch-guarded walk).
  registry_.ForEach([s](LeaseEntry* e) {
    // relaxed: a monitoring snapshot of counts that decisions change
    // meanwhile; a negative balance is a failed subtraction about to be
    // undone, and holds nothing.
    s->held_tokens +=
        std::max<int64_t>(0, e->balance.load(std::memory_order_relaxed)) +
        LeaseSlicer::Held(e);
    s->credit_tokens +=
        std::max<int64_t>(0, e->local_share.load(std::memory_order_relaxed));
    s->uncharged_tokens += std::max<int64_t>(0, e->Uncharged());
    // relaxed: a snapshot of the flags (a metric, nothing read through it).
    const uint32_t f = e->flags.load(std::memory_order_relaxed);
    if ((f & kNearLimit) && (f & (kHasLease | kDenied))) ++s->near_limit_keys;
    // relaxed: a count of keys (nothing read through the pointer).
    if (e->slices.load(std::memory_order_relaxed) != nullptr) ++s->sliced_keys;
  });
  s->overshoot_tokens = s->held_tokens + s->credit_tokens + s->uncharged_tokens;
}

}  // namespace tokenlease::internal
