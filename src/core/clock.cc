#include "tokenlease/clock.h"

#include "absl/time/clock.h"

namespace tokenlease {

int64_t SystemClock::NowNanos() const { return absl::GetCurrentTimeNanos(); }

Clock* DefaultClock() {
  static SystemClock* const clock = new SystemClock();
  return clock;
}

ManualClock::ManualClock(absl::Time start)
    : now_ns_(absl::ToUnixNanos(start)) {}

// Relaxed: the clock's value is the only data it carries.
int64_t ManualClock::NowNanos() const {
  return now_ns_.load(std::memory_order_relaxed);
}
void ManualClock::Set(absl::Time t) {
  now_ns_.store(absl::ToUnixNanos(t), std::memory_order_relaxed);
}
void ManualClock::SetNanos(int64_t ns) {
  now_ns_.store(ns, std::memory_order_relaxed);
}
void ManualClock::Advance(absl::Duration d) {
  now_ns_.fetch_add(absl::ToInt64Nanoseconds(d), std::memory_order_relaxed);
}

}  // namespace tokenlease
