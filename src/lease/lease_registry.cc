#include "lease/lease_registry.h"

namespace tokenlease::internal {

LeaseRegistry::LeaseRegistry(int64_t max_keys, int shards)
    : max_keys_(max_keys) {
  size_t n = 1;
  while (n < static_cast<size_t>(shards)) n <<= 1;
  shard_mask_ = n - 1;
  shards_ = std::make_unique<Shard[]>(n);
}

LeaseRegistry::~LeaseRegistry() = default;

void LeaseRegistry::ForEach(const std::function<void(LeaseEntry*)>& fn) {
  for (size_t i = 0; i <= shard_mask_; ++i) {
    ReaderLock lock(&shards_[i].mu);
    for (auto& [name, entry] : shards_[i].map) fn(entry.get());
  }
}

int64_t LeaseRegistry::Evict(const std::function<bool(LeaseEntry*)>& idle) {
  int64_t evicted = 0;
  for (size_t i = 0; i <= shard_mask_; ++i) {
    WriterLock lock(&shards_[i].mu);
    auto& map = shards_[i].map;
    for (auto it = map.begin(); it != map.end();) {
      if (idle(it->second.get())) {
        map.erase(it++);
        ++evicted;
      } else {
        ++it;
      }
    }
  }
  size_.fetch_sub(evicted, std::memory_order_relaxed);
  return evicted;
}

}  // namespace tokenlease::internal
