// Caller lanes (RedisOptions::caller_lanes): a blocking DirectLimiter call
// does its round trip on its own thread when a lane is idle. Real
// redis-servers, real faults; lane use is read from RedisStats, never from
// timing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "support/tls_certs.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"

namespace tokenlease {
namespace {

using ::tokenlease::testing::LogLines;
using ::tokenlease::testing::WaitUntil;

constexpr absl::Duration kWaitBound = absl::Seconds(20);

std::unique_ptr<DirectLimiter> MakeDirect(std::shared_ptr<RedisConnection> conn,
                                          LimitSpec spec,
                                          const std::string& prefix) {
  DirectLimiterOptions o;
  o.connection = std::move(conn);
  o.key_prefix = prefix;
  o.timeout = absl::Seconds(5);
  auto l = DirectLimiter::Create(std::move(spec), o);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *std::move(l) : nullptr;
}

// Waits until `conn` is kHealthy (lanes serve only then).
void WaitHealthy(const std::shared_ptr<RedisConnection>& conn) {
  ASSERT_TRUE(WaitUntil([&] { return conn->health() == RedisHealth::kHealthy; },
                        kWaitBound))
      << RedisHealthName(conn->health());
}

class DirectLaneTest : public testing::RedisTest {
 protected:
  std::shared_ptr<RedisConnection> Connect(int lanes) {
    RedisOptions o;
    o.caller_lanes = lanes;
    o.log = log_->Sink();
    return testing::ConnectFast(url(), o);
  }
  std::unique_ptr<LogLines> log_ = std::make_unique<LogLines>();
};

TEST(DirectLaneOptionsTest, LanesOutOfRangeAreRefused) {
  RedisOptions o;
  o.caller_lanes = -1;
  EXPECT_THAT(std::string(o.Validate().message()),
              ::testing::HasSubstr("RedisOptions.caller_lanes"));
  o.caller_lanes = 65;
  EXPECT_FALSE(o.Validate().ok());
  o.caller_lanes = 0;
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_EQ(RedisOptions().caller_lanes, 2);
}

TEST_F(DirectLaneTest, OneCallerDecidesOnALaneExactly) {
  auto conn = Connect(2);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  const uint64_t sent_before = conn->stats().commands_sent;
  auto limiter =
      MakeDirect(conn, LimitSpec::FixedWindow(5, absl::Hours(1)), prefix());
  ASSERT_NE(limiter, nullptr);
  int allowed = 0;
  for (int i = 0; i < 12; ++i) {
    const Decision d = limiter->TryAcquire("user");
    ASSERT_EQ(d.source, DecisionSource::kDirect) << i;
    allowed += d.allowed;
  }
  EXPECT_EQ(allowed, 5);
  // Borrowing goes the same way (Reserve blocks as TryAcquire).
  auto bucket = MakeDirect(
      conn,
      [] {
        LimitSpec s = LimitSpec::TokenBucket(2, absl::Seconds(100));
        s.max_borrow = absl::Seconds(50);
        return s;
      }(),
      prefix() + "b:");
  ASSERT_NE(bucket, nullptr);
  EXPECT_TRUE(bucket->Reserve("k", 2, absl::ZeroDuration()).decision.allowed);
  const Reservation r = bucket->Reserve("k", 1, absl::Seconds(60));
  EXPECT_TRUE(r.decision.allowed);
  EXPECT_GT(r.wait_ns, 0);
  const RedisStats s = conn->stats();
  EXPECT_EQ(s.lane_calls, 14u);
  EXPECT_EQ(s.lane_connects, 1u);  // one caller: one lane, kept
  EXPECT_EQ(s.lanes_open, 1);
  EXPECT_EQ(s.lane_errors, 0u);
  // No script call went through the client thread.
  EXPECT_EQ(s.commands_sent, sent_before);
  EXPECT_EQ(limiter->stats().redis_errors, 0u);
}

TEST_F(DirectLaneTest, ZeroLanesTakeTheClientThread) {
  auto conn = Connect(0);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  auto limiter =
      MakeDirect(conn, LimitSpec::FixedWindow(3, absl::Hours(1)), prefix());
  ASSERT_NE(limiter, nullptr);
  int allowed = 0;
  for (int i = 0; i < 5; ++i) allowed += limiter->TryAcquire("u").allowed;
  EXPECT_EQ(allowed, 3);
  EXPECT_EQ(conn->stats().lane_calls, 0u);
  EXPECT_EQ(conn->stats().lanes_open, 0);
  EXPECT_GE(conn->stats().commands_sent, 5u);
}

TEST_F(DirectLaneTest, ManyCallersStillPipelineAndAdmitExactly) {
  auto conn = Connect(2);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  auto limiter =
      MakeDirect(conn, LimitSpec::FixedWindow(1000, absl::Hours(1)), prefix());
  ASSERT_NE(limiter, nullptr);
  constexpr int kThreads = 32, kCalls = 50;
  std::atomic<int> allowed{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        const Decision d = limiter->TryAcquire("hot");
        if (d.source != DecisionSource::kDirect) failed.fetch_add(1);
        allowed.fetch_add(d.allowed);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(allowed.load(), 1000);
  const RedisStats s = conn->stats();
  // Most calls went through the client thread, several per write.
  EXPECT_EQ(s.lane_calls + s.commands_sent >= kThreads * kCalls, true);
  EXPECT_LT(s.lane_calls, static_cast<uint64_t>(kThreads * kCalls / 4))
      << "lanes took most calls of 32 callers";
  EXPECT_LT(s.flushes * 2, s.commands_sent) << "no pipelining";
  EXPECT_LE(s.lanes_open, 2);
}

// Tests that kill their server: an append-only file with fsync on every
// write, so that Redis loses nothing and the count is exact across the
// restart.
class DirectLaneFaultTest : public testing::PrivateRedisTest {
 protected:
  DirectLaneFaultTest()
      : PrivateRedisTest([] {
          testing::RedisServerOptions o;
          o.persistent = true;
          return o;
        }()) {}
};

TEST_F(DirectLaneFaultTest, KilledAndRestartedUnderLoadNeverOverAdmits) {
  LogLines log;
  RedisOptions o;
  o.caller_lanes = 2;
  o.log = log.Sink();
  auto conn = testing::ConnectFast(url(), o);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  constexpr int kLimit = 300;
  auto limiter = MakeDirect(
      conn, LimitSpec::FixedWindow(kLimit, absl::Hours(1)), prefix());
  ASSERT_NE(limiter, nullptr);
  // Two callers (both on lanes while healthy) until Redis itself denies.
  std::atomic<int> allowed{0}, failed{0}, denied{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        const Decision d =
            limiter->TryAcquire("hot", 1, absl::Milliseconds(300));
        if (d.source != DecisionSource::kDirect) {
          EXPECT_FALSE(d.allowed);  // fail closed
          failed.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        if (d.allowed) {
          allowed.fetch_add(1);
          // Slow enough that the kill lands mid-run.
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        } else if (denied.fetch_add(1) > 50) {
          stop.store(true);
        }
      }
    });
  }
  ASSERT_TRUE(
      WaitUntil([&] { return allowed.load() >= kLimit / 3; }, kWaitBound));
  const uint64_t lane_calls_before = conn->stats().lane_calls;
  EXPECT_GT(lane_calls_before, 0u);
  server().Kill();
  ASSERT_TRUE(WaitUntil([&] { return failed.load() > 0; }, kWaitBound));
  ASSERT_TRUE(server().Restart().ok());
  const bool done = WaitUntil([&] { return stop.load(); }, absl::Seconds(60));
  stop.store(true);
  for (auto& th : threads) th.join();
  ASSERT_TRUE(done) << "Redis never denied after the restart";
  // Never more than the limit; less only by calls whose reply the kill
  // took (one per caller at most: charged, but not admitted).
  EXPECT_LE(allowed.load(), kLimit);
  EXPECT_GE(allowed.load(), kLimit - 2);
  const RedisStats s = conn->stats();
  // Lanes served again after the restart, on new connections.
  EXPECT_GT(s.lane_calls, lane_calls_before);
  EXPECT_GE(s.lane_connects, 2u);
  EXPECT_EQ(s.data_losses, 0u);
}

TEST_F(DirectLaneFaultTest, AFrozenServerTimesOutOnALaneThenRecovers) {
  RedisOptions o;
  o.caller_lanes = 1;
  auto conn = testing::ConnectFast(url(), o);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  auto limiter =
      MakeDirect(conn, LimitSpec::FixedWindow(100, absl::Hours(1)), prefix());
  ASSERT_NE(limiter, nullptr);
  ASSERT_EQ(limiter->TryAcquire("z").source, DecisionSource::kDirect);
  ASSERT_EQ(conn->stats().lane_calls, 1u);
  server().Pause();
  const Decision d = limiter->TryAcquire("z", 1, absl::Milliseconds(150));
  EXPECT_EQ(d.source, DecisionSource::kFailClosed);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(conn->stats().lane_errors, 1u);
  EXPECT_EQ(conn->stats().lanes_open, 0);
  EXPECT_EQ(limiter->stats().redis_errors, 1u);
  server().Resume();
  // Lanes serve again once the client thread had a reply (Redis answers).
  ASSERT_TRUE(WaitUntil(
      [&] {
        const Decision again =
            limiter->TryAcquire("z", 1, absl::Milliseconds(300));
        return again.source == DecisionSource::kDirect &&
               conn->stats().lane_calls > 2;
      },
      kWaitBound));
  EXPECT_GE(conn->stats().lane_connects, 2u);
}

// A lane logs in as the client thread's connections do: AUTH (password
// alone, or an ACL user), SELECT, and over a unix socket.
TEST(DirectLaneLoginTest, AuthSelectAndUnixSocket) {
  auto server = testing::StartRedisServer({.password = "s3cret",
                                           .acl_user = "limiter",
                                           .acl_password = "p@ss",
                                           .unix_socket = true});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string hostport = absl::StrCat("127.0.0.1:", (*server)->port());
  const std::vector<std::string> urls = {
      absl::StrCat("redis://:s3cret@", hostport, "/3"),
      absl::StrCat("redis://limiter:p%40ss@", hostport, "/4"),
      absl::StrCat("unix://:s3cret@", (*server)->socket_path(), "?db=5")};
  for (size_t u = 0; u < urls.size(); ++u) {
    RedisOptions o;
    o.caller_lanes = 1;
    auto conn = testing::ConnectFast(urls[u], o);
    ASSERT_NE(conn, nullptr);
    ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
    auto limiter = MakeDirect(conn, LimitSpec::FixedWindow(2, absl::Hours(1)),
                              absl::StrCat("login", u, ":"));
    ASSERT_NE(limiter, nullptr);
    int allowed = 0;
    for (int i = 0; i < 3; ++i) {
      const Decision d = limiter->TryAcquire("k");
      ASSERT_EQ(d.source, DecisionSource::kDirect) << urls[u];
      allowed += d.allowed;
    }
    EXPECT_EQ(allowed, 2) << u;
    EXPECT_EQ(conn->stats().lane_calls, 3u) << u;
    EXPECT_EQ(conn->stats().lane_errors, 0u) << u;
    // The state is in the URL's database (SELECT ran on the lane).
    absl::StatusOr<support::SyncRedis> sync = (*server)->Connect();
    ASSERT_TRUE(sync.ok()) << sync.status();
    const int db = 3 + static_cast<int>(u);
    ASSERT_TRUE(sync->Run({"AUTH", "s3cret"}).ok());
    ASSERT_TRUE(sync->Run({"SELECT", absl::StrCat(db)}).ok());
    absl::StatusOr<internal::RedisReply> keys =
        sync->Run({"KEYS", absl::StrCat("{login", u, ":k}*")});
    ASSERT_TRUE(keys.ok()) << keys.status();
    EXPECT_EQ(keys->elements.size(), 1u) << "db " << db;
  }
}

TEST(DirectLaneTlsTest, ALaneSpeaksMutualTls) {
  absl::StatusOr<std::unique_ptr<support::TempTlsFiles>> certs =
      support::TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const support::TlsFiles& files = (*certs)->files();
  support::RedisServerOptions so;
  so.tls = support::TlsServerOptionsFor(files, /*require_client_cert=*/true);
  auto server = support::StartRedisServer(std::move(so));
  ASSERT_TRUE(server.ok()) << server.status();
  RedisOptions o;
  o.tls.ca_file = files.ca_file;
  o.tls.cert_file = files.client_cert;
  o.tls.key_file = files.client_key;
  o.caller_lanes = 1;
  auto conn = testing::ConnectFast((*server)->tls_url(), o);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  auto limiter =
      MakeDirect(conn, LimitSpec::TokenBucket(5, absl::Hours(1)), "tls-lane:");
  ASSERT_NE(limiter, nullptr);
  int allowed = 0;
  for (int i = 0; i < 8; ++i) {
    const Decision d = limiter->TryAcquire("user");
    ASSERT_EQ(d.source, DecisionSource::kDirect) << i;
    allowed += d.allowed;
  }
  EXPECT_EQ(allowed, 5);
  EXPECT_EQ(conn->stats().lane_calls, 8u);
  EXPECT_EQ(conn->stats().lane_errors, 0u);
}

TEST(DirectLaneClusterTest, AClusterEndpointHasNoLanes) {
  absl::StatusOr<std::unique_ptr<support::RedisCluster>> cluster =
      support::RedisCluster::Start({.primaries = 3, .replicas_per_primary = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  RedisOptions o;
  o.caller_lanes = 4;
  auto conn = testing::ConnectFast((*cluster)->url(), o);
  ASSERT_NE(conn, nullptr);
  ASSERT_NO_FATAL_FAILURE(WaitHealthy(conn));
  auto limiter =
      MakeDirect(conn, LimitSpec::FixedWindow(3, absl::Hours(1)), "cl-lane:");
  ASSERT_NE(limiter, nullptr);
  for (int k = 0; k < 10; ++k) {
    int allowed = 0;
    for (int i = 0; i < 4; ++i) {
      const Decision d = limiter->TryAcquire(absl::StrCat("user", k));
      ASSERT_EQ(d.source, DecisionSource::kDirect);
      allowed += d.allowed;
    }
    EXPECT_EQ(allowed, 3) << k;
  }
  EXPECT_EQ(conn->stats().lane_calls, 0u);
  EXPECT_EQ(conn->stats().lanes_open, 0);
  EXPECT_GE(conn->stats().commands_sent, 40u);
}

}  // namespace
}  // namespace tokenlease
