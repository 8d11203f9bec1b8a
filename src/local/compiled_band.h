// A band's parameters in the integer forms the hot path needs, computed once
// per spec (generation) so that evaluation needs no validation and no
// divide instruction.
#ifndef TOKENLEASE_SRC_LOCAL_COMPILED_BAND_H_
#define TOKENLEASE_SRC_LOCAL_COMPILED_BAND_H_

#include <cstdint>

#include "local/fast_div.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// Largest generation a GCRA cell can carry (its tag has 24 bits).
inline constexpr uint32_t kMaxGeneration = (1u << 24) - 1;

// Which state layout (and evaluation function) a band uses.
enum class CellKind : uint8_t {
  kGcra,      // GCRA, and token bucket with smooth refill
  kStepwise,  // token bucket with stepwise refill
  kFixedWindow,
  kSlidingCounter,
  kSlidingLog,  // not a cell: a SlidingLog under the key's lock
};

struct CompiledBand {
  Algorithm algorithm = Algorithm::kTokenBucket;
  CellKind cell_kind = CellKind::kGcra;
  Refill refill = Refill::kSmooth;
  WindowAnchor anchor = WindowAnchor::kAligned;
  // Which spec generation this band belongs to (GCRA cells are tagged).
  uint32_t generation = 0;

  int64_t limit = 0;      // tokens per period
  int64_t period_ns = 0;  // > 0
  int64_t burst = 0;      // capacity (token bucket, GCRA); limit otherwise
  FastDivisor period_div;
  FastDivisor limit_div;

  // Smooth token bucket / GCRA: the emission interval period/limit reduced
  // to lowest terms p/l ns. Time offsets are kept in units of 1/l ns, so a
  // token costs exactly p units and nothing is ever rounded.
  int64_t emission_num = 1;       // p
  int64_t emission_den = 1;       // l (<= 2^40)
  FastDivisor emission_num_div;   // divides by p
  FastDivisor emission_den_div;   // divides by l
  int64_t tolerance = 0;          // burst * p, in units of 1/l ns (< 2^62)
  int64_t max_borrow_scaled = 0;  // spec.max_borrow in units of 1/l ns

  // Stepwise token bucket: most debt (tokens below zero) a Reserve may take.
  int64_t max_borrow_ns = 0;

  // Aligned windows and log granules start at offset + k * period
  // (offset normalised into [0, period)).
  int64_t window_offset_ns = 0;
  // Sliding log.
  int64_t granule_ns = 0;  // 0: exact times
  int64_t granule_offset_ns = 0;
  FastDivisor granule_div;
  int32_t max_log_entries = 256;
  // Exact times need one entry per grant; when the limit allows more grants
  // per period than max_log_entries, grants are recorded at the end of their
  // quantum of ceil(period / max_log_entries) instead (0: exact).
  int64_t log_quantum_ns = 0;
  FastDivisor log_quantum_div;
};

// Builds the compiled form of `band` (which ValidateSpec accepted).
CompiledBand CompileBand(const Band& band, absl::Duration max_borrow,
                         uint32_t generation);

// Start of the aligned window of length `len` (offset `off` in [0, len))
// containing `now`, computed with `div` dividing by `len`.
int64_t AlignedStart(int64_t now, int64_t len, int64_t off,
                     const FastDivisor& div);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_COMPILED_BAND_H_
