// The usage example of README.md, built against an installed tokenlease by
// the ctest `consumer_package`. Exits 0 only if exactly 5 of 6 requests are
// allowed.
#include <cstdio>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

int main() {
  // 5 requests per second per key; a full bucket allows a burst of 5.
  absl::StatusOr<std::unique_ptr<tokenlease::Limiter>> limiter =
      tokenlease::Limiter::Create(
          tokenlease::LimitSpec::TokenBucket(5, absl::Seconds(1)));
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 1;
  }

  int allowed = 0;
  for (int i = 0; i < 6; ++i) {
    tokenlease::Decision d = (*limiter)->TryAcquire("k");
    if (d.allowed) {
      ++allowed;
    } else {
      std::printf("denied, retry after %s\n",
                  absl::FormatDuration(d.retry_after()).c_str());
    }
  }
  std::printf("%d of 6 allowed\n", allowed);
  return allowed == 5 ? 0 : 1;
}
