// SpareBlocks: a stock of memory blocks of one size whose pages are already
// in memory, so that a thread creating a key neither takes malloc's slow
// path nor touches a page for the first time. On a VM a first touch costs
// about 10 us, 45 us at its p99 (docs/benchmarks.md,
// "Measurements behind design choices"), far
// more than a decision may. The owner's background thread tops the stock
// up (Refill) and gives freed blocks back (Free); any thread takes blocks
// (Allocate) with one compare-and-swap and no lock. When the stock is empty
// Allocate falls back to operator new, so a burst of new keys larger than
// the stock is slower, never refused.
#ifndef TOKENLEASE_SRC_BASE_SPARE_BLOCKS_H_
#define TOKENLEASE_SRC_BASE_SPARE_BLOCKS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "base/mpsc_queue.h"

namespace tokenlease::internal {

class SpareBlocks {
 public:
  // Blocks of `block_size` bytes aligned to `align` (a power of two); the
  // stock holds at most `capacity` of them (rounded up to a power of two;
  // 0 keeps none: Allocate is operator new).
  SpareBlocks(size_t block_size, size_t align, size_t capacity);
  // Frees the blocks in the stock (not the ones handed out).
  ~SpareBlocks();
  SpareBlocks(const SpareBlocks&) = delete;
  SpareBlocks& operator=(const SpareBlocks&) = delete;

  // Any thread: a block from the stock (no lock, no system call), or from
  // operator new if the stock is empty. Never null (operator new aborts the
  // process on exhaustion, as the library is built without exceptions).
  void* Allocate();

  // Any thread: takes back a block from Allocate (or from operator new with
  // this size and alignment): into the stock if it has room (its pages
  // stay in memory for the next key), else operator delete.
  void Free(void* block);

  // Fills the stock with new blocks, each written once so that its pages
  // are in memory; returns how many were added. Any thread; meant for the
  // owner's background thread, as it may allocate and fault pages.
  size_t Refill();

  // Allocate calls that found the stock empty, since creation (any thread).
  int64_t misses() const {
    // relaxed: a counter.
    return misses_.load(std::memory_order_relaxed);
  }

 private:
  void* NewBlock() const;
  void DeleteBlock(void* block) const;

  const size_t block_size_;
  const std::align_val_t align_;
  const bool enabled_;
  BoundedMpmcQueue<void> stock_;
  std::atomic<int64_t> misses_{0};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_SPARE_BLOCKS_H_
