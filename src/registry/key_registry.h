// Concurrent map from key name to KeyEntry: sharded, reader-locked lookups,
// idle eviction, and a bound on the number of keys.
#ifndef TOKENLEASE_SRC_REGISTRY_KEY_REGISTRY_H_
#define TOKENLEASE_SRC_REGISTRY_KEY_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "registry/key_entry.h"
#include "registry/rw_spin_lock.h"

namespace tokenlease::internal {

// What the registry needs from its owner: how to build a new key's entry
// and whether an entry is back to its initial state.
class EntryPolicy {
 public:
  virtual ~EntryPolicy() = default;
  virtual KeyEntry* NewEntry(std::string_view name, int64_t now_ns) = 0;
  virtual bool IsIdle(KeyEntry* e, int64_t now_ns) = 0;
};

class KeyRegistry {
 public:
  KeyRegistry(EntryPolicy* policy, int64_t max_keys, int shards);
  ~KeyRegistry();
  KeyRegistry(const KeyRegistry&) = delete;
  KeyRegistry& operator=(const KeyRegistry&) = delete;

  // Calls fn(entry) for `name`, creating the entry if needed, while holding
  // the shard's lock (a reader lock when the key exists), so the entry
  // cannot be evicted during fn. Calls fn(nullptr) if the key is new and
  // the registry is full even after reclaiming idle keys.
  template <typename Fn>
  auto With(std::string_view name, int64_t now_ns, Fn&& fn) {
    const size_t hash = HashName(name);
    Shard& shard = shards_[(hash >> 40) & shard_mask_];
    {
      ReaderLock lock(&shard.mu);
      auto it = shard.map.find(HashedName{name, hash});
      if (it != shard.map.end()) return fn(it->second);
    }
    bool retried = false;
    for (;;) {
      {
        WriterLock lock(&shard.mu);
        KeyEntry* e = FindOrInsertLocked(shard, name, hash, now_ns);
        if (e != nullptr || retried) return fn(e);
      }
      // Full: reclaim idle keys across all shards (not holding any shard
      // lock), then try once more.
      EvictIdle(now_ns);
      retried = true;
    }
  }

  // Removes idle, unpinned entries from every shard; returns how many.
  int64_t EvictIdle(int64_t now_ns);
  // Calls fn(entry) for every entry, one shard (reader-locked) at a time.
  void ForEach(const std::function<void(KeyEntry*)>& fn);
  int64_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  struct HashedName {
    std::string_view name;
    size_t hash;
  };
  // absl's hash of absl::string_view: in Debian's Abseil build it is not
  // std::string_view, whose absl::Hash falls back to the slower std::hash.
  static size_t HashName(std::string_view s) {
    return absl::Hash<absl::string_view>{}(
        absl::string_view(s.data(), s.size()));
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
  // Keys are views into their own KeyEntry's name.
  using Map =
      absl::flat_hash_map<std::string_view, KeyEntry*, NameHash, NameEq>;
  struct alignas(64) Shard {
    RwSpinLock mu;
    Map map ABSL_GUARDED_BY(mu);
    // Sweep this shard when it grows past this many keys (amortised O(1)).
    size_t next_sweep ABSL_GUARDED_BY(mu) = 64;
  };

  KeyEntry* FindOrInsertLocked(Shard& shard, std::string_view name, size_t hash,
                               int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  int64_t SweepLocked(Shard& shard, int64_t now_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);

  EntryPolicy* const policy_;
  const int64_t max_keys_;
  const size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
  const int shard_count_;
  // Relaxed: only counts; an insert reserves its slot with fetch_add and
  // gives it back if that passed max_keys, so the bound is exact.
  std::atomic<int64_t> size_{0};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REGISTRY_KEY_REGISTRY_H_
