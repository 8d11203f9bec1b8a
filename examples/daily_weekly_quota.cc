// daily_weekly_quota: a two-band quota decided on Redis (direct mode).
//
// Each account may make 10 requests per calendar day and 50 per rolling 7
// days. One LimitSpec with two bands, checked and charged together on Redis
// in one atomic script call: a request is charged to both bands or to none.
//
// Redis times every decision with its own clock, so a week cannot be
// fast-forwarded: this example runs the same spec with a "day" of 200 ms
// (kDay), so that a week passes in 1.4 s. In production kDay is
// absl::Hours(24) (and window_offset shifts the days to your time zone, e.g.
// -absl::Hours(8) for UTC+8). Times are printed in days.
//
// alice spends her 10 every day: days 0 to 3 end on the daily quota; on day
// 4 her 50th request fills the week, and she is refused by the weekly quota
// (on day 5 too) until day 0 leaves the week, on day 7. bob makes 3 requests a
// day and is never refused: every account has its own quota.
//
// Run by hand: build/release/examples/daily_weekly_quota redis://127.0.0.1:6379
// Exits 0 only if every day admitted what is described above and each
// refusal's retry_after points to the end of the quota that refused it.
#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tokenlease/tokenlease.h"

namespace {

constexpr absl::Duration kDay = absl::Milliseconds(200);  // absl::Hours(24)

double Days(absl::Duration d) { return absl::FDivDuration(d, kDay); }

// Requests for `account` until one is refused (at most `max`); prints the
// refusal. Returns the number admitted, or -1 if Redis gave no decision
// (the failure mode decided: fail_closed, the default, denies).
int Spend(tokenlease::DirectLimiter& quota, const char* account, int max,
          absl::Duration* retry_after) {
  for (int admitted = 0; admitted < max; ++admitted) {
    const tokenlease::Decision d = quota.TryAcquire(account);
    if (d.source != tokenlease::DecisionSource::kDirect) {
      std::fprintf(stderr, "no decision from Redis for %s: %s %s\n", account,
                   d.allowed ? "admitted" : "denied",
                   tokenlease::DecisionSourceName(d.source));
      return -1;
    }
    if (!d.allowed) {
      *retry_after = d.retry_after();
      return admitted;
    }
  }
  return max;
}

}  // namespace

int main(int argc, char** argv) {
  tokenlease::Band daily;
  daily.algorithm = tokenlease::Algorithm::kFixedWindow;
  daily.limit = 10;
  daily.period = kDay;  // windows aligned on whole days since the epoch
  tokenlease::Band weekly;
  weekly.algorithm = tokenlease::Algorithm::kSlidingWindowLog;
  weekly.limit = 50;
  weekly.period = 7 * kDay;
  weekly.log_granularity = kDay;  // "the last 7 calendar days"
  tokenlease::LimitSpec spec;
  spec.bands = {daily, weekly};

  tokenlease::DirectLimiterOptions options;
  options.redis.url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  options.key_prefix = "quota:";
  absl::StatusOr<std::unique_ptr<tokenlease::DirectLimiter>> quota =
      tokenlease::DirectLimiter::Create(spec, options);
  if (!quota.ok()) {
    std::fprintf(stderr, "cannot create the quota: %s\n",
                 quota.status().ToString().c_str());
    return 1;
  }

  // Day 0 starts at the next day boundary. Each day's requests are sent a
  // tenth of a day after its start, far from either end of it.
  const absl::Time day0 =
      absl::UnixEpoch() + absl::Ceil(absl::Now() - absl::UnixEpoch(), kDay);
  bool ok = true;
  for (int day : {0, 1, 2, 3, 4, 5, 7}) {
    absl::SleepFor(day0 + day * kDay + kDay / 10 - absl::Now());
    absl::Duration retry = absl::ZeroDuration(), bob_retry;
    const int alice = Spend(**quota, "alice", 11, &retry);
    const int bob = Spend(**quota, "bob", 3, &bob_retry);
    if (alice < 0 || bob < 0) return 1;
    // The day alice may come back: the next one if only the daily band
    // refused, the day that frees a week's slot if the weekly one did (when
    // both refuse, retry_after is the later of the two).
    const long until = std::lround(Days(absl::Now() + retry - day0));
    std::printf(
        "day %d: alice %2d admitted, then refused until day %ld (retry after "
        "%.2f days: the %s quota); bob %d of 3\n",
        day, alice, until, Days(retry), until == day + 1 ? "daily" : "weekly",
        bob);
    // Days 0-4 admit 10 each: 50, the week's quota, so on days 4 and 5 alice
    // must wait for day 0 to leave the week, on day 7.
    const bool week_full = day == 4 || day == 5;
    ok &= alice == (day == 5 ? 0 : 10) && bob == 3 &&
          until == (week_full ? 7 : day + 1);
  }
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
