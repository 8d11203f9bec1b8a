// Bounded waits for tests: every wait on another thread or process ends by
// a deadline, and a test that times out fails instead of hanging.
#ifndef TOKENLEASE_TESTS_TESTING_WAIT_H_
#define TOKENLEASE_TESTS_TESTING_WAIT_H_

#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tokenlease::testing {

// How long a test waits for something that takes milliseconds when all is
// well (generous: sanitizers on 2 busy cores are 10-50x slower).
inline constexpr absl::Duration kWaitBound = absl::Seconds(20);

// Polls `done` every millisecond until it holds (true) or `bound` passes
// (false).
template <typename Pred>
bool WaitUntil(Pred done, absl::Duration bound = kWaitBound) {
  const absl::Time end = absl::Now() + bound;
  while (!done()) {
    if (absl::Now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_WAIT_H_
