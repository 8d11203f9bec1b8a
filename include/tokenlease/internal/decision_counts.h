// NOT PART OF THE API: what the inline decision paths of tokenlease's public
// headers need. Names here may change without notice.
//
// Decision counting (src/core/decision_counts.h has the rest): each thread
// counts into an array of cells only it writes, and each limiter owns
// kCountsPerLimiter cells of every thread's array, its admitted decisions
// first, one cell per DecisionSource, then its denied ones.
#ifndef TOKENLEASE_INTERNAL_DECISION_COUNTS_H_
#define TOKENLEASE_INTERNAL_DECISION_COUNTS_H_

#include <atomic>
#include <cstdint>

#include "tokenlease/decision.h"
#include "tokenlease/metrics.h"

namespace tokenlease::internal {

inline constexpr uint32_t kCountsPerLimiter = 2 * kDecisionSources;

// The cell of a decision in the range starting at `base`.
constexpr uint32_t DecisionCell(uint32_t base, bool allowed,
                                DecisionSource source) {
  return base + (allowed ? 0 : kDecisionSources) +
         static_cast<uint32_t>(source);
}

// The calling thread's array (empty until its first count).
struct ThreadDecisionCounts {
  std::atomic<uint64_t>* cells = nullptr;
  uint32_t size = 0;
};
// Initial-exec: one fs-relative access, no __tls_get_addr call; constant
// initialization, so no guard either.
inline constinit thread_local ThreadDecisionCounts tls_decision_counts
    __attribute__((tls_model("initial-exec")));

// Counts into `cell` when the thread's array does not reach it yet (the
// thread's first decision for a limiter): takes a mutex once.
void CountDecisionSlow(uint32_t cell);

// Counts one decision into `cell` of the calling thread's array.
inline void CountDecision(uint32_t cell) {
  const ThreadDecisionCounts& t = tls_decision_counts;
  if (cell < t.size) [[likely]] {
    std::atomic<uint64_t>& c = t.cells[cell];
    // relaxed load and store, not fetch_add: only this thread writes its
    // array, so no locked instruction is needed; stats() sums the cells
    // with relaxed loads (a count publishes nothing).
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    CountDecisionSlow(cell);
  }
}

// Counts `d` in the range starting at `base`.
inline void CountDecision(uint32_t base, const Decision& d) {
  CountDecision(DecisionCell(base, d.allowed, d.source));
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_INTERNAL_DECISION_COUNTS_H_
