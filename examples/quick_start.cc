// The README's quick start: one limit of 1,000 requests per second shared
// by every process that uses the same Redis, key prefix and key.
#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

int main(int argc, char** argv) {
  const absl::Time start = absl::Now();
  tokenlease::LeasedLimiterOptions options;
  options.redis.url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  options.failure_mode = tokenlease::FailureMode::kFailLocal;  // Redis gone
  auto limiter = tokenlease::LeasedLimiter::Create(
      tokenlease::LimitSpec::TokenBucket(1000, absl::Seconds(1)), options);
  if (!limiter.ok()) return std::puts(limiter.status().ToString().c_str()), 1;
  // A hot key: resolve once, then each decision is a local atomic decrement.
  auto handle = (*limiter)->Resolve("api:checkout");
  if (!handle.ok()) return std::puts(handle.status().ToString().c_str()), 1;
  int admitted = 0;
  for (int i = 0; i < 5000; ++i) {
    admitted += (*limiter)->TryAcquire(*handle).allowed;
  }
  // By name, for per-user keys: a key without a lease decides at once.
  bool user = (*limiter)->TryAcquire("user:42").allowed;
  std::printf("api:checkout %d of 5000 admitted, user:42 %s\n", admitted,
              user ? "admitted" : "denied");
  // Never more than the burst, the local credit and what refilled since.
  const double most =
      1000 + 250 + 1000 * absl::ToDoubleSeconds(absl::Now() - start);
  return admitted > 0 && admitted <= most && user ? 0 : 1;
}
