// The hot-path half of `tokenlease bench`: one thread, one 32-byte key,
// a limit far above what the run can take (every decision admitted, as in
// bench/hot_path_bench.cc's "admit" load), next to two baselines: the
// mutex-guarded map of support/mutex_baseline.h, what a service writes
// before reaching for a library, and a bare atomic fetch_sub, the floor of
// a leased decision (which is one relaxed fetch_sub on the key's balance).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/bench_parts.h"
#include "support/mutex_baseline.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kHuge = 1'000'000'000'000;  // tokens per second and burst
constexpr char kKey[] = "ratelimit:user:00000000000000042";  // 32 bytes
static_assert(sizeof(kKey) == 33);
// The leased case's balance before timing: 10 s of decisions at 1 ns.
constexpr int64_t kLeaseInHand = 10'000'000'000;
// Calibration: double the calls until one run takes this long.
constexpr auto kCalibrationRun = std::chrono::milliseconds(50);

LimitSpec HugeSpec() {
  return LimitSpec::TokenBucket(kHuge, absl::Seconds(1), kHuge);
}

struct HotCase {
  std::string name;
  // Makes n decisions; returns how many were admitted.
  std::function<int64_t(int64_t)> run;
  std::string note;  // not empty: the case could not run
  int64_t calls_per_rep = 0;
  std::vector<double> ns;  // per repetition
  int64_t calls = 0, admitted = 0;
};

// n calls of `decide` in a loop the compiler sees whole (one indirect call
// per run, none per decision).
template <typename F>
std::function<int64_t(int64_t)> Loop(F decide) {
  return [decide](int64_t n) mutable {
    int64_t admitted = 0;
    for (int64_t i = 0; i < n; ++i) admitted += decide() ? 1 : 0;
    return admitted;
  };
}

// Seconds one run of n calls takes.
double TimeRun(HotCase& c, int64_t n) {
  const Clock::time_point start = Clock::now();
  const int64_t admitted = c.run(n);
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  c.calls += n;
  c.admitted += admitted;
  return s;
}

// Warms the case up and sizes one repetition to about `target`.
void Calibrate(HotCase& c, absl::Duration target) {
  int64_t n = 1024;
  double s = TimeRun(c, n);
  while (s < std::chrono::duration<double>(kCalibrationRun).count() &&
         n < (int64_t{1} << 40)) {
    n *= 2;
    s = TimeRun(c, n);
  }
  const double per_call = s / static_cast<double>(n);
  c.calls_per_rep = std::max<int64_t>(
      1, static_cast<int64_t>(absl::ToDoubleSeconds(target) / per_call));
}

// Holds what the cases decide with, for the length of the measurement.
struct Fixtures {
  std::atomic<int64_t> balance{INT64_MAX};
  std::unique_ptr<Limiter> local;
  Limiter::Handle local_handle;
  std::unique_ptr<LeasedLimiter> leased;
  LeasedLimiter::Handle lease_handle;
  std::unique_ptr<tokenlease_bench::MutexTokenBucketLimiter> mutex;
  std::string key = kKey;
};

// A leased limiter whose key holds a lease of kLeaseInHand tokens before
// anything is timed (bench/lease_bench.cc's options), far more than a run
// takes, that does not expire within the run. "" or the reason it could
// not be made.
std::string MakeLeased(const std::string& url, const RedisTlsOptions& tls,
                       Fixtures* f, absl::FunctionRef<bool()> cancelled) {
  if (url.empty()) return "no Redis";
  LeasedLimiterOptions options;
  options.redis.url = url;
  options.redis.tls = tls;
  options.key_prefix =
      absl::StrCat("tokenlease-bench:", absl::GetCurrentTimeNanos(), ":");
  options.lease.lease_ttl = absl::Hours(1);
  options.lease.idle_evict = absl::Hours(3);
  options.lease.max_lease_fraction = 1.0;
  options.lease.remaining_share = 1.0;
  // The lease's own path is measured, not the local credit of a new key.
  options.lease.cold_key_policy = ColdKeyPolicy::kDeny;
  absl::StatusOr<std::unique_ptr<LeasedLimiter>> l =
      LeasedLimiter::Create(HugeSpec(), options);
  if (!l.ok()) return std::string(l.status().message());
  f->leased = *std::move(l);
  absl::StatusOr<LeasedLimiter::Handle> h = f->leased->Resolve(kKey);
  if (!h.ok()) return std::string(h.status().message());
  f->lease_handle = *std::move(h);
  // A key's lease starts at one token and doubles each time the key runs
  // dry (src/leased/lease_sizer.h): spend each lease at once, in one call,
  // until the balance covers any run. About 35 refills of a tick each.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (;;) {
    absl::StatusOr<LeaseKeyInfo> info = f->leased->Inspect(kKey);
    if (info.ok() && info->balance >= kLeaseInHand) break;
    if (absl::Now() > deadline || cancelled()) {
      return absl::StrCat("the lease did not reach ", kLeaseInHand,
                          " tokens within 10 s (balance ",
                          info.ok() ? info->balance : -1, ")");
    }
    f->leased->TryAcquire(f->lease_handle,
                          info.ok() && info->balance > 0 ? info->balance : 1);
    absl::SleepFor(absl::Microseconds(500));
  }
  return "";
}

}  // namespace

std::vector<HotResult> MeasureHotPath(const BenchOptions& options,
                                      const std::string& url,
                                      std::ostream& progress,
                                      absl::FunctionRef<bool()> cancelled) {
  Fixtures f;
  f.local = *Limiter::Create(HugeSpec());
  f.local_handle = *f.local->Resolve(kKey);
  f.mutex = std::make_unique<tokenlease_bench::MutexTokenBucketLimiter>(
      kHuge, absl::Seconds(1), kHuge);
  const std::string leased_note = MakeLeased(url, options.tls, &f, cancelled);

  const std::vector<std::string> names = HotCaseNames();
  std::vector<HotCase> cases(names.size());
  for (size_t i = 0; i < names.size(); ++i) cases[i].name = names[i];
  cases[0].run = Loop(
      [&f] { return f.balance.fetch_sub(1, std::memory_order_relaxed) > 0; });
  cases[1].run =
      Loop([&f] { return f.leased->TryAcquire(f.lease_handle).allowed; });
  cases[1].note = leased_note;
  cases[2].run =
      Loop([&f] { return f.local->TryAcquire(f.local_handle, 1).allowed; });
  cases[3].run = Loop([&f] { return f.local->TryAcquire(f.key, 1).allowed; });
  cases[4].run = Loop([&f] { return f.mutex->TryAcquire(f.key, 1); });

  for (HotCase& c : cases) {
    if (c.note.empty()) Calibrate(c, options.hot_time);
  }
  // The repetitions of all cases interleaved: a change in the machine's
  // load meets every case, so the ratios hold even when the times move.
  for (int rep = 0; rep < options.reps && !cancelled(); ++rep) {
    progress << "tokenlease bench: hot path, repetition " << rep + 1 << " of "
             << options.reps << "\n"
             << std::flush;
    for (HotCase& c : cases) {
      if (!c.note.empty()) continue;
      const double s = TimeRun(c, c.calls_per_rep);
      c.ns.push_back(s * 1e9 / static_cast<double>(c.calls_per_rep));
    }
  }
  std::vector<HotResult> results;
  for (HotCase& c : cases) {
    HotResult r;
    r.name = c.name;
    r.note = c.note;
    if (!c.ns.empty()) {
      r.median_ns = Median(c.ns);
      r.min_ns = *std::min_element(c.ns.begin(), c.ns.end());
      r.max_ns = *std::max_element(c.ns.begin(), c.ns.end());
      r.admitted = static_cast<double>(c.admitted) / c.calls;
      if (r.admitted < 1) {
        r.note = "ran dry: not every call was admitted";
      }
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace tokenlease::cli
