// Real faults under a running leased limit (issue "Redis slow, gone or
// wrong", item 5): a persistent, password-protected redis-server of the
// test's own, killed, flushed, filled, corrupted, put to sleep, robbed of
// its clients and its password, and reached through a TCP fault proxy
// that delays, cuts and blackholes. For each fault, with FailureMode
// kFailLocal:
//   - nothing crashes and every wait ends by its deadline;
//   - the faults that leave the key without Redis apply the mode (local
//     share decisions), the others keep leasing through the fault;
//   - leasing resumes after the repair;
//   - the bound holds: Redis charged every token a lease admitted (what it
//     has left is at most the limit, plus what refilled in real time,
//     less what leases admitted), and the local share admitted its share,
//     whole, and no more.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "testing/fault_proxy.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease {
namespace {

using testing::FaultProxy;
using testing::kWaitBound;
using testing::RedisServerOptions;
using testing::WaitUntil;

constexpr char kPassword[] = "old-Pa55word";
constexpr char kNewPassword[] = "new-Pa55word";

enum class Fault {
  kKillKeepData,       // kill -9, restarted from its append-only file
  kScriptFlush,        // SCRIPT FLUSH: every script must be loaded again
  kMaxMemory,          // maxmemory 1 with noeviction: every write is OOM
  kWrongType,          // the bucket key overwritten with a list
  kCorruptValue,       // the bucket key overwritten with "garbage"
  kClientKill,         // CLIENT KILL TYPE normal
  kDebugSleep,         // DEBUG SLEEP 1.5: the server answers nothing
  kPasswordChanged,    // requirepass changed, then the connection killed
  kProxyLatency,       // 60 ms each way: slow, not gone
  kProxyDropMidReply,  // a reply cut in half, the connection closed
  kProxyBlackhole,     // connections open, nothing passes (a partition)
};

struct FaultCase {
  const char* name;
  Fault fault;
  // The key is left without Redis: decisions must come from the local
  // share. Otherwise leasing must go on through the fault.
  bool mode_applies;
  bool via_proxy;
};

std::string CaseName(const ::testing::TestParamInfo<FaultCase>& info) {
  return info.param.name;
}

RedisServerOptions PersistentWithPassword() {
  RedisServerOptions options;
  options.password = kPassword;
  options.persistent = true;
  return options;
}

class RedisFaultTest : public testing::PrivateRedisTest,
                       public ::testing::WithParamInterface<FaultCase> {
 protected:
  RedisFaultTest() : PrivateRedisTest(PersistentWithPassword()) {}

  void TearDown() override {
    if (sleeper_.joinable()) sleeper_.join();
  }

  std::string UrlWithPassword(int port) const {
    return absl::StrCat("redis://:", kPassword, "@127.0.0.1:", port);
  }

  // `patient`: for the faults that must not look like an outage (a slow
  // reply, a reloaded script), the connection is judged down only after
  // 2 s and commands time out after 5 s, so that a sanitizer's slow
  // moment is not taken for the fault.
  std::shared_ptr<RedisConnection> Connect(int port, bool patient = false) {
    RedisOptions options;
    // A dead connection is reset after 1 s (default 5 s) so that the
    // blackhole's reset fits the test's time.
    options.dead_after = absl::Seconds(1);
    if (patient) {
      options.down_after = absl::Seconds(2);
      options.command_timeout = absl::Seconds(5);
      options.dead_after = absl::Seconds(10);
    }
    options.log = log_.Sink();
    return testing::ConnectFast(UrlWithPassword(port), options);
  }

  // One decision on the stepped clock, counted by source.
  Decision Decide(LeasedLimiter& limiter, const LeasedLimiter::Handle& h) {
    const Decision d = limiter.TryAcquire(h);
    if (d.allowed && d.source == DecisionSource::kLease) ++lease_admitted_;
    if (d.allowed && d.source == DecisionSource::kFallback) ++local_admitted_;
    if (d.source == DecisionSource::kFallback) ++local_decisions_;
    clock_.Advance(absl::Milliseconds(1));  // error backoffs pass
    return d;
  }

  // Decides once a millisecond until `done` holds or kWaitBound passes.
  template <typename Pred>
  bool DecideUntil(LeasedLimiter& limiter, const LeasedLimiter::Handle& h,
                   Pred done) {
    return WaitUntil([&] {
      Decide(limiter, h);
      return done();
    });
  }

  void Inject(Fault fault, FaultProxy* proxy) {
    testing::RedisServer& s = server();
    switch (fault) {
      case Fault::kKillKeepData:
        s.Kill();
        break;
      case Fault::kScriptFlush:
        ExpectOk(s.Command({"SCRIPT", "FLUSH"}));
        break;
      case Fault::kMaxMemory:
        ExpectOk(s.Command({"CONFIG", "SET", "maxmemory", "1"}));
        break;
      case Fault::kWrongType:
      case Fault::kCorruptValue: {
        // In one script, so no lease slips in between: the bucket is kept
        // aside (value and TTL) to be put back, since the repair must not
        // be a fresh bucket, and replaced.
        const auto replaced = s.Command(
            {"EVAL",
             "if redis.call('COPY', KEYS[1], KEYS[2], 'REPLACE') == 0 then "
             "return 'no bucket key' end "
             "redis.call('DEL', KEYS[1]) "
             "if ARGV[1] == 'list' then redis.call('RPUSH', KEYS[1], 'x') "
             "else redis.call('SET', KEYS[1], 'garbage') end "
             "return 'replaced'",
             "2", BucketKey(), SavedKey(),
             fault == Fault::kWrongType ? "list" : "string"});
        ASSERT_TRUE(replaced.ok()) << replaced.status();
        ASSERT_EQ(*replaced, "replaced");
        break;
      }
      case Fault::kClientKill:
        EXPECT_THAT(
            s.Command({"CLIENT", "KILL", "TYPE", "normal"}).value_or(""),
            ::testing::Not(::testing::HasSubstr("ERR")));
        break;
      case Fault::kDebugSleep:
        sleeper_ = std::thread([server = &s] {
          // Its own connection, blocked for the sleep (timeout 2 s).
          (void)server->Command({"DEBUG", "SLEEP", "1.5"});
        });
        break;
      case Fault::kPasswordChanged:
        ExpectOk(s.Command({"CONFIG", "SET", "requirepass", kNewPassword}));
        s.set_password(kNewPassword);
        // A running connection stays authenticated; its next connect
        // is refused.
        (void)s.Command({"CLIENT", "KILL", "TYPE", "normal"});
        break;
      case Fault::kProxyLatency:
        proxy->SetMode(FaultProxy::Mode::kDelay, absl::Milliseconds(60));
        break;
      case Fault::kProxyDropMidReply:
        proxy->SetMode(FaultProxy::Mode::kDropMidReply);
        break;
      case Fault::kProxyBlackhole:
        proxy->SetMode(FaultProxy::Mode::kBlackhole);
        break;
    }
  }

  void Repair(Fault fault, FaultProxy* proxy) {
    testing::RedisServer& s = server();
    switch (fault) {
      case Fault::kKillKeepData:
        ASSERT_TRUE(s.Restart().ok());
        break;
      case Fault::kScriptFlush:
      case Fault::kClientKill:
        break;  // nothing to repair: the limiter must cope alone
      case Fault::kMaxMemory:
        ExpectOk(s.Command({"CONFIG", "SET", "maxmemory", "0"}));
        break;
      case Fault::kWrongType:
      case Fault::kCorruptValue:
        // The scripts wrote nothing over the bad value.
        if (fault == Fault::kWrongType) {
          EXPECT_EQ(s.Command({"LRANGE", BucketKey(), "0", "-1"}).value_or(""),
                    "[x]");
        } else {
          EXPECT_EQ(s.Command({"GET", BucketKey()}).value_or(""), "garbage");
        }
        ExpectOk(s.Command({"RENAME", SavedKey(), BucketKey()}));
        break;
      case Fault::kDebugSleep:
        sleeper_.join();
        break;
      case Fault::kPasswordChanged:
        ExpectOk(s.Command({"CONFIG", "SET", "requirepass", kPassword}));
        s.set_password(kPassword);
        break;
      case Fault::kProxyLatency:
      case Fault::kProxyBlackhole:
      case Fault::kProxyDropMidReply:
        proxy->SetMode(FaultProxy::Mode::kPass);
        break;
    }
  }

  std::string BucketKey() const { return absl::StrCat("{", prefix(), "k}:b0"); }
  std::string SavedKey() const {
    return absl::StrCat("{", prefix(), "k}:saved");
  }

  static void ExpectOk(const absl::StatusOr<std::string>& reply) {
    EXPECT_TRUE(reply.ok()) << reply.status();
    if (reply.ok()) {
      EXPECT_EQ(*reply, "OK");
    }
  }

  // 100,000 tokens a year: a lease never empties the bucket, nothing
  // refills during a test (0.003 tokens a second), and the local share of
  // 1 of 10,000 instances is 10 tokens.
  static constexpr int64_t kLimit = 100'000;
  static constexpr int kInstances = 10'000;
  static constexpr int64_t kShare = kLimit / kInstances;
  const LimitSpec spec_ = LimitSpec::TokenBucket(kLimit, absl::Hours(24 * 365));
  ManualClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  int64_t lease_admitted_ = 0;
  int64_t local_admitted_ = 0;
  int64_t local_decisions_ = 0;
  std::thread sleeper_;
  testing::LogLines log_;
};

TEST_P(RedisFaultTest, NoCrashNoHangTheModeAppliesAndTheBoundHolds) {
  const FaultCase c = GetParam();
  const absl::Time started = absl::Now();
  std::unique_ptr<FaultProxy> proxy;
  if (c.via_proxy) {
    auto p = FaultProxy::Start(server().port());
    ASSERT_TRUE(p.ok()) << p.status();
    proxy = *std::move(p);
  }
  const int port = c.via_proxy ? proxy->port() : server().port();
  LeasedLimiterOptions options;
  const bool patient =
      c.fault == Fault::kProxyLatency || c.fault == Fault::kScriptFlush;
  options.connection = Connect(port, patient);
  options.key_prefix = prefix();
  options.clock = &clock_;
  options.lease.cold_key_policy = ColdKeyPolicy::kDeny;
  options.failure_mode = FailureMode::kFailLocal;
  options.fallback_instances = kInstances;
  auto created = LeasedLimiter::Create(spec_, options);
  ASSERT_TRUE(created.ok()) << created.status();
  LeasedLimiter& limiter = **created;
  auto h = limiter.Resolve("k");
  ASSERT_TRUE(h.ok());

  // A first lease, spent from.
  Decide(limiter, *h);
  ASSERT_TRUE(limiter.Sync(kWaitBound).ok());
  ASSERT_TRUE(Decide(limiter, *h).allowed);
  const uint64_t granted_before = limiter.stats().lease.tokens_granted;

  Inject(c.fault, proxy.get());
  if (HasFatalFailure()) return;
  // How the fault shows on the connection before it is repaired.
  const auto seen = [&] {
    const RedisStats r = limiter.connection().stats();
    switch (c.fault) {
      case Fault::kProxyLatency:
        return limiter.connection().health() == RedisHealth::kDegraded;
      case Fault::kProxyBlackhole:
        // Dead after 1 s, then a connect whose PING is never answered.
        return r.resets >= 1 && r.connect_failures >= 1;
      case Fault::kPasswordChanged:
        return r.connect_failures >= 1;  // AUTH refused
      case Fault::kMaxMemory:
        return limiter.stats().redis_errors >= 1;  // OOM replies
      default:
        return true;
    }
  };
  if (c.mode_applies) {
    EXPECT_TRUE(DecideUntil(limiter, *h, [&] {
      return local_decisions_ >= 20 && seen();
    })) << "the local share never decided";
  } else {
    // Through the fault: the lease runs dry and a new one arrives.
    EXPECT_TRUE(DecideUntil(limiter, *h, [&] {
      return limiter.stats().lease.tokens_granted > granted_before &&
             Decide(limiter, *h).source == DecisionSource::kLease && seen();
    })) << "no new lease through the fault";
  }

  Repair(c.fault, proxy.get());
  if (HasFatalFailure()) return;
  int64_t lease_before = lease_admitted_;
  EXPECT_TRUE(DecideUntil(limiter, *h, [&] {
    return lease_admitted_ > lease_before;
  })) << "leasing did not resume after the repair";
  lease_before = lease_admitted_;
  // Leases go on: a hundred more decisions from them.
  EXPECT_TRUE(DecideUntil(
      limiter, *h, [&] { return lease_admitted_ >= lease_before + 100; }));
  ASSERT_TRUE(limiter.ReturnAll(kWaitBound).ok());

  // The bound: what Redis has left is at most the limit, plus what
  // refilled in real time (Redis's clock), less every lease admission; the
  // local share admitted its share, whole, and then denied.
  const SharedLimitStats stats = limiter.stats();
  if (c.mode_applies) {
    EXPECT_EQ(local_admitted_, kShare);
  } else {
    EXPECT_LE(local_admitted_, kShare);
  }
  EXPECT_EQ(static_cast<uint64_t>(local_admitted_),
            stats.decisions.Admitted(DecisionSource::kFallback));
  DirectLimiterOptions direct_options;
  direct_options.connection = Connect(server().port());
  direct_options.key_prefix = prefix();
  auto direct = DirectLimiter::Create(spec_, direct_options);
  ASSERT_TRUE(direct.ok()) << direct.status();
  const Decision left = (*direct)->TryAcquire("k", 0, kWaitBound);
  ASSERT_EQ(left.source, DecisionSource::kDirect);
  const int64_t refilled = static_cast<int64_t>(
      std::ceil(absl::ToDoubleSeconds(absl::Now() - started) *
                static_cast<double>(kLimit) / (365.0 * 24 * 3600)));
  ASSERT_GT(lease_admitted_, refilled + 1);  // else the check below is void
  EXPECT_LE(left.remaining, kLimit + refilled + 1 - lease_admitted_)
      << "admitted from leases " << lease_admitted_ << ", locally "
      << local_admitted_;

  // Per fault: what the connection and the proxy saw.
  const RedisStats& r = stats.redis;
  switch (c.fault) {
    case Fault::kScriptFlush:
      EXPECT_GE(r.script_reloads, 1u);
      EXPECT_EQ(local_decisions_, 0);
      break;
    case Fault::kProxyLatency:
      // Slow is not dead: no reset, no timeout, no decision from the
      // local share.
      EXPECT_GE(r.degraded, 1u);
      EXPECT_EQ(r.resets, 0u);
      EXPECT_EQ(r.timeouts, 0u);
      EXPECT_EQ(local_decisions_, 0);
      break;
    case Fault::kProxyDropMidReply:
      EXPECT_EQ(proxy->dropped(), 1);
      EXPECT_GE(r.connects, 2u);
      break;
    case Fault::kProxyBlackhole:
      EXPECT_GE(r.resets, 1u);  // dead after 1 s
      EXPECT_GE(r.down, 1u);
      EXPECT_GE(r.connect_failures, 1u);
      break;
    case Fault::kWrongType:
    case Fault::kCorruptValue:
      // Errors for the key (counted in leased mode too).
      EXPECT_GE(stats.key_errors, 1u);
      [[fallthrough]];
    case Fault::kMaxMemory:
      // The key failed, the connection did not.
      EXPECT_GE(stats.redis_errors, 1u);
      EXPECT_EQ(r.down, 0u);
      EXPECT_EQ(r.resets, 0u);
      break;
    case Fault::kDebugSleep:
      EXPECT_GE(r.down, 1u);
      break;
    case Fault::kPasswordChanged:
    case Fault::kClientKill:
      EXPECT_GE(r.connects, 2u);
      break;
    default:
      break;
  }
  // No log line carries a password, and a refused AUTH is named.
  int auth_named = 0;
  for (const std::string& line : log_.lines()) {
    EXPECT_THAT(line, ::testing::Not(::testing::HasSubstr("Pa55word")));
    auth_named += absl::StrContains(line,
                                    "no connection: login failed: "
                                    "WRONGPASS");
  }
  if (c.fault == Fault::kPasswordChanged) {
    EXPECT_EQ(auth_named, 1) << "one line per reason, naming WRONGPASS";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, RedisFaultTest,
    ::testing::Values(
        FaultCase{"kill_keep_data", Fault::kKillKeepData, true, false},
        FaultCase{"script_flush", Fault::kScriptFlush, false, false},
        FaultCase{"maxmemory", Fault::kMaxMemory, true, false},
        FaultCase{"wrong_type", Fault::kWrongType, true, false},
        FaultCase{"corrupt_value", Fault::kCorruptValue, true, false},
        FaultCase{"client_kill", Fault::kClientKill, false, false},
        FaultCase{"debug_sleep", Fault::kDebugSleep, true, false},
        FaultCase{"password_changed", Fault::kPasswordChanged, true, false},
        FaultCase{"proxy_latency", Fault::kProxyLatency, false, true},
        FaultCase{"proxy_drop_mid_reply", Fault::kProxyDropMidReply, false,
                  true},
        FaultCase{"proxy_blackhole", Fault::kProxyBlackhole, true, true}),
    CaseName);

}  // namespace
}  // namespace tokenlease
