// Per-thread slots on a grow-only intrusive list: a thread claims a free
// slot (one whose thread exited) or adds a new one, and gives it back when
// it exits. Slots are never freed, so a scan of the list never meets freed
// memory. Used by the registry's epochs (epoch.h) and the spec hazards
// (core/compiled_spec.h).
#ifndef TOKENLEASE_SRC_BASE_THREAD_SLOTS_H_
#define TOKENLEASE_SRC_BASE_THREAD_SLOTS_H_

#include <atomic>

namespace tokenlease::internal {

// Returns a slot of the list at `head` now owned by the calling thread:
// the first free one (its `in_use` set), or a new one pushed at the head.
// `Slot` has `std::atomic<bool> in_use` and `Slot* next` (immutable once
// pushed). `head_order` loads the head for the scan (at least acquire: a
// pushed slot's `next` is visible); `push_order` is the push's success
// order (at least release: publishes the new slot's fields). The owner
// gives the slot back with a release store of false to `in_use`.
template <typename Slot>
Slot* ClaimOrAddSlot(std::atomic<Slot*>& head, std::memory_order head_order,
                     std::memory_order push_order) {
  for (Slot* s = head.load(head_order); s != nullptr; s = s->next) {
    bool free = false;
    // Relaxed pre-check: skips slots in use without a locked instruction.
    // acq_rel CAS: claims the slot against other claiming threads and sees
    // its last owner's writes (their release store of in_use).
    if (!s->in_use.load(std::memory_order_relaxed) &&
        s->in_use.compare_exchange_strong(free, true,
                                          std::memory_order_acq_rel)) {
      return s;
    }
  }
  Slot* slot = new Slot;
  // Relaxed: published with the slot by the push below.
  slot->in_use.store(true, std::memory_order_relaxed);
  // Relaxed: the CAS below retries with what it finds.
  Slot* first = head.load(std::memory_order_relaxed);
  do {
    slot->next = first;
  } while (!head.compare_exchange_weak(first, slot, push_order,
                                       std::memory_order_relaxed));
  return slot;
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_BASE_THREAD_SLOTS_H_
