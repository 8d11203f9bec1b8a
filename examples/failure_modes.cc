// failure_modes: what a leased limit admits while Redis is away.
//
// The limit is 100 requests per hour per tenant, shared by 4 instances
// through Redis. Here Redis is unreachable from the start (a port on which
// nothing answers), so every decision is made by the limit's FailureMode:
//   fail_closed (the default): deny; nothing beyond what Redis granted;
//   fail_open: admit everything, the limit is off meanwhile;
//   fail_local: each instance enforces its share alone, the limit divided by
//     fallback_instances (100 / 4 = 25 per tenant here).
// docs/operations.md compares the modes and their bounds.
//
// Run by hand: build/release/examples/failure_modes [redis-url]
// With no URL it reserves a loopback port and never listens on it; a URL
// must be one where nothing answers. Exits 0 only if, for 3 tenants x 40
// requests, fail_closed admitted 0, fail_open 120 and fail_local exactly
// 3 x 25, and the limiter's own counters say the same.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

namespace {

// A loopback port bound but never listened on: connects to it are refused at
// once, as to a stopped Redis, and no other process can take it meanwhile.
// Returns the socket (kept open) and sets `url`; -1 on error.
int ReserveClosedPort(std::string* url) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // port 0: any free one
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("reserving a port");
    return -1;
  }
  *url = absl::StrCat("redis://127.0.0.1:", ntohs(addr.sin_port));
  return fd;
}

// Offers 40 requests for each of 3 tenants to a limit with `mode`; returns
// how many were admitted, or -1 on error.
int64_t Run(const std::string& url, tokenlease::FailureMode mode) {
  tokenlease::LeasedLimiterOptions options;
  options.redis.url = url;
  options.failure_mode = mode;
  options.fallback_instances = 4;  // the instances sharing the limit
  absl::StatusOr<std::unique_ptr<tokenlease::LeasedLimiter>> limiter =
      tokenlease::LeasedLimiter::Create(
          tokenlease::LimitSpec::TokenBucket(100, absl::Hours(1)), options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "cannot create the limiter: %s\n",
                 limiter.status().ToString().c_str());
    return -1;
  }
  // Until its first connect attempt ends, a connection is kDegraded and a
  // new key decides from its local credit as usual. The attempt fails at
  // once here; wait for kDown (bounded) so that the mode decides every key.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while ((*limiter)->connection().health() != tokenlease::RedisHealth::kDown) {
    if (absl::Now() > deadline) {
      std::fprintf(stderr,
                   "the connection to %s is not down: is a server "
                   "answering there?\n",
                   url.c_str());
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int64_t admitted = 0;
  tokenlease::Decision last;
  for (const char* tenant : {"tenant:a", "tenant:b", "tenant:c"}) {
    for (int i = 0; i < 40; ++i) {
      last = (*limiter)->TryAcquire(tenant);
      admitted += last.allowed;
    }
  }
  const tokenlease::SharedLimitStats s = (*limiter)->stats();
  std::printf("%-11s admitted %3lld of 120; the last decision: %s by %s",
              tokenlease::FailureModeName(mode),
              static_cast<long long>(admitted),
              last.allowed ? "admitted" : "denied",
              tokenlease::DecisionSourceName(last.source));
  if (!last.allowed) {
    std::printf(", retry after %s",
                absl::FormatDuration(
                    absl::Ceil(last.retry_after(), absl::Milliseconds(1)))
                    .c_str());
  }
  std::printf("\n");
  // The counters an operator alerts on (docs/metrics.md) agree.
  using tokenlease::DecisionSource;
  const uint64_t counted =
      mode == tokenlease::FailureMode::kFailOpen
          ? s.decisions.Admitted(DecisionSource::kFailOpen)
      : mode == tokenlease::FailureMode::kFailLocal
          ? s.decisions.Admitted(DecisionSource::kFallback)
          : 120 - s.decisions.Denied(DecisionSource::kFailClosed);
  return counted == static_cast<uint64_t>(admitted) ? admitted : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int reserved = -1;
  if (argc > 1) {
    url = argv[1];
  } else if ((reserved = ReserveClosedPort(&url)) < 0) {
    return 1;
  }
  std::printf("Redis at %s does not answer:\n", url.c_str());
  const int64_t closed = Run(url, tokenlease::FailureMode::kFailClosed);
  const int64_t open = Run(url, tokenlease::FailureMode::kFailOpen);
  const int64_t local = Run(url, tokenlease::FailureMode::kFailLocal);
  if (reserved >= 0) close(reserved);
  const bool ok = closed == 0 && open == 120 && local == 3 * 25;
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
