// A LimitSpec compiled for the hot path, one per spec generation, and what
// keeps a generation alive while a thread uses it.
//
// A Limiter keeps the newest kRetainedGenerations generations linked by
// `previous` (newest first), so that a GCRA cell written under one of them
// is converted exactly (ConvertGcraCell). UpdateSpec unlinks the generation
// that falls out of that window and frees it, then or at a later update,
// once no thread announces it in its SpecHazard. A cell of a generation no
// longer linked is converted without its old units
// (ConvertGcraCellOfUnknownGeneration).
//
// Why hazard slots and not the registry's epochs (base/epoch.h): an epoch
// critical section costs every decision by handle two stores and a
// thread-local depth count, 1.8 to 2.5 ns of 17 to 20 (docs/benchmarks.md,
// "Measurements behind design choices"). A thread's slot instead keeps the
// generation it last decided with, one per Limiter in one of
// kSpecHazardWays ways, until it decides with another one, so a decision
// only compares the generation it loaded with its slot (a thread-local load
// and a load of a line only this thread writes); it stores only when the
// spec changed. The price: an idle thread keeps up to kSpecHazardWays
// retired generations alive until its next decisions or its exit.
#ifndef TOKENLEASE_SRC_CORE_COMPILED_SPEC_H_
#define TOKENLEASE_SRC_CORE_COMPILED_SPEC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "local/compiled_band.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// Generations a Limiter keeps linked (the current one included): a GCRA
// cell last written fewer than this many generations ago is converted
// exactly.
// Each costs a few hundred bytes.
inline constexpr int kRetainedGenerations = 16;

struct CompiledSpec {
  CompiledSpec() {
    // Relaxed: a count for tests and diagnostics; it orders nothing.
    live_count.fetch_add(1, std::memory_order_relaxed);
  }
  ~CompiledSpec() {
    // Relaxed: as above.
    live_count.fetch_sub(1, std::memory_order_relaxed);
  }
  CompiledSpec(const CompiledSpec&) = delete;
  CompiledSpec& operator=(const CompiledSpec&) = delete;

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
  // The generation before this one (generation - 1) while it is retained,
  // else null. Set before this generation is published; UpdateSpec sets it
  // to null when the older one leaves the window (and only then).
  std::atomic<const CompiledSpec*> previous{nullptr};

  // CompiledSpec objects alive in the process (tests check the bound).
  static inline std::atomic<int64_t> live_count{0};
};

// Compiles `spec` (which ValidateSpec accepted) as generation `generation`,
// linked to `previous` (or null).
std::unique_ptr<CompiledSpec> CompileSpec(const LimitSpec& spec,
                                          uint32_t generation,
                                          const CompiledSpec* previous);

// Limiters a thread can alternate between without announcing again: each
// Limiter takes one way of every thread's slot (round-robin, so up to this
// many Limiters never share one).
inline constexpr int kSpecHazardWays = 4;

// One per thread that ever read a compiled spec (never freed; reused after
// its thread exits). A generation named here is not freed. A thread uses
// one generation per way at a time: nothing that holds one loads another
// of a Limiter with the same way.
struct alignas(64) SpecHazard {
  // Per way, the generation this thread decides with, from its last
  // LimiterCore::spec() until its next one (of a Limiter with that way) or
  // its exit. Relaxed load by its thread, seq_cst exchange to announce,
  // seq_cst loads by UpdateSpec's scan, release store at thread exit.
  std::atomic<const CompiledSpec*> current[kSpecHazardWays] = {};
  // An older generation it is converting a cell from, while it does.
  // seq_cst exchange and scan loads, release store to clear (LimiterCore).
  std::atomic<const CompiledSpec*> walking{nullptr};
  // Claimed with an acq_rel CAS, given back with a release store: a new
  // owner sees the last owner's writes.
  std::atomic<bool> in_use{false};
  SpecHazard* next = nullptr;  // immutable once the slot is published
};

namespace spec_hazard_internal {
// The calling thread's slot, or null before its first spec() load.
// Initial-exec: one fs-relative access, no __tls_get_addr call.
inline thread_local SpecHazard* tls __attribute__((tls_model("initial-exec"))) =
    nullptr;
}  // namespace spec_hazard_internal

// The calling thread's slot, registering it on first use.
SpecHazard* ThisThreadSpecHazard();
// Every slot ever registered (newest first).
SpecHazard* FirstSpecHazard();

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_COMPILED_SPEC_H_
