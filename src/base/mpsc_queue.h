// Bounded queues of pointers: callers on any thread hand work (Redis
// commands, refill requests, spare memory blocks) to other threads without
// a lock. Both are Dmitry Vyukov's bounded array queue: each slot carries a
// sequence number that says whether it is free for the producer of lap k or
// full for the consumer of lap k, so producers only contend on one CAS on
// the tail. BoundedMpscQueue has one consumer (a plain head);
// BoundedMpmcQueue lets any thread pop (a CAS on the head).
#ifndef TOKENLEASE_SRC_BASE_MPSC_QUEUE_H_
#define TOKENLEASE_SRC_BASE_MPSC_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tokenlease::internal {

// The slots and the producer side both queues share.
template <typename T>
class BoundedQueueBase {
 public:
  // `capacity` is rounded up to a power of two (at least 2).
  explicit BoundedQueueBase(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    slots_ = std::make_unique<Slot[]>(cap);
    for (size_t i = 0; i < cap; ++i) {
      slots_[i].seq.store(i, std::memory_order_relaxed);
    }
  }

  size_t capacity() const { return mask_ + 1; }

  // Any thread. True if a TryPush now would find the queue full: a hint,
  // stale as soon as it is returned (a consumer may free a slot, a producer
  // take the last one).
  bool LooksFull() const {
    // relaxed: a hint; acquire: as in TryPush.
    const size_t pos = tail_.load(std::memory_order_relaxed);
    const size_t seq = slots_[pos & mask_].seq.load(std::memory_order_acquire);
    return static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos) < 0;
  }

  // Any thread. False if the queue is full (nothing was stored).
  bool TryPush(T* item) {
    // relaxed: the position is only a ticket; the slot's seq orders data.
    size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& slot = slots_[pos & mask_];
      // acquire: pairs with the consumer's release that freed this slot.
      const size_t seq = slot.seq.load(std::memory_order_acquire);
      const intptr_t diff =
          static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        // relaxed: winning the ticket publishes nothing yet.
        if (tail_.compare_exchange_weak(pos, pos + 1,
                                        std::memory_order_relaxed)) {
          slot.item = item;
          // release: the consumer that sees seq == pos + 1 sees the item.
          slot.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // the slot still holds last lap's item: full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

 protected:
  struct Slot {  // 16 bytes; neighbours may share a line (rarely hot)
    std::atomic<size_t> seq{0};
    T* item = nullptr;
  };
  // Takes the item of `slot`, which holds lap `pos`'s item, and frees the
  // slot for the producer of the next lap.
  T* Consume(Slot& slot, size_t pos) {
    T* item = slot.item;
    // release: the producer of the next lap may reuse the slot.
    slot.seq.store(pos + mask_ + 1, std::memory_order_release);
    return item;
  }

  size_t mask_ = 0;
  std::unique_ptr<Slot[]> slots_;

 private:
  alignas(64) std::atomic<size_t> tail_{0};
};

// One consumer thread.
template <typename T>
class BoundedMpscQueue : public BoundedQueueBase<T> {
 public:
  explicit BoundedMpscQueue(size_t capacity) : BoundedQueueBase<T>(capacity) {}

  // The consumer thread only: true if TryPop would return null now.
  bool Empty() const {
    // acquire: as in TryPop.
    return this->slots_[head_ & this->mask_].seq.load(
               std::memory_order_acquire) != head_ + 1;
  }

  // The consumer thread only. Null if empty (or the next producer has won
  // its slot but not yet stored: it will be seen on the next call).
  T* TryPop() {
    auto& slot = this->slots_[head_ & this->mask_];
    // acquire: pairs with the producer's release of the item.
    if (slot.seq.load(std::memory_order_acquire) != head_ + 1) return nullptr;
    return this->Consume(slot, head_++);
  }

 private:
  alignas(64) size_t head_ = 0;  // consumer only
};

// Any number of consumer threads.
template <typename T>
class BoundedMpmcQueue : public BoundedQueueBase<T> {
 public:
  explicit BoundedMpmcQueue(size_t capacity) : BoundedQueueBase<T>(capacity) {}

  // Any thread. Null if empty (or the next producer has won its slot but
  // not yet stored).
  T* TryPop() {
    // relaxed: a ticket, as the producers' tail.
    size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      auto& slot = this->slots_[pos & this->mask_];
      // acquire: pairs with the producer's release of the item.
      const size_t seq = slot.seq.load(std::memory_order_acquire);
      const intptr_t diff =
          static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        // relaxed: the slot's seq, not the ticket, orders the item.
        if (head_.compare_exchange_weak(pos, pos + 1,
                                        std::memory_order_relaxed)) {
          return this->Consume(slot, pos);
        }
      } else if (diff < 0) {
        return nullptr;  // not yet filled for this lap: empty
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

 private:
  alignas(64) std::atomic<size_t> head_{0};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_MPSC_QUEUE_H_
