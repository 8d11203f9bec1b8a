// Drives instance discovery (SharedLimitOptions::instance_group) for either
// Redis mode: the census (src/redis/instance_census.h) has one owner at a
// time, so a tick runs only in the caller that takes the driver's mutex
// when one is due (direct mode: whichever call finds it due; leased mode:
// the reconciler's thread, at its steps); the others go on. A tick hands
// the count to the fail_local share.
#ifndef TOKENLEASE_SRC_SHARED_CENSUS_DRIVER_H_
#define TOKENLEASE_SRC_SHARED_CENSUS_DRIVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "redis/instance_census.h"
#include "redis/redis_client.h"
#include "shared/local_fallback.h"
#include "tokenlease/shared_limit.h"

namespace tokenlease::internal {

class CensusDriver {
 public:
  // Null without an instance_group. `client` must outlive the driver;
  // `fallback` (may be null) too.
  static std::unique_ptr<CensusDriver> Create(const SharedLimitOptions& o,
                                              RedisClient* client,
                                              LocalFallback* fallback);
  // Withdraws this instance's announcement (best effort).
  ~CensusDriver();
  CensusDriver(const CensusDriver&) = delete;
  CensusDriver& operator=(const CensusDriver&) = delete;

  // Any thread: ticks the census if a tick is due at `now_ns` (any
  // monotonic clock: a manual one in tests) and no other caller is ticking
  // it, then gives the share the count. Often enough (every announce_ttl /
  // 30) that a reply is folded in soon after it came.
  void MaybeTick(int64_t now_ns);

  // Fills instances (when there is no share, whose own count Fill of the
  // FailurePolicy reports), announcements and announce_failures.
  void Fill(SharedLimitStats* s) const;

 private:
  CensusDriver(std::unique_ptr<InstanceCensus> census, int64_t tick_every_ns,
               LocalFallback* fallback)
      : census_(std::move(census)),
        tick_every_ns_(tick_every_ns),
        fallback_(fallback) {}

  std::mutex mu_;
  const std::unique_ptr<InstanceCensus> census_;  // ticked under mu_
  const int64_t tick_every_ns_;
  LocalFallback* const fallback_;
  // relaxed: a hint that spares callers the mutex; the mutex orders the
  // rest.
  std::atomic<int64_t> next_tick_ns_{INT64_MIN};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_SHARED_CENSUS_DRIVER_H_
