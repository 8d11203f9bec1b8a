#include "shared/census_driver.h"

#include <utility>

namespace tokenlease::internal {

std::unique_ptr<CensusDriver> CensusDriver::Create(const SharedLimitOptions& o,
                                                   RedisClient* client,
                                                   LocalFallback* fallback) {
  if (o.instance_group.empty()) return nullptr;
  auto census = std::make_unique<InstanceCensus>(
      client, InstancesKey(o.key_prefix, o.instance_group), RandomInstanceId(),
      o.announce_ttl, o.fallback_instances);
  return std::unique_ptr<CensusDriver>(new CensusDriver(
      std::move(census), absl::ToInt64Nanoseconds(o.announce_ttl) / 30,
      fallback));
}

CensusDriver::~CensusDriver() {
  std::lock_guard<std::mutex> lock(mu_);
  census_->Leave();
}

void CensusDriver::MaybeTick(int64_t now_ns) {
  if (now_ns < next_tick_ns_.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another caller is ticking it
  next_tick_ns_.store(now_ns + tick_every_ns_, std::memory_order_relaxed);
  census_->Tick(now_ns);
  if (fallback_ != nullptr) fallback_->SetInstances(census_->count());
}

void CensusDriver::Fill(SharedLimitStats* s) const {
  // Reads of atomics only: no need for the mutex.
  if (fallback_ == nullptr) s->instances = census_->count();
  s->announcements = census_->answered();
  s->announce_failures = census_->failed();
}

}  // namespace tokenlease::internal
