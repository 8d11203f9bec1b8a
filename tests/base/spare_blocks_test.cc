// The spare memory blocks (src/base/spare_blocks.h) and the multi-consumer
// queue under them (src/base/mpsc_queue.h): blocks taken from the stock,
// given back, refilled, and every item popped exactly once when several
// threads push and pop at once.
#include "base/spare_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "base/mpsc_queue.h"

namespace tokenlease::internal {
namespace {

TEST(SpareBlocksTest, AllocatesFromTheStockOnceRefilled) {
  SpareBlocks spares(200, 64, 8);
  EXPECT_EQ(spares.Refill(), 8u);
  EXPECT_EQ(spares.Refill(), 0u) << "already full";
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(spares.Allocate());
  EXPECT_EQ(spares.misses(), 0);
  for (void* b : blocks) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u) << "misaligned";
  }
  blocks.push_back(spares.Allocate());  // the stock is empty: operator new
  EXPECT_EQ(spares.misses(), 1);
  for (void* b : blocks) spares.Free(b);  // 8 back to the stock, 1 deleted
  EXPECT_EQ(spares.Refill(), 0u) << "freed blocks refilled the stock";
  for (int i = 0; i < 8; ++i) spares.Free(spares.Allocate());
  EXPECT_EQ(spares.misses(), 1);
}

TEST(SpareBlocksTest, ZeroCapacityAllocatesEveryBlock) {
  SpareBlocks spares(64, 64, 0);
  EXPECT_EQ(spares.Refill(), 0u);
  void* a = spares.Allocate();
  void* b = spares.Allocate();
  EXPECT_NE(a, b);
  EXPECT_EQ(spares.misses(), 2);
  spares.Free(a);
  spares.Free(b);
  spares.Free(nullptr);
}

// Two threads take and give back blocks while a third refills: every block
// a thread holds is its own (it writes a tag and reads it back), and
// nothing leaks or is freed twice (ASan, TSan).
TEST(SpareBlocksTest, ConcurrentAllocateFreeAndRefill) {
  SpareBlocks spares(128, 64, 16);
  std::atomic<bool> stop{false};
  std::thread refiller([&] {
    while (!stop.load(std::memory_order_relaxed)) spares.Refill();
  });
  std::vector<std::thread> users;
  std::atomic<int> clashes{0};
  for (int t = 0; t < 2; ++t) {
    users.emplace_back([&, t] {
      std::vector<uint64_t*> held;
      for (int i = 0; i < 20000; ++i) {
        auto* b = static_cast<uint64_t*>(spares.Allocate());
        b[0] = (uint64_t(t) << 32) | uint64_t(i);
        held.push_back(b);
        if (held.size() == 8) {
          for (uint64_t* h : held) {
            if ((h[0] >> 32) != uint64_t(t)) clashes.fetch_add(1);
            spares.Free(h);
          }
          held.clear();
        }
      }
      for (uint64_t* h : held) spares.Free(h);
    });
  }
  for (auto& u : users) u.join();
  stop.store(true);
  refiller.join();
  EXPECT_EQ(clashes.load(), 0) << "a block was handed to two threads";
}

TEST(BoundedMpmcQueueTest, LooksFullExactlyWhenAPushWouldFail) {
  BoundedMpmcQueue<int> q(4);
  int items[5] = {0, 1, 2, 3, 4};
  for (int lap = 0; lap < 3; ++lap) {  // across the slots' laps
    for (int i = 0; i < 4; ++i) {
      EXPECT_FALSE(q.LooksFull()) << "lap " << lap << ", " << i << " pushed";
      ASSERT_TRUE(q.TryPush(&items[i]));
    }
    EXPECT_TRUE(q.LooksFull()) << "lap " << lap;
    EXPECT_FALSE(q.TryPush(&items[4]));
    EXPECT_EQ(q.TryPop(), &items[0]);
    EXPECT_FALSE(q.LooksFull()) << "lap " << lap << ", one popped";
    for (int i = 1; i < 4; ++i) EXPECT_EQ(q.TryPop(), &items[i]);
  }
}

TEST(BoundedMpmcQueueTest, EveryItemIsPoppedExactlyOnce) {
  constexpr int kPerProducer = 50000;
  BoundedMpmcQueue<int> q(64);
  std::vector<int> items(2 * kPerProducer);
  std::atomic<int> popped{0};
  std::vector<std::vector<int*>> got(2);
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      // Bounded, as the consumers below.
      const auto give_up =
          std::chrono::steady_clock::now() + std::chrono::seconds(30);
      for (int i = 0; i < kPerProducer; ++i) {
        int* item = &items[p * kPerProducer + i];
        while (!q.TryPush(item) && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::yield();
        }
      }
    });
  }
  for (int c = 0; c < 2; ++c) {
    threads.emplace_back([&, c] {
      // Bounded: a healthy run takes well under a second.
      const auto give_up =
          std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (popped.load() < 2 * kPerProducer &&
             std::chrono::steady_clock::now() < give_up) {
        if (int* item = q.TryPop()) {
          got[c].push_back(item);
          popped.fetch_add(1);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<int*> seen;
  for (auto& g : got) {
    for (int* item : g) EXPECT_TRUE(seen.insert(item).second) << "twice";
  }
  EXPECT_EQ(seen.size(), items.size());
  EXPECT_EQ(q.TryPop(), nullptr);
}

}  // namespace
}  // namespace tokenlease::internal
