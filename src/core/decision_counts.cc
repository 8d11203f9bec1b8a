#include "core/decision_counts.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace tokenlease::internal {
namespace {

// Cell arrays own whole aligned pairs of cache lines: two threads' arrays
// never share a line (nor a pair the CPU prefetches together), or every
// counted decision would write a line another core writes too.
constexpr size_t kCellAlign = 128;
constexpr uint32_t kCellsPerBlock = kCellAlign / sizeof(std::atomic<uint64_t>);
struct FreeCells {
  void operator()(std::atomic<uint64_t>* cells) const {
    ::operator delete[](cells, std::align_val_t{kCellAlign});
  }
};
using Cells = std::unique_ptr<std::atomic<uint64_t>[], FreeCells>;

// One thread's cells (or, after its thread exited, a free array kept for
// the next thread).
struct ThreadArray {
  Cells cells;
  uint32_t size = 0;
  bool in_use = false;
};

struct Registry {
  std::mutex mu;
  // Every array ever made (never freed: see the header). Guarded by mu, as
  // are their `cells` pointers and `in_use`.
  std::vector<ThreadArray*> arrays;
  std::vector<uint32_t> free_bases;
  uint32_t next_base = 0;  // cells handed out so far: [0, next_base)
  // Decisions counted by a thread after its array went back (a decision
  // made in another thread_local's destructor at thread exit): rare, so
  // counted here under mu. Indexed by cell.
  std::vector<uint64_t> orphans;
};

Registry& Reg() {
  // Never destroyed: threads may count, and exit, during static destruction.
  static Registry* const registry = new Registry;
  return *registry;
}

// Set once this thread's array went back at its exit.
thread_local bool tls_exited = false;

// Gives this thread's array back when the thread exits. Constructed on the
// thread's first slow-path count (which registers the destructor).
struct ThreadOwner {
  ThreadArray* array = nullptr;
  ~ThreadOwner() {
    if (array == nullptr) return;
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    array->in_use = false;
    tls_decision_counts = ThreadDecisionCounts{};
    tls_exited = true;
  }
};
thread_local ThreadOwner tls_owner;

// A new array of `size` cells holding the `old_size` first cells of `old`.
Cells CopyCells(const std::atomic<uint64_t>* old, uint32_t old_size,
                uint32_t size) {
  const size_t allocated =
      (size + kCellsPerBlock - 1) / kCellsPerBlock * kCellsPerBlock;
  void* block = ::operator new[](allocated * sizeof(std::atomic<uint64_t>),
                                 std::align_val_t{kCellAlign});
  Cells cells(static_cast<std::atomic<uint64_t>*>(block));
  for (size_t i = 0; i < allocated; ++i) {
    new (&cells[i]) std::atomic<uint64_t>(0);
  }
  for (uint32_t i = 0; i < size; ++i) {
    // relaxed: the new array is not shared yet (it is published under the
    // registry's mutex), and the old one is only written by this thread.
    cells[i].store(i < old_size ? old[i].load(std::memory_order_relaxed) : 0,
                   std::memory_order_relaxed);
  }
  return cells;
}

}  // namespace

void CountDecisionSlow(uint32_t cell) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  if (tls_exited) {
    if (r.orphans.size() <= cell) r.orphans.resize(cell + 1);
    ++r.orphans[cell];
    return;
  }
  ThreadOwner& owner = tls_owner;
  if (owner.array == nullptr) {
    // Take over an array a thread left, with its counts, or make one.
    for (ThreadArray* a : r.arrays) {
      if (!a->in_use) {
        owner.array = a;
        break;
      }
    }
    if (owner.array == nullptr) {
      owner.array = new ThreadArray;
      r.arrays.push_back(owner.array);
    }
    owner.array->in_use = true;
  }
  ThreadArray& a = *owner.array;
  if (cell >= a.size) {
    // Room for every range handed out (and twice the old size), so that
    // this thread's first decisions for the other limiters of the moment
    // do not grow it again.
    const uint32_t size =
        std::max({cell + 1, r.next_base, 2 * a.size, kCountsPerLimiter});
    a.cells = CopyCells(a.cells.get(), a.size, size);
    a.size = size;
  }
  tls_decision_counts = ThreadDecisionCounts{a.cells.get(), a.size};
  std::atomic<uint64_t>& c = a.cells[cell];
  // relaxed load and store: this thread is the array's only writer.
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

uint32_t AcquireDecisionCells() {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.free_bases.empty()) {
    const uint32_t base = r.free_bases.back();
    r.free_bases.pop_back();
    return base;
  }
  const uint32_t base = r.next_base;
  r.next_base += kCountsPerLimiter;
  return base;
}

void ReleaseDecisionCells(uint32_t base) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  for (ThreadArray* a : r.arrays) {
    for (uint32_t i = base; i < base + kCountsPerLimiter && i < a->size; ++i) {
      // relaxed: no thread counts into a released range (its limiter is
      // gone); the next limiter to acquire it does so under the mutex,
      // after these stores.
      a->cells[i].store(0, std::memory_order_relaxed);
    }
  }
  for (uint32_t i = base; i < base + kCountsPerLimiter && i < r.orphans.size();
       ++i) {
    r.orphans[i] = 0;
  }
  r.free_bases.push_back(base);
}

int CountingThreads(uint32_t base, std::vector<uint64_t>* seen) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  // Arrays are only ever appended: index i is the same array each call.
  if (seen->size() < r.arrays.size()) seen->resize(r.arrays.size(), 0);
  int threads = 0;
  for (size_t i = 0; i < r.arrays.size(); ++i) {
    const ThreadArray* a = r.arrays[i];
    uint64_t sum = 0;
    for (uint32_t k = 0; k < kCountsPerLimiter && base + k < a->size; ++k) {
      // relaxed: a count, as in SumDecisionCells.
      sum += a->cells[base + k].load(std::memory_order_relaxed);
    }
    if (sum != (*seen)[i]) ++threads;
    (*seen)[i] = sum;
  }
  return threads;
}

DecisionCounts SumDecisionCells(uint32_t base) {
  uint64_t sums[kCountsPerLimiter] = {};
  Registry& r = Reg();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const ThreadArray* a : r.arrays) {
      for (uint32_t k = 0; k < kCountsPerLimiter && base + k < a->size; ++k) {
        // relaxed: a count (each cell has one writer; a load sees a value
        // that writer stored, never a torn one).
        sums[k] += a->cells[base + k].load(std::memory_order_relaxed);
      }
    }
    for (uint32_t k = 0; k < kCountsPerLimiter && base + k < r.orphans.size();
         ++k) {
      sums[k] += r.orphans[base + k];
    }
  }
  DecisionCounts d;
  for (int s = 0; s < kDecisionSources; ++s) {
    d.admitted[s] = sums[DecisionCell(0, true, static_cast<DecisionSource>(s))];
    d.denied[s] = sums[DecisionCell(0, false, static_cast<DecisionSource>(s))];
  }
  return d;
}

}  // namespace tokenlease::internal
