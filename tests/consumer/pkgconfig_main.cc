// Built by the ctest `consumer_package` with only
//   c++ -std=c++20 pkgconfig_main.cc $(pkg-config --cflags --libs tokenlease)
// against an installed tokenlease. Uses a ManualClock, so the result does not
// depend on timing: 5 of 6 allowed, then one more after 200 ms of refill.
#include <cstdio>
#include <memory>

#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

int main() {
  tokenlease::ManualClock clock;
  tokenlease::LimiterOptions options;
  options.clock = &clock;
  auto limiter = tokenlease::Limiter::Create(
      tokenlease::LimitSpec::TokenBucket(5, absl::Seconds(1)), options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 1;
  }
  int allowed = 0;
  for (int i = 0; i < 6; ++i) {
    if ((*limiter)->TryAcquire("k").allowed) ++allowed;
  }
  clock.Advance(absl::Milliseconds(200));
  const bool refilled = (*limiter)->TryAcquire("k").allowed;
  std::printf("%s: %d of 6 allowed, refilled after 200ms: %s\n",
              tokenlease::DescribeSpec((*limiter)->spec()).c_str(), allowed,
              refilled ? "yes" : "no");
  return allowed == 5 && refilled ? 0 : 1;
}
