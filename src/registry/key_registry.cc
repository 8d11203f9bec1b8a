#include "registry/key_registry.h"

#include <vector>

namespace tokenlease::internal {

KeyRegistry::KeyRegistry(EntryPolicy* policy, int64_t max_keys, int shards)
    : policy_(policy),
      max_keys_(max_keys),
      shard_mask_(static_cast<size_t>(shards) - 1),
      shards_(std::make_unique<Shard[]>(shards)),
      shard_count_(shards) {}

KeyRegistry::~KeyRegistry() {
  for (int i = 0; i < shard_count_; ++i) {
    WriterLock lock(&shards_[i].mu);
    for (auto& [name, entry] : shards_[i].map) KeyEntry::Destroy(entry);
    shards_[i].map.clear();
  }
}

KeyEntry* KeyRegistry::FindOrInsertLocked(Shard& shard, std::string_view name,
                                          size_t hash, int64_t now_ns) {
  auto it = shard.map.find(HashedName{name, hash});
  if (it != shard.map.end()) return it->second;
  if (shard.map.size() >= shard.next_sweep) {
    SweepLocked(shard, now_ns);
    shard.next_sweep = std::max<size_t>(64, 2 * shard.map.size());
  }
  if (size_.fetch_add(1, std::memory_order_relaxed) >= max_keys_) {
    size_.fetch_sub(1, std::memory_order_relaxed);
    if (SweepLocked(shard, now_ns) == 0) return nullptr;
    size_.fetch_add(1, std::memory_order_relaxed);
  }
  KeyEntry* e = policy_->NewEntry(name, now_ns);
  shard.map.emplace(e->name(), e);
  return e;
}

int64_t KeyRegistry::SweepLocked(Shard& shard, int64_t now_ns) {
  std::vector<KeyEntry*> idle;
  for (auto& [name, entry] : shard.map) {
    if (entry->pins.load(std::memory_order_acquire) == 0 &&
        policy_->IsIdle(entry, now_ns)) {
      idle.push_back(entry);
    }
  }
  for (KeyEntry* e : idle) {
    shard.map.erase(e->name());
    KeyEntry::Destroy(e);
  }
  size_.fetch_sub(static_cast<int64_t>(idle.size()), std::memory_order_relaxed);
  return static_cast<int64_t>(idle.size());
}

int64_t KeyRegistry::EvictIdle(int64_t now_ns) {
  int64_t removed = 0;
  for (int i = 0; i < shard_count_; ++i) {
    WriterLock lock(&shards_[i].mu);
    removed += SweepLocked(shards_[i], now_ns);
  }
  return removed;
}

void KeyRegistry::ForEach(const std::function<void(KeyEntry*)>& fn) {
  for (int i = 0; i < shard_count_; ++i) {
    ReaderLock lock(&shards_[i].mu);
    for (auto& [name, entry] : shards_[i].map) fn(entry);
  }
}

}  // namespace tokenlease::internal
