#include "shared/local_fallback.h"

#include <utility>

#include "base/epoch.h"
#include "shared/local_share.h"

namespace tokenlease::internal {
namespace {

std::unique_ptr<Limiter> NewEngine(const LimitSpec& spec,
                                   const LimiterOptions& options,
                                   int32_t instances) {
  absl::StatusOr<std::unique_ptr<Limiter>> l =
      Limiter::Create(ShareOfLimit(spec, instances), options);
  // Create checked that every share of the spec is a valid local limit.
  return l.ok() ? *std::move(l) : nullptr;
}

LimiterOptions EngineOptions(LimiterOptions options) {
  options.shadow = false;  // the shared limit applies it to every source
  return options;
}

}  // namespace

LocalFallback::LocalFallback(const LimitSpec& spec,
                             const LimiterOptions& options, int32_t instances)
    : options_(EngineOptions(options)),
      current_(nullptr),
      instances_(instances),
      spec_(spec),
      owned_(NewEngine(spec, options_, instances)) {
  current_.store(owned_.get(), std::memory_order_release);
}

LocalFallback::~LocalFallback() = default;

Limiter* LocalFallback::Current() const {
  // acquire: pairs with the release store of a new engine.
  return current_.load(std::memory_order_acquire);
}

Decision LocalFallback::TryAcquire(std::string_view key, int64_t cost) {
  // The engine is not freed before this section ends (SetInstances).
  EpochGuard guard;
  Limiter* engine = Current();
  if (engine == nullptr) [[unlikely]] {  // Create checked it; defensive
    Decision d;
    d.retry_after_ns = kNever;
    return d;
  }
  return engine->TryAcquire(key, cost);
}

Reservation LocalFallback::Reserve(std::string_view key, int64_t cost,
                                   absl::Duration max_wait) {
  EpochGuard guard;  // as above
  Limiter* engine = Current();
  if (engine == nullptr) [[unlikely]] {
    Reservation r;
    r.decision.retry_after_ns = kNever;
    return r;
  }
  return engine->Reserve(key, cost, max_wait);
}

int64_t LocalFallback::keys() const {
  EpochGuard guard;  // as above
  Limiter* engine = Current();
  return engine == nullptr ? 0 : engine->key_count();
}

void LocalFallback::SetInstances(int32_t instances) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!retired_.empty()) {
    // A decision that loaded a replaced engine holds an epoch guard that
    // began before the replacement's epoch; after the grace period none
    // does.
    const uint64_t epoch = EpochTryAdvance();
    std::erase_if(retired_, [epoch](const auto& r) {
      return epoch >= r.first + kEpochGrace;
    });
  }
  if (instances == instances_.load(std::memory_order_relaxed)) return;
  std::unique_ptr<Limiter> next = NewEngine(spec_, options_, instances);
  if (next == nullptr) return;  // not a valid share: keep the current one
  // release: the engine is built before a decision can load it.
  current_.store(next.get(), std::memory_order_release);
  // relaxed: statistics (instances()).
  instances_.store(instances, std::memory_order_relaxed);
  retired_.emplace_back(EpochNow(), std::move(owned_));
  owned_ = std::move(next);
}

absl::Status LocalFallback::UpdateSpec(const LimitSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  spec_ = spec;
  if (owned_ == nullptr) return absl::OkStatus();
  return owned_->UpdateSpec(
      ShareOfLimit(spec, instances_.load(std::memory_order_relaxed)));
}

}  // namespace tokenlease::internal
