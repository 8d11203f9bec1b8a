// Clocks used by tokenlease. All times are nanoseconds since the Unix epoch
// (UTC), the scale of calendar-aligned windows. Decisions made on Redis
// (direct mode, leases) read Redis's own clock; a Clock here times what is
// decided in the process (docs/design.md, "The contract").
#ifndef TOKENLEASE_CLOCK_H_
#define TOKENLEASE_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace tokenlease {

// A source of wall-clock time. Implementations must be thread-safe. They need
// not be monotonic: every algorithm in tokenlease treats a clock that moves
// backwards as "no time has passed" and never mints tokens because of it.
class Clock {
 public:
  virtual ~Clock() = default;
  // Returns nanoseconds since the Unix epoch.
  virtual int64_t NowNanos() const = 0;
};

// The process's real-time clock (absl::GetCurrentTimeNanos). Thread-safe,
// allocation-free. Returned by DefaultClock().
class SystemClock final : public Clock {
 public:
  int64_t NowNanos() const override;
};

// Returns a process-wide SystemClock that lives forever.
Clock* DefaultClock();

// A clock that only moves when told to; for tests and simulations. All
// methods are thread-safe (one relaxed atomic; readers only need the value).
class ManualClock final : public Clock {
 public:
  // Starts at `start` (default 2026-01-01T00:00:00Z, a Thursday).
  explicit ManualClock(absl::Time start = absl::FromUnixSeconds(1767225600));
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  int64_t NowNanos() const override;
  absl::Time Now() const { return absl::FromUnixNanos(NowNanos()); }
  // Sets the time; may move backwards (to test clock steps).
  void Set(absl::Time t);
  void SetNanos(int64_t ns);
  // Moves the time by `d` (negative moves it back).
  void Advance(absl::Duration d);

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_CLOCK_H_
