// Bounded waits for tests: every wait on another thread or process ends by
// a deadline, and a test that times out fails instead of hanging.
#ifndef TOKENLEASE_TESTS_TESTING_WAIT_H_
#define TOKENLEASE_TESTS_TESTING_WAIT_H_

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
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

// Runs `fn` on a thread of its own and waits up to `bound` for it to
// return. A call that never returns (the hang a test is there to catch)
// cannot be joined or stopped, so the test binary ends here with `what` on
// stderr, and the test fails instead of hanging.
template <typename Fn>
void RunOrExit(Fn fn, const char* what, absl::Duration bound = kWaitBound) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  // seq_cst store and loads: everything `fn` wrote happens before the
  // caller sees `done`.
  std::thread([fn = std::move(fn), done]() mutable {
    fn();
    done->store(true);
  }).detach();
  if (!WaitUntil([&] { return done->load(); }, bound)) {
    std::fprintf(stderr, "%s: did not return within %s\n", what,
                 absl::FormatDuration(bound).c_str());
    std::_Exit(1);
  }
}

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_WAIT_H_
