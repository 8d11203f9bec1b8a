// Direct mode against the naive approach, side by side in one run.
//
// naive:  one synchronous hiredis connection shared by all callers under a
//         mutex, EVAL of the same acquire script, one request at a time
//         (what a service does when it calls a rate-limit script inline).
// sha:    the same with EVALSHA (a stronger baseline: the script body,
//         ~33 KB, is not sent on every call).
// direct: DirectLimiter::TryAcquire (blocking) from every caller; the
//         client thread pipelines whatever is pending into one write.
//
// Usage: direct_bench --url=redis://127.0.0.1:PORT [--callers=1,8,64]
//                     [--seconds=3]
// Prints, per caller count: throughput and p50/p99 latency of each mode and
// the ratio direct/naive. Start a private redis-server first
// (bench/run_direct.sh does).
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "redis/endpoint.h"
#include "redis/script_call.h"
#include "tokenlease/direct.h"
#include "tokenlease_lua/scripts.h"

namespace {

using Clock = std::chrono::steady_clock;

struct RunResult {
  double per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
  int64_t errors = 0;
};

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

// Runs `call` from `callers` threads for `seconds`; each call's latency is
// recorded. `call` returns false on error.
template <typename Call>
RunResult Drive(int callers, double seconds, Call call) {
  std::vector<std::vector<double>> lat(callers);
  std::atomic<int64_t> errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      lat[t].reserve(1 << 16);
      while (!stop.load(std::memory_order_relaxed)) {
        const auto a = Clock::now();
        if (!call(t)) errors.fetch_add(1, std::memory_order_relaxed);
        lat[t].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - a)
                .count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& th : threads) th.join();
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  RunResult r;
  r.per_second = all.size() / elapsed;
  r.p50_us = Percentile(all, 0.50);
  r.p99_us = Percentile(all, 0.99);
  r.errors = errors.load();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "redis://127.0.0.1:6379";
  std::vector<int> callers = {1, 8, 64};
  double seconds = 3;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (absl::ConsumePrefix(&a, "--url=")) {
      url = std::string(a);
    } else if (absl::ConsumePrefix(&a, "--callers=")) {
      callers.clear();
      for (absl::string_view c : absl::StrSplit(a, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(c, &n) || n < 1 || n > 1024) {
          std::fprintf(stderr, "bad --callers entry '%s'\n",
                       std::string(c).c_str());
          return 2;
        }
        callers.push_back(n);
      }
    } else if (absl::ConsumePrefix(&a, "--seconds=")) {
      if (!absl::SimpleAtod(a, &seconds) || seconds <= 0 || seconds > 600) {
        std::fprintf(stderr, "bad --seconds\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: direct_bench --url=redis://HOST:PORT "
                   "[--callers=1,8,64] [--seconds=3]\n");
      return 2;
    }
  }
  auto ep = tokenlease::internal::ParseRedisUrl(url);
  if (!ep.ok() || !ep->socket_path.empty()) {
    std::fprintf(stderr, "need a redis://host:port url: %s\n",
                 ep.status().ToString().c_str());
    return 2;
  }

  // A limit that admits everything: both modes run the same script work.
  const tokenlease::LimitSpec spec =
      tokenlease::LimitSpec::TokenBucket(1'000'000'000, absl::Seconds(1));
  tokenlease::DirectLimiterOptions options;
  options.redis.url = url;
  options.redis.command_timeout = absl::Seconds(5);
  options.key_prefix = "bench:direct:";
  auto limiter = tokenlease::DirectLimiter::Create(spec, options);
  if (!limiter.ok()) {
    std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
    return 1;
  }

  redisContext* sync = redisConnect(ep->host.c_str(), ep->port);
  if (sync == nullptr || sync->err) {
    std::fprintf(stderr, "connect failed\n");
    return 1;
  }
  std::mutex sync_mu;
  tokenlease::internal::AcquireArgs acquire;
  const std::vector<std::string> naive_args =
      tokenlease::internal::AcquireArguments(spec, "bench:naive:", "hot",
                                             acquire);
  std::vector<const char*> naive_argv = {
      "EVAL", tokenlease::internal::lua::kAcquireScript.data()};
  std::vector<size_t> naive_lens = {
      4, tokenlease::internal::lua::kAcquireScript.size()};
  std::vector<const char*> sha_argv = {
      "EVALSHA", tokenlease::internal::lua::kAcquireSha1.data()};
  std::vector<size_t> sha_lens = {
      7, tokenlease::internal::lua::kAcquireSha1.size()};
  for (const auto& s : naive_args) {
    naive_argv.push_back(s.data());
    naive_lens.push_back(s.size());
    sha_argv.push_back(s.data());
    sha_lens.push_back(s.size());
  }

  std::printf("# direct_bench %s, %.1f s per run\n", url.c_str(), seconds);
  std::printf("%-8s %-7s %12s %10s %10s %7s\n", "callers", "mode",
              "decisions/s", "p50_us", "p99_us", "errors");
  for (int n : callers) {
    RunResult naive = Drive(n, seconds, [&](int) {
      std::lock_guard<std::mutex> lock(sync_mu);
      auto* r = static_cast<redisReply*>(
          redisCommandArgv(sync, static_cast<int>(naive_argv.size()),
                           naive_argv.data(), naive_lens.data()));
      const bool ok = r != nullptr && r->type == REDIS_REPLY_ARRAY;
      if (r) freeReplyObject(r);
      return ok;
    });
    RunResult sha = Drive(n, seconds, [&](int) {
      std::lock_guard<std::mutex> lock(sync_mu);
      auto* r = static_cast<redisReply*>(
          redisCommandArgv(sync, static_cast<int>(sha_argv.size()),
                           sha_argv.data(), sha_lens.data()));
      const bool ok = r != nullptr && r->type == REDIS_REPLY_ARRAY;
      if (r) freeReplyObject(r);
      return ok;
    });
    RunResult direct = Drive(
        n, seconds, [&](int) { return (*limiter)->TryAcquire("hot").ok(); });
    std::printf("%-8d %-7s %12.0f %10.1f %10.1f %7lld\n", n, "naive",
                naive.per_second, naive.p50_us, naive.p99_us,
                static_cast<long long>(naive.errors));
    std::printf("%-8d %-7s %12.0f %10.1f %10.1f %7lld\n", n, "sha",
                sha.per_second, sha.p50_us, sha.p99_us,
                static_cast<long long>(sha.errors));
    std::printf("%-8d %-7s %12.0f %10.1f %10.1f %7lld\n", n, "direct",
                direct.per_second, direct.p50_us, direct.p99_us,
                static_cast<long long>(direct.errors));
    std::printf(
        "%-8d ratio   throughput direct/naive = %.2fx, direct/sha = %.2fx; "
        "p50 naive/direct = %.2fx, sha/direct = %.2fx\n",
        n, direct.per_second / naive.per_second,
        direct.per_second / sha.per_second,
        naive.p50_us / std::max(direct.p50_us, 1e-9),
        sha.p50_us / std::max(direct.p50_us, 1e-9));
    std::fflush(stdout);
  }
  const tokenlease::RedisStats stats = (*limiter)->connection().stats();
  std::printf("# direct client: %llu commands, %llu replies, %llu timeouts\n",
              static_cast<unsigned long long>(stats.commands_sent),
              static_cast<unsigned long long>(stats.replies),
              static_cast<unsigned long long>(stats.timeouts));
  redisFree(sync);
  return 0;
}
