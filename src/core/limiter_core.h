// src/core: the local Limiter (tokenlease::local). Spec validation and
// compilation, spec generations (UpdateSpec), the keys (KeyEntry in a
// ShardedRegistry) and the decision paths: lock-free for single-band
// limits, under the key's spin lock for multi-band and sliding-log ones.
// Built on src/local (pure per-algorithm evaluation) and src/base.
//
// LimiterCore is the Limiter's implementation.
#ifndef TOKENLEASE_SRC_CORE_LIMITER_CORE_H_
#define TOKENLEASE_SRC_CORE_LIMITER_CORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "base/sharded_registry.h"
#include "base/spin_wait.h"
#include "core/compiled_spec.h"
#include "core/decision_counts.h"
#include "core/key_entry.h"
#include "local/band_eval.h"
#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/limiter.h"

namespace tokenlease::internal {

using KeyRegistry = ShardedRegistry<KeyEntry>;

// Shadow mode (LimiterOptions::shadow) applied to a denial `d`: admitted
// with source kShadow when `shadow`, except bad input. Every mode's.
// In place: the decision paths build one named Decision and return it
// (the caller's return slot). Copying a Decision just written with 8-byte
// stores reloads it with 16-byte loads, which stall on store forwarding:
// 12 to 17 ns measured on a decision by handle.
inline void ApplyShadow(Decision* d, bool shadow) {
  if (!shadow || d->allowed || d->source == DecisionSource::kInvalidArgument) {
    return;
  }
  d->allowed = true;
  d->source = DecisionSource::kShadow;
  d->retry_after_ns = 0;
}

// Sets `r`'s grant from its finished decision: shadow mode's admission is
// a grant without a wait; a denial waits for nothing.
inline void SettleReservation(Reservation* r) {
  r->granted = r->decision.allowed;
  if (!r->granted || r->decision.source == DecisionSource::kShadow) {
    r->wait_ns = 0;
  }
}

// Times a decision uses are clamped to [0, kMaxTimeNs] (1970 to 2116), so
// that no arithmetic on them can overflow: a TAT is at most such a time plus
// a debt of at most 2^62 ns, below 2^63.
inline constexpr int64_t kMaxTimeNs = (int64_t{1} << 62) - 1;
inline int64_t ClampTime(int64_t now_ns) {
  return now_ns < 0 ? 0 : (now_ns > kMaxTimeNs ? kMaxTimeNs : now_ns);
}

class LimiterCore final : public KeyRegistry::Owner {
 public:
  LimiterCore(const LimitSpec& spec, const LimiterOptions& options);
  // Starts from `first`, any generation (tests start near 2^23 or 2^24
  // without millions of UpdateSpec calls).
  LimiterCore(std::unique_ptr<CompiledSpec> first,
              const LimiterOptions& options);
  ~LimiterCore() override;

  // The clock's time, clamped (ClampTime) unless it is the system clock,
  // which reads within range from 1970 to 2116.
  int64_t Now() const {
    return system_clock_ ? absl::GetCurrentTimeNanos()
                         : ClampTime(clock_->NowNanos());
  }

  static Decision InvalidArgumentDecision();
  // InvalidArgumentDecision, finished and counted (a call returned as is).
  [[gnu::noinline]] Decision FinishedInvalidArgument() const;
  // A decision on a retired key (never returned to callers): look it up
  // again.
  static constexpr int64_t kRetryLookup = -2;
  Decision DecideByName(std::string_view key, const BandRequest& req,
                        int64_t* wait_ns = nullptr);
  // Limiter::TryAcquire by name: DecideByName and Finish in one call.
  // `now_ns` is clamped already.
  Decision TryAcquireByName(std::string_view key, int64_t cost, int64_t now_ns);
  // Limiter::TryAcquire(handle) for a live handle of this limiter,
  // finished and counted. A pinned entry can be marked retired for an
  // instant (the registry marks, then sees the pin and revives it), so a
  // decision that meets the mark waits for the revival. `now_ns` is
  // clamped already.
  Decision TryAcquirePinned(KeyEntry* e, int64_t cost, int64_t now_ns);
  // The same two for a Limiter whose band is GCRA (one_gcra_band()): the
  // decision in the caller's frame from one read and at most one
  // compare-and-swap, with the general path above for what that leaves
  // undecided. Separate functions, so that the other algorithms do not pay
  // this frame's pushes before theirs.
  Decision TryAcquireGcraByName(std::string_view key, int64_t cost,
                                int64_t now_ns);
  Decision TryAcquireGcraPinned(KeyEntry* e, int64_t cost, int64_t now_ns);
  // lock_free and the band is GCRA, for the Limiter's life (UpdateSpec
  // keeps the algorithm).
  bool one_gcra_band() const { return one_gcra_band_; }

  // Checks that `spec` (which ValidateSpec accepted) keeps the bands'
  // number, algorithms and refill styles, and publishes it as the next
  // generation. Keeps the newest kRetainedGenerations linked; one older
  // than that is freed by this call, a later one or the destructor, once
  // no thread's SpecHazard names it. Never waits for readers.
  absl::Status UpdateSpec(const LimitSpec& spec);
  // The current generation, announced in this thread's SpecHazard: it stays
  // alive until this thread's next spec() of a Limiter with the same way,
  // or its exit.
  const CompiledSpec* spec() const {
    // Acquire: the compiled spec's contents were written before publishing.
    const CompiledSpec* s = spec_.load(std::memory_order_acquire);
    const SpecHazard* h = spec_hazard_internal::tls;
    // Relaxed: only this thread writes its slot. Equal: announced (and
    // checked) by an earlier call, so not freed since.
    if (h != nullptr && h->current[hazard_way_].load(
                            std::memory_order_relaxed) == s) [[likely]] {
      return s;
    }
    return AnnounceSpec();
  }
  // Converts band `i`'s GCRA cell `v`, written under a generation older than
  // `s` (this thread's current one): exactly while that generation is
  // linked, else by its TAT (ConvertGcraCellOfUnknownGeneration).
  CellValue ConvertOlderCell(const CompiledSpec* s, int i, CellValue v,
                             int64_t now_ns) const;
  // A copy of the current spec (Limiter::spec()).
  LimitSpec CurrentSpec() const;
  // Makes `*d` what a caller gets, in place (see ApplyShadow): shadow mode
  // applied (LimiterOptions::shadow), counted (LimiterStats::decisions).
  void Finish(Decision* d) const {
    if (!d->allowed) [[unlikely]] {
      ApplyShadow(d, shadow_);
    }
    counter_.Count(*d);
  }
  LimiterStats Stats() const {
    LimiterStats s;
    s.mode = LimiterMode::kLocal;
    s.decisions = counter_.Sum();
    s.keys = static_cast<uint64_t>(registry_.size());
    return s;
  }
  // A fact no UpdateSpec changes (it keeps the bands' algorithms).
  bool all_buckets() const { return all_buckets_; }

  KeyRegistry& registry() { return registry_; }
  // OK, or InvalidArgument if `key` is longer than max_key_bytes.
  absl::Status CheckKey(std::string_view key) const;
  Clock* clock() const { return clock_; }

  // KeyRegistry::Owner. A key is retired when its state is equivalent to a
  // new key's (bucket full, window over, log empty), so dropping it changes
  // no decision: its cell is replaced by kDeadCell with a compare-and-swap
  // (or, for locked keys, `dead` is set under the key's lock), so a
  // decision racing with the retirement fails its own compare-and-swap,
  // sees the mark and looks the key up again (kRetryLookup).
  KeyEntry* NewEntry(std::string_view name, int64_t now_ns) override;
  void DeleteEntry(KeyEntry* e) override { KeyEntry::Destroy(e); }
  bool TryRetire(KeyEntry* e, int64_t now_ns) override;
  void Revive(KeyEntry* e) override;
  // True if `e` was retired (after a pin: see ShardedRegistry).
  bool IsRetired(KeyEntry* e) const;

 private:
  // Decides for an entry the caller keeps alive (registry lookup or pin).
  Decision Decide(KeyEntry* e, const BandRequest& req,
                  int64_t* wait_ns = nullptr) {
    if (req.cost < 0) [[unlikely]]
      return InvalidArgumentDecision();
    const CompiledSpec* s = spec();
    if (s->lock_free) [[likely]]
      return DecideLockFree(s, e, req, wait_ns);
    return DecideLocked(e, req, wait_ns);
  }
  Decision DecideByNameInline(std::string_view key, const BandRequest& req,
                              int64_t* wait_ns);
  // DecideByName's steps: the decision for what the lookup found, and the
  // lookups after the key was retired under it.
  Decision DecideFound(KeyEntry* e, const BandRequest& req, int64_t* wait_ns);
  [[gnu::noinline]] Decision RetryByName(std::string_view key,
                                         const BandRequest& req,
                                         int64_t* wait_ns);
  [[gnu::noinline]] Decision WaitForRevival(KeyEntry* e, const BandRequest& req,
                                            int64_t* wait_ns);
  Decision DecideLockFree(const CompiledSpec* spec, KeyEntry* e,
                          const BandRequest& req, int64_t* wait_ns);
  Decision DecideLocked(KeyEntry* e, const BandRequest& req, int64_t* wait_ns);
  // Evaluates band i of `s` under the key's lock (converting an older GCRA
  // cell first).
  BandResult EvaluateLocked(KeyEntry* e, const CompiledSpec* s, int i,
                            const BandRequest& req);
  // spec()'s slow path: announces the current generation in this thread's
  // slot and checks it is still current.
  [[gnu::noinline]] const CompiledSpec* AnnounceSpec() const;
  // Generation `gen`'s band `i`, found from `s` (this thread's current
  // generation) and announced in its slot's `walking`, or null if `gen` is
  // no longer linked.
  const CompiledBand* FindOlderBand(const CompiledSpec* s, uint32_t gen,
                                    int i) const;
  // Moves to `out` the retired generations, and those of destroyed Limiters
  // in the graveyard, that no thread's slot names.
  void FreeUnused(std::vector<std::unique_ptr<CompiledSpec>>& out);

  Clock* const clock_;
  const bool system_clock_;
  const size_t max_key_bytes_;  // LimiterOptions::max_key_bytes
  const bool shadow_;           // LimiterOptions::shadow
  const bool lock_free_;        // as every generation's lock_free
  const bool all_buckets_;      // as every generation's all_buckets
  const bool one_gcra_band_;    // one_gcra_band()
  // The first band is a stepwise token bucket (IsDeadCell; UpdateSpec
  // cannot change a band's algorithm or refill).
  const bool stepwise_cells_;
  // The current generation. Loads: acquire (spec()) or seq_cst
  // (AnnounceSpec); stores: seq_cst (UpdateSpec), see AnnounceSpec.
  std::atomic<const CompiledSpec*> spec_;
  const int hazard_way_;  // this Limiter's way in every SpecHazard
  // The oldest generation still linked (live_.front()'s). seq_cst store
  // (UpdateSpec) and load (FindOlderBand): a store-load pair with the
  // slots' `walking`.
  std::atomic<uint32_t> oldest_linked_{0};
  // Guards the fields below up to registry_. A std::mutex (pthread), which
  // ThreadSanitizer sees, as everywhere else in src/.
  mutable std::mutex update_mu_;
  // The linked window, oldest first (live_.back() is spec_'s generation);
  // at most kRetainedGenerations.
  std::deque<std::unique_ptr<CompiledSpec>> live_;
  // Unlinked generations some thread's slot still named at the last scan.
  std::vector<std::unique_ptr<CompiledSpec>> retired_;
  KeyRegistry registry_;
  DecisionCounter counter_;  // LimiterStats::decisions
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_LIMITER_CORE_H_
