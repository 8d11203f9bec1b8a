// per_user_http: a per-user limit in an HTTP-style handler.
//
// Every user may make 10 requests per minute (a token bucket: a burst of 10,
// then one more every 6 s). The limit is shared by every instance of the
// service through Redis in leased mode, the production choice for per-user
// limits: each decision is made in-process from tokens leased in batches,
// with no I/O on the request path. A request over the limit is answered 429
// Too Many Requests with a Retry-After header taken from the decision.
//
// There is no real HTTP server: Handle() is called in rounds by a fake
// request loop. 100 users with Zipf-like demand: user i sends
// max(1, 30 / (i + 1)) requests, one per round, so users 0 and 1 (30 and 15
// requests) go over their limit and everyone else (10 requests or fewer)
// stays under it.
//
// Run by hand (with a redis-server listening there):
//   build/release/examples/per_user_http redis://127.0.0.1:6379
// ctest runs it against a private redis-server (examples/run_with_redis.sh).
// Exits 0 only if no user was served more than its limit and every user that
// stayed under it was served every time.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

struct Request {
  std::string user;
  std::string path;
};

struct Response {
  int status = 200;
  int64_t retry_after_s = 0;  // the Retry-After header; 0: none
  std::string body;
};

class Service {
 public:
  explicit Service(tokenlease::LeasedLimiter& limiter) : limiter_(limiter) {}

  Response Handle(const Request& request) {
    // By name: a per-user key is looked up in the limiter's registry (a
    // LeasedLimiter::Handle only pays off for a few hot keys).
    const tokenlease::Decision d =
        limiter_.TryAcquire(absl::StrCat("user:", request.user));
    if (!d.allowed) {
      // Retry-After is in whole seconds: round up, so that a client that
      // obeys it never comes back too early.
      const int64_t retry_s =
          absl::ToInt64Seconds(absl::Ceil(d.retry_after(), absl::Seconds(1)));
      return {429, retry_s < 1 ? 1 : retry_s, "Too Many Requests\n"};
    }
    return {200, 0, absl::StrCat("hello ", request.user, "\n")};
  }

 private:
  tokenlease::LeasedLimiter& limiter_;
};

int main(int argc, char** argv) {
  constexpr int kLimit = 10;
  tokenlease::LeasedLimiterOptions options;
  options.redis.url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  options.key_prefix = "http:";
  absl::StatusOr<std::unique_ptr<tokenlease::LeasedLimiter>> limiter =
      tokenlease::LeasedLimiter::Create(
          tokenlease::LimitSpec::TokenBucket(kLimit, absl::Minutes(1)),
          options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "cannot create the limiter: %s\n",
                 limiter.status().ToString().c_str());
    return 1;
  }
  Service service(**limiter);

  constexpr int kUsers = 100;
  constexpr int kRounds = 30;
  std::vector<int> sent(kUsers, 0), served(kUsers, 0);
  const absl::Time start = absl::Now();
  for (int round = 0; round < kRounds; ++round) {
    for (int user = 0; user < kUsers; ++user) {
      if (round >= std::max(1, kRounds / (user + 1))) continue;  // Zipf-like
      const Response r = service.Handle({absl::StrCat(user), "/api/v1/things"});
      ++sent[user];
      if (r.status == 200) {
        ++served[user];
      } else if (sent[user] - served[user] == 1) {  // its first 429
        std::printf("user %d, request %d: %d, Retry-After: %lld\n", user,
                    sent[user], r.status,
                    static_cast<long long>(r.retry_after_s));
      }
    }
    // A real service's requests arrive over time, and leases arrive between
    // them. This loop sends a round in microseconds, so it waits for the
    // reconciler to finish the round's lease requests and charges: the
    // counts are then the same on every run.
    if (absl::Status s = (*limiter)->Sync(absl::Seconds(5)); !s.ok()) {
      std::fprintf(stderr, "Sync: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  // A token comes back every 6 s: a run longer than that may serve more.
  const int64_t bound =
      kLimit + (absl::Now() - start) / (absl::Minutes(1) / kLimit);

  bool ok = true;
  int over = 0;
  for (int user = 0; user < kUsers; ++user) {
    const bool under = sent[user] <= kLimit;
    const bool right =
        served[user] <= bound && (!under || served[user] == sent[user]);
    if (!under || !right) {
      std::printf("%suser %d: sent %d, served %d\n",
                  right ? "" : "WRONG: ", user, sent[user], served[user]);
    }
    ok &= right;
    over += !under;
  }
  std::printf(
      "%d users over the limit held to %lld; the other %d served every time "
      "(%llu decisions, %llu Redis calls)\n%s\n",
      over, static_cast<long long>(bound), kUsers - over,
      static_cast<unsigned long long>((*limiter)->stats().decisions.Total()),
      static_cast<unsigned long long>((*limiter)->stats().redis_calls),
      ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
