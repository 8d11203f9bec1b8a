// The leased-mode example of README.md, built against an installed
// tokenlease by the ctest `consumer_package` (which only compiles it: it
// needs a Redis server). Usage: leased_example redis://127.0.0.1:6379
#include <cstdio>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

int main(int argc, char** argv) {
  tokenlease::LeasedLimiterOptions options;
  options.redis.url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  options.key_prefix = "api:";
  // 10,000 requests per second per API key, shared by every instance of the
  // service; each decision is local (no I/O on the request path).
  absl::StatusOr<std::unique_ptr<tokenlease::LeasedLimiter>> limiter =
      tokenlease::LeasedLimiter::Create(
          tokenlease::LimitSpec::TokenBucket(10000, absl::Seconds(1)), options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 1;
  }
  // Hot keys: resolve once, decide through the handle (a few nanoseconds).
  absl::StatusOr<tokenlease::LeasedLimiter::Handle> key =
      (*limiter)->Resolve("key:42");
  if (!key.ok()) return 1;
  int allowed = 0;
  for (int i = 0; i < 1000; ++i) {
    allowed += (*limiter)->TryAcquire(*key).allowed;
  }
  // A key without a lease decides at once from a local credit that is
  // charged to Redis afterwards (LeaseOptions::cold_key_policy can deny or
  // wait for the first lease instead).
  std::printf("%d of 1000 allowed\n", allowed);
  return 0;
}
