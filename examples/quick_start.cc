// The README's quick start: one limit of 1,000 requests per second shared
// by every process that uses the same Redis, prefix and key.
#include <cstdio>

#include "tokenlease/tokenlease.h"

int main(int argc, char** argv) {
  tokenlease::LeasedLimiterOptions options;
  options.redis.url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  options.failure_mode = tokenlease::FailureMode::kFailLocal;  // Redis gone
  auto limiter = tokenlease::LeasedLimiter::Create(
      tokenlease::LimitSpec::TokenBucket(1000, absl::Seconds(1)), options);
  if (!limiter.ok()) return std::puts(limiter.status().ToString().c_str()), 1;
  // A hot key: resolve once, then each decision is a local atomic decrement.
  auto handle = (*limiter)->Resolve("api:checkout");
  if (!handle.ok()) return std::puts(handle.status().ToString().c_str()), 1;
  // This loop takes microseconds, less than the first lease's round trip:
  // until a lease arrives, a key decides from a local credit (a quarter of
  // the burst), charged to Redis afterwards.
  int admitted = 0;
  for (int i = 0; i < 5000; ++i) {
    admitted += (*limiter)->TryAcquire(*handle).allowed;
  }
  // By name, for per-user keys (no handle to keep):
  bool user = (*limiter)->TryAcquire("user:42").allowed;
  std::printf("admitted %d of 5000, user:42 %s\n", admitted,
              user ? "admitted" : "denied");
  return admitted > 0 && admitted <= 1100 && user ? 0 : 1;
}
