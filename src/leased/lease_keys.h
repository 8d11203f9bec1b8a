// The keys of a LeasedLimiter: the registry (ShardedRegistry of LeaseEntry)
// and its owner's rules for creating, retiring and reviving keys, pins
// (handles, waits), lookups for Resolve and Inspect, and the gauges summed
// over the keys in memory.
//
// Entries are retired only by the reconciler (Growth::kRefusesWhenFull),
// which alone may read the book. A key the book calls evictable is marked
// kRetired with a compare-and-swap on its flags, which fails if a decision
// has queued a refill or a charge meanwhile; neither is queued after the
// mark (Reconciler::RequestRefill, RequestCharge), and a decision that
// admitted from the key's local credit after the book's check is charged
// when the entry is freed (LeaseBook::Bury).
#ifndef TOKENLEASE_SRC_LEASED_LEASE_KEYS_H_
#define TOKENLEASE_SRC_LEASED_LEASE_KEYS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "leased/lease_book.h"
#include "leased/lease_entry.h"
#include "leased/reconciler.h"
#include "tokenlease/leased.h"

namespace tokenlease::internal {

class LeaseKeys final : public LeaseRegistry::Owner {
 public:
  // `book` and `reconciler` must outlive the keys; the reconciler is used
  // only once it is constructed (it takes registry()).
  LeaseKeys(const LeasedLimiterOptions& options, LeaseBook* book,
            Reconciler* reconciler);

  LeaseRegistry& registry() { return registry_; }

  // LeaseRegistry::Owner.
  LeaseEntry* NewEntry(std::string_view name, int64_t) override {
    return book_->NewEntry(name);
  }
  // After the grace period: no decision can reach `e` any more.
  void DeleteEntry(LeaseEntry* e) override { book_->Bury(e); }
  bool TryRetire(LeaseEntry* e, int64_t now_ns) override;
  void Revive(LeaseEntry* e) override;

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

  // OK, or InvalidArgument for a key longer than max_key_bytes.
  absl::Status CheckKey(std::string_view key) const;
  // `key`'s entry (created if needed), pinned; ResourceExhausted at
  // max_keys.
  absl::StatusOr<LeaseEntry*> Pin(std::string_view key);
  // This instance's state for `key` (LeasedLimiter::Inspect).
  absl::StatusOr<LeaseKeyInfo> Inspect(std::string_view key);
  // Adds keys and the gauges summed over the keys in memory to `s`.
  void AddGauges(SharedLimitStats* s);

 private:
  const int64_t max_keys_;
  const int32_t max_key_bytes_;
  LeaseBook* const book_;
  Reconciler* const reconciler_;
  LeaseRegistry registry_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_KEYS_H_
