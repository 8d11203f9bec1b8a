// Per-thread decision counters of every limiter (LimiterStats::decisions).
// Counting a decision must not write a cache line that other threads
// write: on the lease path a shared counter would turn the decision's one
// locked instruction into two, and in every mode it would make threads
// that decide on different keys contend on it.
//
// So every thread has an array of counter cells, which only it writes (a
// relaxed load and a relaxed store: one writer needs no locked
// instruction), and each limiter owns the same range of kCountsPerLimiter
// cells in every thread's array, from Acquire to Release. stats() sums the
// limiter's range over every array. The inline part (the thread's array,
// CountDecision) is in tokenlease/internal/decision_counts.h, for the
// inline decision path of tokenlease/leased.h.
//
// Arrays are never freed: a thread that exits leaves its array (and its
// counts) to the next thread that starts counting, so there are as many
// arrays as threads ever counted at once. A range a limiter releases is
// zeroed in every array before another limiter acquires it. A thread's
// array grows (by the thread itself) when it first counts for a limiter
// whose range lies beyond it.
//
// One mutex guards the arrays' list, their replacement when they grow,
// the free ranges and the sums: it is taken on a thread's first decision
// for a limiter beyond its array, by stats(), and by limiters' creation
// and destruction; never on a counted decision otherwise.
#ifndef TOKENLEASE_SRC_CORE_DECISION_COUNTS_H_
#define TOKENLEASE_SRC_CORE_DECISION_COUNTS_H_

#include <cstdint>
#include <vector>

#include "tokenlease/internal/decision_counts.h"
#include "tokenlease/metrics.h"

namespace tokenlease::internal {

// A range of kCountsPerLimiter cells, zero in every thread's array, for a
// new limiter; returns the index of its first cell.
uint32_t AcquireDecisionCells();
// Gives the range starting at `base` back (zeroing it everywhere). No
// thread may count into it any more.
void ReleaseDecisionCells(uint32_t base);
// The sums of the range starting at `base` over every thread.
DecisionCounts SumDecisionCells(uint32_t base);

// How many threads counted into the range starting at `base` since the
// previous call with the same `seen` (which keeps each thread array's last
// sum; start it empty). Takes the mutex; for a periodic check (the leased
// mode's hot keys: several threads deciding on one limiter).
int CountingThreads(uint32_t base, std::vector<uint64_t>* seen);

// A limiter's range of cells, from construction to destruction.
class DecisionCounter {
 public:
  DecisionCounter() : base_(AcquireDecisionCells()) {}
  ~DecisionCounter() { ReleaseDecisionCells(base_); }
  DecisionCounter(const DecisionCounter&) = delete;
  DecisionCounter& operator=(const DecisionCounter&) = delete;

  // Counts `d` (any thread).
  void Count(const Decision& d) const { CountDecision(base_, d); }
  DecisionCounts Sum() const { return SumDecisionCells(base_); }
  uint32_t base() const { return base_; }

 private:
  const uint32_t base_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_DECISION_COUNTS_H_
