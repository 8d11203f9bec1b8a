// Direct mode against the naive approach, side by side in one run.
//
// naive:  one synchronous hiredis connection shared by all callers under a
//         mutex, EVAL of the same acquire script, one request at a time
//         (what a service does when it calls a rate-limit script inline).
// sha:    the same with EVALSHA (a stronger baseline: the script body,
//         ~33 KB, is not sent on every call).
// direct: DirectLimiter::TryAcquire (blocking) from every caller: on a
//         caller lane (RedisOptions::caller_lanes) when one is idle, else
//         through the client thread, which pipelines whatever is pending
//         into one write. One limiter (own connection) per --lanes value,
//         run in turn: "direct-l0" is the client thread's path alone.
//
// Usage: direct_bench [--url=redis[s]://127.0.0.1:PORT] [--callers=1,8,64]
//                     [--seconds=3] [--keys=1] [--durable_replicas=0]
//                     [--lanes=0,2] [--slices=1]
//                     [--transport=tcp|tls|tcp,tls] [--tls]
//                     [--tls_ca_file=F --tls_cert_file=F --tls_key_file=F]
// --transport=tcp,tls: the private server listens on a plaintext and a TLS
// port (mutual TLS, certificates made for the run; --tls: TLS only), and
// every caller count runs each mode over each transport in turn (in the
// order given: tls,tcp runs TLS first), then prints the ratios TLS ÷
// plaintext of throughput, p50 and p99 per mode. A rediss://
// --url runs over TLS with the --tls_*_file given (bench_redis.h); the
// baselines then use hiredis_ssl.
// --keys=N: caller i decides on key i % N (default 1: one hot key); with a
// redis+cluster:// URL the keys spread over the primaries, and only direct
// mode runs (the synchronous baselines speak to one server).
// --durable_replicas=N: RedisOptions::durable_replicas for direct mode (the
// server needs N replicas): what a WAIT after each write costs.
// --slices=S: each mode's --seconds in S slices, the modes taking turns
// slice by slice (latencies pooled per mode): for a machine whose other
// load comes and goes.
// --lanes=A,B: RedisOptions::caller_lanes of each direct limiter (default
// 0 and the library's default); ratios of each to sha (p50) and to the
// first (throughput).
// Prints, per caller count: throughput and p50/p99 latency of each mode and
// the ratio direct/naive. Without --url (or TOKENLEASE_BENCH_REDIS_URL) it
// starts a private redis-server for the run (support/redis_server.h), and
// prints that server's EVAL and EVALSHA statistics (INFO commandstats) at
// the end, to tell script time from round trips.
//
// --batch: instead, the Redis CPU per item of batch.lua (INFO commandstats
// usec of EVALSHA / items) for batches of 1, 8, 32 and kMaxBatchItems
// acquire items (new keys, existing keys), charge items and release items,
// next to one acquire.lua / release.lua call per key on the same kind of
// keys, and the floor (kFloorScript: an item's GET, SET and reply without
// its logic), in one session; --seconds per case (default 1), in 10 slices
// interleaved with the other sizes, of which the lowest usec per call
// counts (the machine's other load only adds).
#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/bench_redis.h"
#include "redis/endpoint.h"
#include "redis/script_call.h"
#include "support/redis_server.h"
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

// One mode's latencies and time, pooled over the slices it ran in.
struct Pool {
  std::vector<double> lat;
  double seconds = 0;
  int64_t errors = 0;

  RunResult Result() {
    RunResult r;
    r.per_second = seconds > 0 ? lat.size() / seconds : 0;
    r.p50_us = Percentile(lat, 0.50);
    r.p99_us = Percentile(lat, 0.99);
    r.errors = errors;
    return r;
  }
};

// Runs `call` from `callers` threads for `seconds`; each call's latency is
// added to `pool`. `call` returns false on error.
template <typename Call>
void DriveInto(Pool* pool, int callers, double seconds, Call call) {
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
  pool->seconds += std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& v : lat) pool->lat.insert(pool->lat.end(), v.begin(), v.end());
  pool->errors += errors.load();
}

template <typename Call>
RunResult Drive(int callers, double seconds, Call call) {
  Pool pool;
  DriveInto(&pool, callers, seconds, call);
  return pool.Result();
}

// --batch ------------------------------------------------------------------

// One command on `c`; the reply's type, or -1 if there was none.
int Command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(
      c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) return -1;
  const int type = r->type;
  if (type == REDIS_REPLY_ERROR) std::fprintf(stderr, "error: %s\n", r->str);
  freeReplyObject(r);
  return type;
}

// EVALSHA calls and their total usec since the last CONFIG RESETSTAT.
std::optional<std::pair<int64_t, int64_t>> EvalshaStats(redisContext* c) {
  auto* r =
      static_cast<redisReply*>(redisCommand(c, "INFO %s", "commandstats"));
  if (r == nullptr || r->type != REDIS_REPLY_STRING) {
    if (r) freeReplyObject(r);
    return std::nullopt;
  }
  const std::string info(r->str, r->len);
  freeReplyObject(r);
  const size_t at = info.find("cmdstat_evalsha:calls=");
  if (at == std::string::npos) return std::nullopt;
  long long calls = 0, usec = 0;
  if (std::sscanf(info.c_str() + at, "cmdstat_evalsha:calls=%lld,usec=%lld",
                  &calls, &usec) != 2) {
    return std::nullopt;
  }
  return std::make_pair(static_cast<int64_t>(calls),
                        static_cast<int64_t>(usec));
}

// The Redis work of an acquire item without any of its logic: GET and parse
// the state, format it and SET it with a TTL, a reply of 6 integers.
constexpr char kFloorScript[] = R"lua(
local out = {}
for j = 1, #KEYS do
  local key = KEYS[j]
  local t, f, l = string.match(redis.pcall('GET', key), '^(%S+) (%S+) ?(%S*)$')
  redis.call('SET', key, string.format('%d %d %d', tonumber(t) + 1,
             tonumber(f), tonumber(l)), 'PX', 600000)
  out[j] = {1, 0, 0, 1, 2, 0}
end
return out
)lua";

int RunBatchBench(redisContext* c, double seconds) {
  namespace ti = tokenlease::internal;
  // Every item writes: a bucket with room for every token of the run (1
  // token = 1 us of debt), at one explicit now, so keys keep their state
  // (TTL: reset + 10 min) and releases credit it back.
  const tokenlease::LimitSpec spec = tokenlease::LimitSpec::TokenBucket(
      1'000'000, absl::Seconds(1), 1'000'000'000);
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  constexpr int kExisting = 4096;  // names cycled through by "existing"
  for (std::string_view body :
       {ti::lua::kAcquireScript, ti::lua::kReleaseScript,
        ti::lua::kBatchScript}) {
    if (Command(c, {"SCRIPT", "LOAD", std::string(body)}) !=
        REDIS_REPLY_STRING) {
      return 1;
    }
  }
  std::string floor_sha;
  {
    auto* r = static_cast<redisReply*>(
        redisCommand(c, "SCRIPT LOAD %s", kFloorScript));
    if (r == nullptr || r->type != REDIS_REPLY_STRING) return 1;
    floor_sha.assign(r->str, r->len);
    freeReplyObject(r);
  }
  if (Command(c, {"FLUSHALL"}) != REDIS_REPLY_STATUS) return 1;

  enum class Kind {
    kAcquireNew,
    kAcquireExisting,
    kLeaseExisting,  // an acquire that records its grant (op "lease")
    kCharge,
    kRelease,
  };
  const char* kind_names[] = {"acquire, new keys", "acquire, existing keys",
                              "lease, existing keys", "charge, existing keys",
                              "release, existing keys"};
  int64_t serial = 0;  // new names and lease ids
  // The `i`th item of `kind`.
  auto make_item = [&](Kind kind, int64_t i) {
    ti::BatchItem item;
    item.name = kind == Kind::kAcquireNew ? absl::StrCat("new", serial++)
                                          : absl::StrCat("u", i % kExisting);
    item.op = kind == Kind::kCharge    ? ti::BatchItem::Op::kCharge
              : kind == Kind::kRelease ? ti::BatchItem::Op::kRelease
                                       : ti::BatchItem::Op::kAcquire;
    item.wanted = 1;
    item.minimum = 1;
    item.amount = 1;
    item.granted_at_us = now_us;
    if (kind == Kind::kLeaseExisting || kind == Kind::kRelease) {
      item.lease_id = absl::StrCat("l", serial++);
    }
    return item;
  };
  // A release gives back only a grant recorded under its lease key: one
  // token each, recorded by a plain MSET (not an EVALSHA: not counted).
  auto record_grants = [&](const std::string& prefix,
                           const std::vector<ti::BatchItem>& items) {
    std::vector<std::string> mset = {"MSET"};
    for (const ti::BatchItem& item : items) {
      mset.push_back(ti::LeaseKey(prefix, item.name, item.lease_id));
      mset.push_back(absl::StrCat("1 ", now_us));
    }
    if (Command(c, mset) != REDIS_REPLY_STATUS) {
      std::fprintf(stderr, "could not record the grants to release\n");
      std::exit(1);
    }
  };
  // The EVALSHA of one call of `size` items (0: one single-script call;
  // -1: the floor script on kMaxBatchItems keys).
  auto make_call = [&](Kind kind, const std::string& prefix, int size,
                       int64_t& i) {
    std::vector<std::string> cmd = {"EVALSHA"};
    if (size == 0) {
      const ti::BatchItem item = make_item(kind, i++);
      if (kind == Kind::kRelease) {
        record_grants(prefix, {item});
        cmd.push_back(std::string(ti::lua::kReleaseSha1));
        const auto args = ti::ReleaseArguments(
            spec, prefix, item.name,
            ti::ReleaseArgs{item.amount, item.lease_id, now_us, now_us});
        cmd.insert(cmd.end(), args.begin(), args.end());
      } else {
        ti::AcquireArgs a;
        a.wanted = 1;
        a.minimum = 1;
        a.charge = kind == Kind::kCharge;
        a.now_us = now_us;
        a.lease_id = item.lease_id;
        cmd.push_back(std::string(ti::lua::kAcquireSha1));
        const auto args = ti::AcquireArguments(spec, prefix, item.name, a);
        cmd.insert(cmd.end(), args.begin(), args.end());
      }
      return cmd;
    }
    std::vector<ti::BatchItem> items;
    const int n = size < 0 ? ti::kMaxBatchItems : size;
    for (int k = 0; k < n; ++k) items.push_back(make_item(kind, i++));
    if (kind == Kind::kRelease) record_grants(prefix, items);
    cmd.push_back(size < 0 ? floor_sha : std::string(ti::lua::kBatchSha1));
    const auto args = ti::BatchArguments(spec, prefix, items, now_us);
    cmd.insert(cmd.end(), args.begin(), args.end());
    return cmd;
  };

  std::printf(
      "# direct_bench --batch: Redis CPU (INFO commandstats) per item; "
      "%.1f s per case in 10 slices interleaved with the other sizes, the "
      "best slice's usec_per_call\n",
      seconds);
  std::printf("# spec %s, explicit now, %d existing keys\n",
              tokenlease::DescribeSpec(spec).c_str(), kExisting);
  std::printf("%-24s %6s %8s %14s %14s %10s\n", "items", "batch", "calls",
              "usec_per_call", "usec_per_item", "vs_single");
  const std::vector<int> batch_sizes = {0, 1, 8, 32, ti::kMaxBatchItems};
  constexpr int kSlices = 10;  // per case, interleaved; the best one counts
  for (Kind kind : {Kind::kAcquireNew, Kind::kAcquireExisting,
                    Kind::kLeaseExisting, Kind::kCharge, Kind::kRelease}) {
    // Existing keys: also the floor, what no item can cost less than.
    std::vector<int> sizes = batch_sizes;
    if (kind == Kind::kAcquireExisting) sizes.push_back(-1);
    std::vector<std::string> prefixes;
    std::vector<int64_t> next(sizes.size(), 0);  // item index per size
    for (int size : sizes) {
      const std::string prefix =
          absl::StrCat("bench:", static_cast<int>(kind), ":", size, ":");
      prefixes.push_back(prefix);
      if (kind == Kind::kAcquireNew) continue;
      // Every existing key in debt by 1000 tokens (releases credit it).
      for (int64_t k = 0; k < kExisting; k += ti::kMaxBatchItems) {
        std::vector<ti::BatchItem> items;
        for (int64_t n = k; n < k + ti::kMaxBatchItems; ++n) {
          items.push_back(make_item(Kind::kAcquireExisting, n));
          items.back().wanted = items.back().minimum = 1000;
        }
        std::vector<std::string> warm = {"EVALSHA",
                                         std::string(ti::lua::kBatchSha1)};
        const auto args = ti::BatchArguments(spec, prefix, items, now_us);
        warm.insert(warm.end(), args.begin(), args.end());
        if (Command(c, warm) != REDIS_REPLY_ARRAY) return 1;
      }
    }
    // Slices of every size in turn (a busy machine disturbs them alike);
    // per size, the slice with the lowest usec per call.
    std::vector<double> best(sizes.size(), 1e300);
    std::vector<int64_t> calls(sizes.size(), 0);
    for (int slice = 0; slice < kSlices; ++slice) {
      for (size_t z = 0; z < sizes.size(); ++z) {
        if (Command(c, {"CONFIG", "RESETSTAT"}) != REDIS_REPLY_STATUS) {
          return 1;
        }
        const auto start = Clock::now();
        int64_t n = 0;
        while (std::chrono::duration<double>(Clock::now() - start).count() <
               seconds / kSlices) {
          const int type =
              Command(c, make_call(kind, prefixes[z], sizes[z], next[z]));
          if (type != REDIS_REPLY_ARRAY && type != REDIS_REPLY_INTEGER) {
            return 1;
          }
          ++n;
        }
        const auto stats = EvalshaStats(c);
        if (!stats || stats->first != n) {
          std::fprintf(stderr, "INFO commandstats did not count the calls\n");
          return 1;
        }
        best[z] = std::min(best[z], static_cast<double>(stats->second) /
                                        static_cast<double>(n));
        calls[z] += n;
      }
    }
    for (size_t z = 0; z < sizes.size(); ++z) {
      const int items = sizes[z] < 0 ? ti::kMaxBatchItems : sizes[z];
      const double per_item = best[z] / std::max(items, 1);
      const std::string batch = sizes[z] == 0  ? std::string("single")
                                : sizes[z] < 0 ? std::string("floor")
                                               : absl::StrCat(sizes[z]);
      std::printf("%-24s %6s %8lld %14.2f %14.2f %9.2fx\n",
                  kind_names[static_cast<int>(kind)], batch.c_str(),
                  static_cast<long long>(calls[z]), best[z], per_item,
                  per_item / best[0]);
    }
    std::fflush(stdout);
  }
  return 0;
}

// A synchronous hiredis connection to `t` for the baselines and --batch:
// over TLS (hiredis_ssl, the server verified against t.tls.ca_file, the
// client certificate presented) for a rediss:// URL; nullptr after saying
// why.
redisContext* ConnectHiredis(const tokenlease_bench::Transport& t) {
  auto ep = tokenlease::internal::ParseRedisUrl(t.url);
  if (!ep.ok()) {
    std::fprintf(stderr, "%s\n", ep.status().ToString().c_str());
    return nullptr;
  }
  redisContext* c = redisConnect(ep->host.c_str(), ep->port);
  if (c == nullptr || c->err) {
    std::fprintf(stderr, "connect to %s failed\n",
                 tokenlease::internal::RedactRedisUrl(t.url).c_str());
    if (c != nullptr) redisFree(c);
    return nullptr;
  }
  if (!ep->tls) return c;
  static const int kOpenSsl = redisInitOpenSSL();
  (void)kOpenSsl;
  auto or_null = [](const std::string& s) {
    return s.empty() ? nullptr : s.c_str();
  };
  redisSSLContextError error = REDIS_SSL_CTX_NONE;
  // Kept for the run: the connection's session refers to it.
  redisSSLContext* ssl = redisCreateSSLContext(
      or_null(t.tls.ca_file), or_null(t.tls.ca_dir), or_null(t.tls.cert_file),
      or_null(t.tls.key_file), ep->host.c_str(), &error);
  if (ssl == nullptr || redisInitiateSSLWithContext(c, ssl) != REDIS_OK) {
    std::fprintf(stderr, "TLS to %s failed: %s\n",
                 tokenlease::internal::RedactRedisUrl(t.url).c_str(),
                 ssl == nullptr ? redisSSLContextGetError(error) : c->errstr);
    redisFree(c);
    return nullptr;
  }
  // A server that refuses our certificate says so at the first reply.
  auto* pong = static_cast<redisReply*>(redisCommand(c, "PING"));
  const bool ok = pong != nullptr && pong->type == REDIS_REPLY_STATUS;
  if (pong != nullptr) freeReplyObject(pong);
  if (!ok) {
    std::fprintf(stderr, "TLS to %s failed: %s\n",
                 tokenlease::internal::RedactRedisUrl(t.url).c_str(),
                 c->err != 0 ? c->errstr : "PING refused");
    redisFree(c);
    return nullptr;
  }
  return c;
}

// The lines of the server's INFO commandstats for EVAL and EVALSHA.
void PrintScriptStats(const tokenlease::support::RedisServer& server) {
  absl::StatusOr<tokenlease::support::SyncRedis> redis = server.Connect();
  absl::StatusOr<std::string> info =
      redis.ok() ? redis->Info("commandstats")
                 : absl::StatusOr<std::string>(redis.status());
  if (!info.ok()) {
    std::fprintf(stderr, "INFO commandstats: %s\n",
                 info.status().ToString().c_str());
    return;
  }
  std::printf("# redis INFO commandstats:\n");
  for (absl::string_view line : absl::StrSplit(*info, "\r\n")) {
    if (absl::StartsWith(line, "cmdstat_eval:") ||
        absl::StartsWith(line, "cmdstat_evalsha:")) {
      std::printf("%s\n", std::string(line).c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using tokenlease_bench::Transport;
  tokenlease_bench::BenchRedisFlags redis_flags;
  std::vector<int> callers = {1, 8, 64};
  double seconds = 3;
  bool batch = false;
  bool seconds_given = false;
  int nkeys = 1;
  int durable = 0;
  std::vector<int> lanes = {0, tokenlease::RedisOptions().caller_lanes};
  int slices = 1;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    std::string error;
    if (tokenlease_bench::ParseRedisFlag(a, redis_flags, &error)) {
      if (!error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 2;
      }
    } else if (a == "--batch") {
      batch = true;
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
    } else if (absl::ConsumePrefix(&a, "--slices=")) {
      if (!absl::SimpleAtoi(a, &slices) || slices < 1 || slices > 1000) {
        std::fprintf(stderr, "bad --slices (1 to 1000)\n");
        return 2;
      }
    } else if (absl::ConsumePrefix(&a, "--lanes=")) {
      lanes.clear();
      for (absl::string_view c : absl::StrSplit(a, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(c, &n) || n < 0 || n > 64) {
          std::fprintf(stderr, "bad --lanes entry '%s' (0 to 64)\n",
                       std::string(c).c_str());
          return 2;
        }
        lanes.push_back(n);
      }
    } else if (absl::ConsumePrefix(&a, "--durable_replicas=")) {
      if (!absl::SimpleAtoi(a, &durable) || durable < 0 || durable > 16) {
        std::fprintf(stderr, "bad --durable_replicas (0 to 16)\n");
        return 2;
      }
    } else if (absl::ConsumePrefix(&a, "--keys=")) {
      if (!absl::SimpleAtoi(a, &nkeys) || nkeys < 1 || nkeys > 1 << 20) {
        std::fprintf(stderr, "bad --keys (1 to 1048576)\n");
        return 2;
      }
    } else if (absl::ConsumePrefix(&a, "--seconds=")) {
      if (!absl::SimpleAtod(a, &seconds) || seconds <= 0 || seconds > 600) {
        std::fprintf(stderr, "bad --seconds\n");
        return 2;
      }
      seconds_given = true;
    } else {
      std::fprintf(stderr,
                   "usage: direct_bench %s [--callers=1,8,64] [--seconds=3] "
                   "[--keys=1] [--durable_replicas=0] [--lanes=0,2] "
                   "[--slices=1] [--batch]\n",
                   tokenlease_bench::kRedisFlagsUsage);
      return 2;
    }
  }
  // Without a URL, a private server for the run (on both ports with
  // --transport=tcp,tls), stopped when main returns, after its script
  // statistics are printed.
  auto redis = tokenlease_bench::BenchRedis::Start(redis_flags);
  if (!redis.ok()) {
    std::fprintf(stderr, "direct_bench: %s\n",
                 redis.status().ToString().c_str());
    return redis.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  absl::Cleanup script_stats = [&redis] {
    if ((*redis)->server() != nullptr) PrintScriptStats(*(*redis)->server());
  };
  const std::vector<Transport>& transports = (*redis)->transports();
  auto ep = tokenlease::internal::ParseRedisUrl(transports[0].url);
  const bool cluster =
      ep.ok() &&
      ep->topology == tokenlease::internal::RedisEndpoint::Topology::kCluster;
  if (!ep.ok() || !ep->socket_path.empty() || (batch && cluster)) {
    std::fprintf(stderr, "need a redis[s]://host:port url: %s\n",
                 ep.status().ToString().c_str());
    return 2;
  }

  if (batch) {
    redisContext* c = ConnectHiredis(transports[0]);
    if (c == nullptr) return 1;
    const int rc = RunBatchBench(c, seconds_given ? seconds : 1.0);
    redisFree(c);
    return rc;
  }

  // A limit that admits everything: every mode runs the same script work.
  const tokenlease::LimitSpec spec =
      tokenlease::LimitSpec::TokenBucket(1'000'000'000, absl::Seconds(1));
  // Per transport: the limiter and the baselines' connection.
  // Per transport: a limiter per --lanes value, and the baselines'
  // connection.
  struct Way {
    const Transport* transport;
    std::vector<std::unique_ptr<tokenlease::DirectLimiter>> limiters;
    redisContext* sync = nullptr;  // not with a cluster
  };
  std::vector<Way> ways;
  for (const Transport& t : transports) {
    ways.push_back({&t, {}, nullptr});
    for (int n : lanes) {
      tokenlease::DirectLimiterOptions options;
      options.redis.url = t.url;
      options.redis.tls = t.tls;
      options.redis.command_timeout = absl::Seconds(5);
      options.redis.durable_replicas = durable;
      options.redis.caller_lanes = n;
      options.key_prefix = "bench:direct:";
      auto limiter = tokenlease::DirectLimiter::Create(spec, options);
      if (!limiter.ok()) {
        std::fprintf(stderr, "%s\n", limiter.status().ToString().c_str());
        return 1;
      }
      ways.back().limiters.push_back(*std::move(limiter));
    }
    if (!cluster && (ways.back().sync = ConnectHiredis(t)) == nullptr) {
      return 1;
    }
  }
  // Every limiter connected before the first run.
  for (const Way& w : ways) {
    for (const auto& l : w.limiters) {
      for (int i = 0; i < 2000 && l->connection().health() !=
                                      tokenlease::RedisHealth::kHealthy;
           ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  const std::vector<std::string> direct_names = [&] {
    std::vector<std::string> names;
    for (int n : lanes) names.push_back(absl::StrCat("direct-l", n));
    return names;
  }();
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

  for (const Way& w : ways) {
    std::printf("# direct_bench %s: %s\n", w.transport->name.c_str(),
                tokenlease::internal::RedactRedisUrl(w.transport->url).c_str());
  }
  std::printf("# %.1f s per run; the transports take turns per caller count\n",
              seconds);
  std::printf("%-8s %-9s %-10s %12s %10s %10s %7s\n", "callers", "transport",
              "mode", "decisions/s", "p50_us", "p99_us", "errors");
  std::vector<std::string> keys;
  for (int k = 0; k < nkeys; ++k) {
    keys.push_back(nkeys == 1 ? "hot" : absl::StrCat("k", k));
  }
  auto print = [](int n, const Way& w, const char* mode, const RunResult& r) {
    std::printf("%-8d %-9s %-10s %12.0f %10.1f %10.1f %7lld\n", n,
                w.transport->name.c_str(), mode, r.per_second, r.p50_us,
                r.p99_us, static_cast<long long>(r.errors));
  };
  const size_t nl = lanes.size();
  for (int n : callers) {
    std::vector<RunResult> naive(ways.size()), sha(ways.size()),
        direct(ways.size() * nl);
    for (size_t x = 0; x < ways.size(); ++x) {
      const Way& w = ways[x];
      // Not Redis's decision (the failure mode's) counts as an error.
      auto run_direct = [&](size_t l) {
        return Drive(n, seconds, [&](int t) {
          return w.limiters[l]->TryAcquire(keys[t % nkeys]).source ==
                 tokenlease::DecisionSource::kDirect;
        });
      };
      if (cluster) {
        for (size_t l = 0; l < nl; ++l) {
          direct[x * nl + l] = run_direct(l);
          print(n, w, direct_names[l].c_str(), direct[x * nl + l]);
        }
        continue;
      }
      auto run_sync = [&](Pool* pool, std::vector<const char*>& argv,
                          std::vector<size_t>& lens) {
        DriveInto(pool, n, seconds / slices, [&](int) {
          std::lock_guard<std::mutex> lock(sync_mu);
          auto* r = static_cast<redisReply*>(redisCommandArgv(
              w.sync, static_cast<int>(argv.size()), argv.data(), lens.data()));
          const bool ok = r != nullptr && r->type == REDIS_REPLY_ARRAY;
          if (r) freeReplyObject(r);
          return ok;
        });
      };
      // Every mode runs in each slice, in turn: the machine's other load
      // falls on all of them alike.
      std::vector<Pool> pools(2 + nl);
      for (int slice = 0; slice < slices; ++slice) {
        run_sync(&pools[0], naive_argv, naive_lens);
        run_sync(&pools[1], sha_argv, sha_lens);
        for (size_t l = 0; l < nl; ++l) {
          DriveInto(&pools[2 + l], n, seconds / slices, [&](int t) {
            return w.limiters[l]->TryAcquire(keys[t % nkeys]).source ==
                   tokenlease::DecisionSource::kDirect;
          });
        }
      }
      naive[x] = pools[0].Result();
      sha[x] = pools[1].Result();
      for (size_t l = 0; l < nl; ++l)
        direct[x * nl + l] = pools[2 + l].Result();
      print(n, w, "naive", naive[x]);
      print(n, w, "sha", sha[x]);
      for (size_t l = 0; l < nl; ++l) {
        print(n, w, direct_names[l].c_str(), direct[x * nl + l]);
      }
      for (size_t l = 0; l < nl; ++l) {
        const RunResult& d = direct[x * nl + l];
        std::printf(
            "%-8d %-9s ratio %-10s p50 direct/sha = %.2fx; throughput "
            "direct/sha = %.2fx, direct/naive = %.2fx, /%s = %.2fx\n",
            n, w.transport->name.c_str(), direct_names[l].c_str(),
            d.p50_us / std::max(sha[x].p50_us, 1e-9),
            d.per_second / std::max(sha[x].per_second, 1e-9),
            d.per_second / std::max(naive[x].per_second, 1e-9),
            direct_names[0].c_str(),
            d.per_second / std::max(direct[x * nl].per_second, 1e-9));
      }
    }
    // TLS against plaintext (whichever ran first).
    for (size_t x = 0; x + 1 < ways.size(); ++x) {
      const size_t tls = ways[x].transport->name == "tls" ? x : x + 1;
      const size_t tcp = tls == x ? x + 1 : x;
      auto ratios = [&](const char* mode, const std::vector<RunResult>& r) {
        std::printf(
            "%-8d tls/tcp   %-7s throughput %.2fx, p50 %.2fx, "
            "p99 %.2fx\n",
            n, mode, r[tls].per_second / std::max(r[tcp].per_second, 1e-9),
            r[tls].p50_us / std::max(r[tcp].p50_us, 1e-9),
            r[tls].p99_us / std::max(r[tcp].p99_us, 1e-9));
      };
      if (ways[tls].transport->name != "tls" ||
          ways[tcp].transport->name != "tcp") {
        continue;
      }
      // The first --lanes value's limiter.
      std::vector<RunResult> first;
      for (size_t x2 = 0; x2 < ways.size(); ++x2) {
        first.push_back(direct[x2 * nl]);
      }
      ratios(direct_names[0].c_str(), first);
      if (!cluster) ratios("sha", sha);
      if (!cluster) ratios("naive", naive);
    }
    std::fflush(stdout);
  }
  for (const Way& w : ways) {
    for (size_t l = 0; l < nl; ++l) {
      const tokenlease::RedisStats stats = w.limiters[l]->connection().stats();
      std::printf(
          "# %s client, %s: %llu commands, %llu replies, %llu timeouts, "
          "%llu lane calls, %llu lane errors\n",
          direct_names[l].c_str(), w.transport->name.c_str(),
          static_cast<unsigned long long>(stats.commands_sent),
          static_cast<unsigned long long>(stats.replies),
          static_cast<unsigned long long>(stats.timeouts),
          static_cast<unsigned long long>(stats.lane_calls),
          static_cast<unsigned long long>(stats.lane_errors));
    }
    if (w.sync != nullptr) redisFree(w.sync);
  }
  return 0;
}
