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
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/sharded_registry.h"
#include "base/spin_wait.h"
#include "core/compiled_spec.h"
#include "core/key_entry.h"
#include "local/band_eval.h"
#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/limiter.h"

namespace tokenlease::internal {

using KeyRegistry = ShardedRegistry<KeyEntry>;

class LimiterCore final : public KeyRegistry::Owner {
 public:
  LimiterCore(const LimitSpec& spec, const LimiterOptions& options);
  ~LimiterCore() override;

  int64_t Now() const {
    return system_clock_ ? absl::GetCurrentTimeNanos() : clock_->NowNanos();
  }

  // Decides for an entry the caller keeps alive (registry lock or pin).
  // req.max_wait_ns > 0 enables borrowing (Reserve, Acquire); the wait the
  // caller must then observe goes to *wait_ns if given.
  Decision Decide(KeyEntry* e, const BandRequest& req,
                  int64_t* wait_ns = nullptr) {
    if (req.cost < 0) [[unlikely]]
      return InvalidArgumentDecision();
    const CompiledSpec* s = spec();
    if (s->lock_free) [[likely]]
      return DecideLockFree(s, e, req, wait_ns);
    return DecideLocked(e, req, wait_ns);
  }
  // Decides for a pinned entry (a handle). A pinned entry can be marked
  // retired for an instant (the registry marks, then sees the pin and
  // revives it), so a decision that meets the mark waits for the revival.
  Decision DecidePinned(KeyEntry* e, const BandRequest& req,
                        int64_t* wait_ns = nullptr) {
    Decision d = Decide(e, req, wait_ns);
    if (d.retry_after_ns == kRetryLookup) [[unlikely]] {
      d = WaitForRevival(e, req, wait_ns);
    }
    return d;
  }
  static Decision InvalidArgumentDecision();
  // A decision on a retired key (never returned to callers): look it up
  // again.
  static constexpr int64_t kRetryLookup = -2;
  Decision DecideByName(std::string_view key, const BandRequest& req,
                        int64_t* wait_ns = nullptr);

  absl::Status UpdateSpec(const LimitSpec& spec);
  const CompiledSpec* spec() const {
    // Acquire: the compiled spec's contents were written before publishing.
    return spec_.load(std::memory_order_acquire);
  }

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
  [[gnu::noinline]] Decision WaitForRevival(KeyEntry* e, const BandRequest& req,
                                            int64_t* wait_ns);
  Decision DecideLockFree(const CompiledSpec* spec, KeyEntry* e,
                          const BandRequest& req, int64_t* wait_ns);
  Decision DecideLocked(KeyEntry* e, const BandRequest& req, int64_t* wait_ns);
  // Evaluates band i of `s` under the key's lock (converting an older GCRA
  // cell first).
  BandResult EvaluateLocked(KeyEntry* e, const CompiledSpec* s, int i,
                            const BandRequest& req);

  Clock* const clock_;
  const bool system_clock_;
  const size_t max_key_bytes_;  // LimiterOptions::max_key_bytes
  std::atomic<const CompiledSpec*> spec_;
  absl::Mutex update_mu_;
  std::vector<std::unique_ptr<CompiledSpec>> generations_
      ABSL_GUARDED_BY(update_mu_);
  KeyRegistry registry_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_LIMITER_CORE_H_
