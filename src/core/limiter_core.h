// The Limiter's implementation: spec generations, the key registry, and
// the decision paths (lock-free single band; locked multi-band and log).
#ifndef TOKENLEASE_SRC_CORE_LIMITER_CORE_H_
#define TOKENLEASE_SRC_CORE_LIMITER_CORE_H_

#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/compiled_spec.h"
#include "local/band_eval.h"
#include "registry/key_registry.h"
#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/limiter.h"

namespace tokenlease::internal {

class LimiterCore final : public EntryPolicy {
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
  static Decision InvalidArgumentDecision();
  Decision DecideByName(std::string_view key, const BandRequest& req,
                        int64_t* wait_ns = nullptr);

  absl::Status UpdateSpec(const LimitSpec& spec);
  const CompiledSpec* spec() const {
    // Acquire: the compiled spec's contents were written before publishing.
    return spec_.load(std::memory_order_acquire);
  }

  KeyRegistry& registry() { return registry_; }
  Clock* clock() const { return clock_; }

  // EntryPolicy
  KeyEntry* NewEntry(std::string_view name, int64_t now_ns) override;
  bool IsIdle(KeyEntry* e, int64_t now_ns) override;

 private:
  Decision DecideLockFree(const CompiledSpec* spec, KeyEntry* e,
                          const BandRequest& req, int64_t* wait_ns);
  Decision DecideLocked(KeyEntry* e, const BandRequest& req, int64_t* wait_ns);
  // Evaluates band i of `s` under the key's lock (converting an older GCRA
  // cell first).
  BandResult EvaluateLocked(KeyEntry* e, const CompiledSpec* s, int i,
                            const BandRequest& req);

  Clock* const clock_;
  const bool system_clock_;
  std::atomic<const CompiledSpec*> spec_;
  absl::Mutex update_mu_;
  std::vector<std::unique_ptr<CompiledSpec>> generations_
      ABSL_GUARDED_BY(update_mu_);
  KeyRegistry registry_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_LIMITER_CORE_H_
