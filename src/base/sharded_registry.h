// src/base: the synchronisation primitives every mode shares (spin locks
// with RAII guards and thread-safety annotations, the bounded MPSC queue,
// the notification) and the key registry both the local and the leased
// limiter keep their keys in. Depends on Abseil only.
//
// ShardedRegistry: a concurrent map from key name to Entry. Power-of-two
// shards, each cache-line aligned with a reader-writer spin lock over an
// absl::flat_hash_map (the key is a view of the entry's own name, hashed
// once per lookup), an exact bound on the number of keys, and reclamation
// of the entries their owner says can go.
#ifndef TOKENLEASE_SRC_BASE_SHARDED_REGISTRY_H_
#define TOKENLEASE_SRC_BASE_SHARDED_REGISTRY_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/hash/hash.h"
#include "base/absl_view.h"
#include "base/rw_spin_lock.h"

namespace tokenlease::internal {

// Entry must provide `std::string_view name() const`, stable while the
// entry is registered (the map's key is a view of it), and
// `std::atomic<uint32_t> pins`, the handles holding it: pinned entries are
// never reclaimed. A handle increments pins under the shard lock (relaxed:
// the lock orders it against reclamation) and decrements it with release;
// reclamation loads it with acquire, so every use through a handle happens
// before the entry is freed.
template <typename Entry>
class ShardedRegistry {
 public:
  // What the registry needs from the owner of its entries.
  class Owner {
   public:
    virtual ~Owner() = default;
    // A new entry for `name` (first seen at `now_ns`); never null.
    virtual Entry* NewEntry(std::string_view name, int64_t now_ns) = 0;
    virtual void DeleteEntry(Entry* e) = 0;
    // True if the unpinned entry `e` can be dropped now. Called under its
    // shard's writer lock, so no lookup by name is using it.
    virtual bool Reclaimable(Entry* e, int64_t now_ns) = 0;
  };

  // When entries are reclaimed without an explicit Reclaim() call.
  enum class Growth : uint8_t {
    // A shard reclaims idle entries when it has doubled since its last
    // sweep (amortised O(1) per insert), and a new key that finds the
    // registry full reclaims before it is refused. Reclaimable() then runs
    // on the inserting thread.
    kReclaims,
    // Only Reclaim() reclaims (the owner's state is single-threaded); a new
    // key that finds the registry full is refused at once.
    kRefusesWhenFull,
  };

  // `shards` is a power of two (the owner's options validate it).
  ShardedRegistry(Owner* owner, int64_t max_keys, int shards, Growth growth)
      : owner_(owner),
        max_keys_(max_keys),
        growth_(growth),
        shard_mask_(static_cast<size_t>(std::max(shards, 1)) - 1),
        shards_(std::make_unique<Shard[]>(shard_mask_ + 1)) {}

  // Deletes every entry. No other thread may use the registry any more.
  ~ShardedRegistry() {
    for (size_t i = 0; i <= shard_mask_; ++i) {
      WriterLock lock(&shards_[i].mu);
      for (auto& [name, entry] : shards_[i].map) owner_->DeleteEntry(entry);
      shards_[i].map.clear();
    }
  }
  ShardedRegistry(const ShardedRegistry&) = delete;
  ShardedRegistry& operator=(const ShardedRegistry&) = delete;

  // Calls fn(entry) for `name`, creating the entry if needed, while holding
  // the shard's lock (a reader lock when the key exists), so the entry
  // cannot be reclaimed during fn; returns fn's result. Calls fn(nullptr)
  // if the key is new and the registry is full (after reclaiming, with
  // Growth::kReclaims).
  template <typename Fn>
  auto With(std::string_view name, int64_t now_ns, Fn&& fn) {
    const size_t hash = HashName(name);
    Shard& shard = ShardOf(hash);
    {
      ReaderLock lock(&shard.mu);
      auto it = shard.map.find(HashedName{name, hash});
      if (it != shard.map.end()) return fn(it->second);
    }
    bool retried = false;
    for (;;) {
      {
        WriterLock lock(&shard.mu);
        Entry* e = FindOrInsertLocked(shard, name, hash, now_ns);
        if (e != nullptr || retried || growth_ == Growth::kRefusesWhenFull) {
          return fn(e);
        }
      }
      // Full: reclaim across all shards (holding no shard lock), then try
      // once more.
      Reclaim(now_ns);
      retried = true;
    }
  }

  // Calls fn(entry), or fn(nullptr) if `name` is not registered, under the
  // shard's reader lock. Never creates.
  template <typename Fn>
  auto Find(std::string_view name, Fn&& fn) {
    const size_t hash = HashName(name);
    Shard& shard = ShardOf(hash);
    ReaderLock lock(&shard.mu);
    auto it = shard.map.find(HashedName{name, hash});
    return fn(it == shard.map.end() ? nullptr : it->second);
  }

  // Calls fn(entry) for every entry, one reader-locked shard at a time.
  void ForEach(absl::FunctionRef<void(Entry*)> fn) {
    for (size_t i = 0; i <= shard_mask_; ++i) {
      ReaderLock lock(&shards_[i].mu);
      for (auto& [name, entry] : shards_[i].map) fn(entry);
    }
  }

  // Drops every unpinned entry the owner calls reclaimable; returns how
  // many.
  int64_t Reclaim(int64_t now_ns) {
    int64_t removed = 0;
    for (size_t i = 0; i <= shard_mask_; ++i) {
      WriterLock lock(&shards_[i].mu);
      removed += ReclaimLocked(shards_[i], now_ns);
    }
    return removed;
  }

  // Keys registered now.
  int64_t size() const {
    // Relaxed: a count; see size_.
    return size_.load(std::memory_order_relaxed);
  }
  int64_t max_keys() const { return max_keys_; }

 private:
  struct HashedName {
    std::string_view name;
    size_t hash;
  };
  // absl's hash of absl::string_view: in Debian's Abseil build it is not
  // std::string_view, whose absl::Hash falls back to the slower std::hash.
  static size_t HashName(std::string_view s) {
    return absl::Hash<absl::string_view>{}(AbslView(s));
  }
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return HashName(s); }
    size_t operator()(const HashedName& h) const { return h.hash; }
  };
  struct NameEq {
    using is_transparent = void;
    static std::string_view View(std::string_view s) { return s; }
    static std::string_view View(const HashedName& h) { return h.name; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return View(a) == View(b);
    }
  };
  using Map = absl::flat_hash_map<std::string_view, Entry*, NameHash, NameEq>;
  struct alignas(64) Shard {
    RwSpinLock mu;
    Map map ABSL_GUARDED_BY(mu);
    // Growth::kReclaims: sweep when the shard grows past this many keys.
    size_t next_sweep ABSL_GUARDED_BY(mu) = 64;
  };

  // The high bits pick the shard: flat_hash_map uses the low ones.
  Shard& ShardOf(size_t hash) { return shards_[(hash >> 40) & shard_mask_]; }

  Entry* FindOrInsertLocked(Shard& shard, std::string_view name, size_t hash,
                            int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    auto it = shard.map.find(HashedName{name, hash});
    if (it != shard.map.end()) return it->second;
    const bool reclaims = growth_ == Growth::kReclaims;
    if (reclaims && shard.map.size() >= shard.next_sweep) {
      ReclaimLocked(shard, now_ns);
      shard.next_sweep = std::max<size_t>(64, 2 * shard.map.size());
    }
    // Relaxed: a count. A slot is reserved before the insert and given back
    // if that passed max_keys, so the bound is exact; after a reclaim the
    // reservation is tried again (other shards may have taken the freed
    // slots meanwhile).
    for (bool reclaimed = false;;) {
      if (size_.fetch_add(1, std::memory_order_relaxed) < max_keys_) break;
      size_.fetch_sub(1, std::memory_order_relaxed);
      if (!reclaims || reclaimed || ReclaimLocked(shard, now_ns) == 0) {
        return nullptr;
      }
      reclaimed = true;
    }
    Entry* e = owner_->NewEntry(name, now_ns);
    shard.map.emplace(e->name(), e);
    return e;
  }

  int64_t ReclaimLocked(Shard& shard, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    std::vector<Entry*> idle;
    for (auto& [name, entry] : shard.map) {
      // Acquire: pairs with a handle's release decrement (see Entry above).
      if (entry->pins.load(std::memory_order_acquire) == 0 &&
          owner_->Reclaimable(entry, now_ns)) {
        idle.push_back(entry);
      }
    }
    for (Entry* e : idle) {
      shard.map.erase(e->name());
      owner_->DeleteEntry(e);
    }
    size_.fetch_sub(static_cast<int64_t>(idle.size()),
                    std::memory_order_relaxed);
    return static_cast<int64_t>(idle.size());
  }

  Owner* const owner_;
  const int64_t max_keys_;
  const Growth growth_;
  const size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<int64_t> size_{0};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_SHARDED_REGISTRY_H_
