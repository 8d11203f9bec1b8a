// src/local: the local engine's building blocks, shared by every mode. The
// 16-byte state cell and its atomic access (atomic_cell.h), a band compiled
// into exact integer form (compiled_band.h, fast_div.h), the pure
// evaluation of each algorithm (this file and band_eval_inl.h), the sliding
// log (sliding_log.h), and the facts derived from a spec (spec_facts.h).
// No registry, no threads, no I/O; depends on the public spec and Abseil.
//
// Pure evaluation of one band: given a cell's value, the time and a cost,
// what would the decision be and what would the cell become. No side
// effects, so the lock-free loop can retry it and tests can replay it.
#ifndef TOKENLEASE_SRC_LOCAL_BAND_EVAL_H_
#define TOKENLEASE_SRC_LOCAL_BAND_EVAL_H_

#include <cstdint>

#include "local/atomic_cell.h"
#include "local/compiled_band.h"

namespace tokenlease::internal {

struct BandRequest {
  int64_t now_ns = 0;
  int64_t cost = 0;  // >= 0
  // Token bucket / GCRA: how long the caller accepts to wait for borrowed
  // tokens (already capped by the spec's max_borrow); 0 means no borrowing.
  int64_t max_wait_ns = 0;
  // Acquire (a queue) books up to max_wait_ns ahead even when the spec's
  // max_borrow is smaller.
  bool ignore_borrow_cap = false;
};

enum class BandOutcome : uint8_t {
  kAdmit,
  kDeny,
  // GCRA only: the cell was written under another spec generation.
  kCellOlderThanSpec,  // convert it (ConvertGcraCell) and evaluate again
  kSpecOlderThanCell,  // reload the spec and evaluate again
};

struct BandResult {
  BandOutcome outcome = BandOutcome::kDeny;
  bool write = false;  // `next` differs from the input and must be stored
  CellValue next;
  int64_t remaining = 0;
  // kDeny: time until the same request would fit, or kNever (-1).
  // kAdmit: the wait the caller must observe (borrowing), else 0.
  int64_t wait_ns = 0;
  int64_t reset_after_ns = 0;
};

// The value a new key's cell starts with (full bucket, empty window).
CellValue InitialCell(const CompiledBand& band, int64_t now_ns);

// Evaluates every algorithm except the sliding log (see sliding_log.h).
BandResult EvaluateBand(const CompiledBand& band, CellValue cell,
                        const BandRequest& req);

// True if the cell is equivalent to InitialCell at `now_ns` (so the key can
// be dropped without changing any future decision).
bool CellIsIdle(const CompiledBand& band, CellValue cell, int64_t now_ns);

// Re-expresses a GCRA cell written under `from` in the units of `to`,
// keeping the consumed tokens (rounded up: never mints).
CellValue ConvertGcraCell(const CompiledBand& from, const CompiledBand& to,
                          CellValue cell, int64_t now_ns);

// Re-expresses in the units of `to` a GCRA cell written under a generation
// whose band is no longer known (it left the Limiter's window of retained
// generations). Keeps the theoretical arrival time, rounded up to a whole
// ns when the cell carries a fraction of one: the key's bucket is full
// again at the same time, or 1 ns later, never earlier, and holds no more
// than a new key's. Unlike ConvertGcraCell this keeps the time debt rather
// than the consumed tokens: after a rate decrease the key owes fewer tokens
// than ConvertGcraCell would have charged (docs/design.md, "Spec
// generations"). A TAT before `now_ns` gives a full bucket (InitialCell).
CellValue ConvertGcraCellOfUnknownGeneration(const CompiledBand& to,
                                             CellValue cell, int64_t now_ns);

// The generation a GCRA cell was written under (the top 24 bits of b).
inline uint32_t GcraCellGeneration(CellValue cell) {
  return static_cast<uint32_t>(static_cast<uint64_t>(cell.b) >> 40);
}

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_BAND_EVAL_H_
