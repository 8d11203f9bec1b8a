#include "base/spare_blocks.h"

#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace tokenlease::internal {
namespace {

// Under AddressSanitizer a block in the stock is poisoned, so that a use of
// an entry after it was freed (and before it is handed out again) is still
// reported, as it would be without the stock.
void Poison(void* block, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_POISON_MEMORY_REGION(block, size);
#else
  (void)block, (void)size;
#endif
}
void Unpoison(void* block, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(block, size);
#else
  (void)block, (void)size;
#endif
}

}  // namespace

SpareBlocks::SpareBlocks(size_t block_size, size_t align, size_t capacity)
    : block_size_(block_size),
      align_(static_cast<std::align_val_t>(align)),
      enabled_(capacity > 0),
      stock_(capacity) {}

SpareBlocks::~SpareBlocks() {
  while (void* block = stock_.TryPop()) {
    Unpoison(block, block_size_);
    DeleteBlock(block);
  }
}

void* SpareBlocks::Allocate() {
  if (void* block = enabled_ ? stock_.TryPop() : nullptr) {
    Unpoison(block, block_size_);
    return block;
  }
  // relaxed: a counter.
  misses_.fetch_add(1, std::memory_order_relaxed);
  return NewBlock();
}

void SpareBlocks::Free(void* block) {
  if (block == nullptr) return;
  if (!enabled_) {
    DeleteBlock(block);
    return;
  }
  Poison(block, block_size_);
  if (!stock_.TryPush(block)) {
    Unpoison(block, block_size_);
    DeleteBlock(block);
  }
}

size_t SpareBlocks::Refill() {
  if (!enabled_) return 0;
  size_t added = 0;
  // Bounded: consumers may take blocks while this runs. A full stock (the
  // common case between bursts of new keys) allocates nothing.
  while (added < stock_.capacity() && !stock_.LooksFull()) {
    void* block = NewBlock();
    // Written, not just reserved: the first touch of each page happens here.
    std::memset(block, 0, block_size_);
    Poison(block, block_size_);
    if (!stock_.TryPush(block)) {
      Unpoison(block, block_size_);
      DeleteBlock(block);
      break;
    }
    ++added;
  }
  return added;
}

void* SpareBlocks::NewBlock() const {
  return ::operator new(block_size_, align_);
}

void SpareBlocks::DeleteBlock(void* block) const {
  ::operator delete(block, align_);
}

}  // namespace tokenlease::internal
