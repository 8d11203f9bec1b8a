// A LimitSpec compiled for the hot path, one per spec generation. Never
// freed while its Limiter lives, so threads that loaded an older generation
// can finish with it (and GCRA cells of that generation can be converted).
#ifndef TOKENLEASE_SRC_CORE_COMPILED_SPEC_H_
#define TOKENLEASE_SRC_CORE_COMPILED_SPEC_H_

#include <cstdint>
#include <vector>

#include "local/compiled_band.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

struct CompiledSpec {
  LimitSpec source;
  uint32_t generation = 0;
  std::vector<CompiledBand> bands;
  // Band i's sliding log index in KeyEntry::logs, or -1.
  std::vector<int> log_index;
  int log_count = 0;
  // One band that is not a sliding log: decided with one CAS, no lock.
  bool lock_free = false;
  // Every band is a token bucket or GCRA (Reserve and FIFO Acquire apply).
  bool all_buckets = false;
  // The generation before this one, or null.
  const CompiledSpec* previous = nullptr;

  // The band `index` of generation `gen` (this one or an older one).
  const CompiledBand& BandOf(uint32_t gen, int index) const {
    const CompiledSpec* s = this;
    while (s->generation != gen && s->previous != nullptr) s = s->previous;
    return s->bands[index];
  }
};

CompiledSpec CompileSpec(const LimitSpec& spec, uint32_t generation,
                         const CompiledSpec* previous);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_COMPILED_SPEC_H_
