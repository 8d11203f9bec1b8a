#include "core/local_fallback.h"

#include <utility>

#include "base/epoch.h"
#include "core/local_share.h"

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

}  // namespace

LocalFallback::LocalFallback(const LimitSpec& spec,
                             const LimiterOptions& options, int32_t instances)
    : spec_(spec),
      options_(options),
      current_(nullptr),
      instances_(instances),
      owned_(NewEngine(spec, options, instances)) {
  current_.store(owned_.get(), std::memory_order_release);
}

LocalFallback::~LocalFallback() = default;

Decision LocalFallback::TryAcquire(std::string_view key, int64_t cost,
                                   int64_t now_ns) {
  // The engine is not freed before this section ends (SetInstances).
  EpochGuard guard;
  Limiter* engine = current_.load(std::memory_order_acquire);
  if (engine == nullptr) [[unlikely]] {  // Create checked it; defensive
    Decision d;
    d.retry_after_ns = kNever;
    return d;
  }
  return engine->TryAcquire(key, cost, now_ns);
}

Decision LocalFallback::TryAcquire(std::string_view key, int64_t cost) {
  EpochGuard guard;  // as above
  Limiter* engine = current_.load(std::memory_order_acquire);
  if (engine == nullptr) [[unlikely]] {
    Decision d;
    d.retry_after_ns = kNever;
    return d;
  }
  return engine->TryAcquire(key, cost);
}

absl::StatusOr<Reservation> LocalFallback::Reserve(std::string_view key,
                                                   int64_t cost,
                                                   absl::Duration max_wait) {
  EpochGuard guard;  // as above
  Limiter* engine = current_.load(std::memory_order_acquire);
  if (engine == nullptr) [[unlikely]] {
    return absl::InternalError("no local engine (its spec was refused)");
  }
  return engine->Reserve(key, cost, max_wait);
}

void LocalFallback::SetInstances(int32_t instances) {
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
  instances_.store(instances, std::memory_order_relaxed);
  retired_.emplace_back(EpochNow(), std::move(owned_));
  owned_ = std::move(next);
}

}  // namespace tokenlease::internal
