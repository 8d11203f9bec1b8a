// The registry's epochs (src/base/epoch.h): a thread keeps its slot for
// every critical section it runs, including those in its thread_local
// destructors, and gives it back when it has ended; nested sections.
#include "base/epoch.h"

#include <gtest/gtest.h>

#include <thread>

namespace tokenlease::internal {
namespace {

// Records, from a critical section in a thread_local destructor, whether
// the thread's slot was still its own (not given back to the free list,
// where another thread could claim it and share it).
struct SectionAtThreadExit {
  bool* slot_owned = nullptr;
  EpochSlot** slot = nullptr;
  ~SectionAtThreadExit() {
    if (slot_owned == nullptr) return;
    EpochGuard guard;
    *slot = epoch_internal::tls.slot;
    *slot_owned =
        *slot != nullptr && (*slot)->in_use.load(std::memory_order_relaxed);
  }
};
thread_local SectionAtThreadExit t_section_at_exit;

TEST(EpochTest, ASectionInAThreadExitDestructorKeepsTheSlotUntilItEnds) {
  bool slot_owned = false;
  EpochSlot* slot = nullptr;
  std::thread([&] {
    // Constructed before the thread's first section, so destroyed after
    // anything the first section sets up with thread_local storage.
    t_section_at_exit.slot_owned = &slot_owned;
    t_section_at_exit.slot = &slot;
    EpochGuard first;  // registers the slot
  }).join();
  EXPECT_TRUE(slot_owned);
  ASSERT_NE(slot, nullptr);
  // After the thread ended, the slot is free and empty: nothing pins an
  // epoch, and the next thread can claim it.
  EXPECT_FALSE(slot->in_use.load(std::memory_order_acquire));
  EXPECT_EQ(slot->epoch.load(std::memory_order_acquire), 0u);
}

// A section inside another does nothing: the outer one's announcement
// stays in the slot until the outer one ends, and holds the epoch back.
TEST(EpochTest, ANestedSectionLeavesTheOuterAnnouncementInPlace) {
  EpochSlot* slot = nullptr;
  uint64_t announced = 0;
  {
    EpochGuard outer;
    slot = epoch_internal::tls.slot;
    ASSERT_NE(slot, nullptr);
    announced = slot->epoch.load(std::memory_order_relaxed);
    ASSERT_NE(announced, 0u);
    {
      EpochGuard inner;
      EXPECT_EQ(slot->epoch.load(std::memory_order_relaxed), announced);
    }
    EXPECT_EQ(slot->epoch.load(std::memory_order_relaxed), announced);
    // Every advance needs each open section to have announced the current
    // epoch: the outer one lets it move once at most.
    for (int i = 0; i < 3; ++i) EpochTryAdvance();
    EXPECT_LE(EpochNow(), announced + 1);
  }
  EXPECT_EQ(slot->epoch.load(std::memory_order_relaxed), 0u);
  EpochTryAdvance();  // nothing holds it back now
  EXPECT_GE(EpochNow(), announced + 1);
}

}  // namespace
}  // namespace tokenlease::internal
