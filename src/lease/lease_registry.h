// Key name -> LeaseEntry for a LeasedLimiter: sharded maps behind
// reader-writer spin locks. Entries are freed only by Evict(), which the
// reconciler calls for entries it has proven idle and unpinned.
#ifndef TOKENLEASE_SRC_LEASE_LEASE_REGISTRY_H_
#define TOKENLEASE_SRC_LEASE_LEASE_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "lease/lease_entry.h"
#include "registry/rw_spin_lock.h"

namespace tokenlease::internal {

class LeaseRegistry {
 public:
  LeaseRegistry(int64_t max_keys, int shards);
  ~LeaseRegistry();
  LeaseRegistry(const LeaseRegistry&) = delete;
  LeaseRegistry& operator=(const LeaseRegistry&) = delete;

  // Calls fn(entry) with `name`'s entry (created if needed; `created` says
  // so) while holding the shard lock, so it cannot be evicted meanwhile;
  // fn(nullptr, false) if the key is new and max_keys is reached.
  template <typename Fn>
  auto With(std::string_view name, Fn&& fn) {
    const size_t hash = absl::Hash<absl::string_view>{}(
        absl::string_view(name.data(), name.size()));
    Shard& shard = shards_[(hash >> 40) & shard_mask_];
    {
      ReaderLock lock(&shard.mu);
      auto it = shard.map.find(absl::string_view(name.data(), name.size()));
      if (it != shard.map.end()) return fn(it->second.get(), false);
    }
    WriterLock lock(&shard.mu);
    auto it = shard.map.find(absl::string_view(name.data(), name.size()));
    if (it != shard.map.end()) return fn(it->second.get(), false);
    // relaxed: a count; the bound is kept by reserving before inserting.
    if (size_.fetch_add(1, std::memory_order_relaxed) >= max_keys_) {
      size_.fetch_sub(1, std::memory_order_relaxed);
      return fn(static_cast<LeaseEntry*>(nullptr), false);
    }
    auto entry = std::make_unique<LeaseEntry>();
    entry->name = std::string(name);
    LeaseEntry* e = entry.get();
    shard.map.emplace(absl::string_view(e->name), std::move(entry));
    return fn(e, true);
  }

  // Calls fn(entry) with `name`'s entry, or fn(nullptr) if it does not
  // exist, under the shard's reader lock. Never creates.
  template <typename Fn>
  auto Find(std::string_view name, Fn&& fn) {
    const size_t hash = absl::Hash<absl::string_view>{}(
        absl::string_view(name.data(), name.size()));
    Shard& shard = shards_[(hash >> 40) & shard_mask_];
    ReaderLock lock(&shard.mu);
    auto it = shard.map.find(absl::string_view(name.data(), name.size()));
    return fn(it == shard.map.end() ? nullptr : it->second.get());
  }

  // Calls fn(entry) for every entry, one reader-locked shard at a time.
  void ForEach(const std::function<void(LeaseEntry*)>& fn);
  // Removes and frees the entries for which `idle(entry)` holds (checked
  // under the shard's writer lock, so no lookup by name is using them).
  int64_t Evict(const std::function<bool(LeaseEntry*)>& idle);
  int64_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  struct Shard {
    RwSpinLock mu;
    // Keys are views of the entry's own name.
    absl::flat_hash_map<absl::string_view, std::unique_ptr<LeaseEntry>> map;
  };
  const int64_t max_keys_;
  size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int64_t> size_{0};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASE_LEASE_REGISTRY_H_
