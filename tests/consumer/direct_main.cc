// The direct-mode example of README.md, built against an installed
// tokenlease by the ctest `consumer_package` (which only compiles it: it
// needs a Redis server). Usage: direct_example redis://127.0.0.1:6379
#include <cstdio>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

int main(int argc, char** argv) {
  tokenlease::DirectLimiterOptions options;
  options.redis.url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  options.key_prefix = "sms:";
  // One SMS per calendar day (UTC+8), shared by every process that uses
  // the same prefix, key and spec.
  absl::StatusOr<std::unique_ptr<tokenlease::DirectLimiter>> limiter =
      tokenlease::DirectLimiter::Create(
          tokenlease::LimitSpec::FixedWindow(1, absl::Hours(24),
                                             /*window_offset=*/-absl::Hours(8)),
          options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 1;
  }
  // Blocks up to the deadline. Redis not answering in time is decided by
  // the failure mode: fail_closed (the default) denies, source kFailClosed.
  const tokenlease::Decision d =
      (*limiter)->TryAcquire("user:42", 1, absl::Milliseconds(200));
  if (d.source == tokenlease::DecisionSource::kFailClosed) {
    std::fprintf(stderr, "no decision from Redis; ask again in %s\n",
                 absl::FormatDuration(d.retry_after()).c_str());
    return 2;
  }
  if (d.allowed) {
    std::printf("send the SMS\n");
  } else {
    std::printf("already sent today; next in %s\n",
                absl::FormatDuration(d.retry_after()).c_str());
  }
  return 0;
}
