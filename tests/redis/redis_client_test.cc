// The client thread against real redis-server processes, with real faults.
#include "redis/redis_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/mpsc_queue.h"
#include "base/notification.h"
#include "redis/endpoint.h"
#include "redis/health_monitor.h"
#include "redis/reply.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/redis.h"

namespace tokenlease::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::tokenlease::testing::ConnectFast;

// Every wait in these tests is bounded by this.
using testing::kWaitBound;
using testing::WaitUntil;

// The client thread of `conn` (the library's access to it).
RedisClient& Client(const std::shared_ptr<RedisConnection>& conn) {
  return RedisConnectionAccess::Client(*conn);
}

absl::StatusOr<RedisReply> Call(RedisClient& client,
                                std::vector<std::string> argv,
                                absl::Duration timeout = absl::Seconds(5)) {
  auto result = std::make_shared<absl::StatusOr<RedisReply>>();
  auto done = std::make_shared<Notification>();
  absl::Status s = client.Submit(
      std::move(argv),
      [result, done](absl::StatusOr<RedisReply> r) {
        *result = std::move(r);
        done->Notify();
      },
      timeout);
  if (!s.ok()) return s;
  if (!done->WaitForNotificationWithTimeout(kWaitBound)) {
    return absl::InternalError("callback never ran (test bound)");
  }
  return *result;
}

// Retries `argv` until it succeeds or kWaitBound passes.
absl::StatusOr<RedisReply> CallUntilOk(RedisClient& client,
                                       const std::vector<std::string>& argv) {
  const absl::Time end = absl::Now() + kWaitBound;
  absl::StatusOr<RedisReply> r;
  while (absl::Now() < end) {
    r = Call(client, argv, absl::Milliseconds(500));
    if (r.ok() && !r->is_error()) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return r;
}

TEST(EndpointTest, ParsesTcpUnixAndCredentials) {
  auto ep = ParseRedisUrl("redis://127.0.0.1:6390/2");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->host, "127.0.0.1");
  EXPECT_EQ(ep->port, 6390);
  EXPECT_EQ(ep->db, 2);
  EXPECT_TRUE(ep->password.empty());

  ep = ParseRedisUrl("redis://alice:s%40cret@localhost");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->user, "alice");
  EXPECT_EQ(ep->password, "s@cret");
  EXPECT_EQ(ep->port, 6379);

  ep = ParseRedisUrl("redis://:pw@[::1]:7000");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->host, "::1");
  EXPECT_EQ(ep->port, 7000);
  EXPECT_EQ(ep->user, "");
  EXPECT_EQ(ep->password, "pw");

  ep = ParseRedisUrl("unix:///tmp/r.sock?db=3");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->socket_path, "/tmp/r.sock");
  EXPECT_EQ(ep->db, 3);
  EXPECT_EQ(ep->Describe(), "unix:///tmp/r.sock?db=3");
}

TEST(EndpointTest, RejectsMalformedUrlsWithHelp) {
  for (const char* bad :
       {"http://x", "redis://", "redis://h:0", "redis://h:99999",
        "redis://h:12/x", "redis://u:@h", "redis://[::1", "unix://rel/path",
        "redis://h%zz:1", "redis://a:%4@h"}) {
    auto ep = ParseRedisUrl(bad);
    ASSERT_FALSE(ep.ok()) << bad;
    EXPECT_EQ(ep.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(ep.status().message(), HasSubstr("accepted forms")) << bad;
  }
}

// No error about a URL shows its password (or user), whatever is wrong
// with the rest of it.
TEST(EndpointTest, ErrorsNeverShowTheCredentials) {
  for (const char* bad :
       {"redis://alice:s3cretPW@127.0.0.1:99999/0",
        "redis://alice:s3cretPW@127.0.0.1:6379/x", "redis://s3cretPW@[::1:6379",
        "redis://:s3cretPW@h:0", "redisx://alice:s3cretPW@h:6379",
        "unix://alice:s3cretPW@rel/path", "unix://:s3cretPW@/tmp/r.sock?x=1",
        "redis://alice:s3cretPW%zz@h", "alice:s3cretPW@h:6379",
        "redis://alice:s3cret/PW@h:6379", "REDIS://alice:s3cret/PW@h",
        "redis://alice:s3cretPW/@h/0"}) {
    auto ep = ParseRedisUrl(bad);
    ASSERT_FALSE(ep.ok()) << bad;
    EXPECT_THAT(ep.status().message(), Not(HasSubstr("s3cret"))) << bad;
    EXPECT_THAT(ep.status().message(), Not(HasSubstr("PW"))) << bad;
    EXPECT_THAT(ep.status().message(), Not(HasSubstr("alice"))) << bad;
    EXPECT_THAT(ep.status().message(), HasSubstr("***@")) << bad;
  }
}

// A password without "@host" lands where the port goes: not echoed either.
TEST(EndpointTest, ANonNumericPortIsNotEchoed) {
  auto ep = ParseRedisUrl("redis://default:s3cretPW");
  ASSERT_FALSE(ep.ok());
  EXPECT_THAT(ep.status().message(), Not(HasSubstr("s3cretPW")));
  EXPECT_THAT(ep.status().message(),
              HasSubstr("redis://default:***\": the port is not a number"));
  ep = ParseRedisUrl("redis://h:99999");  // a number: shown, it helps
  ASSERT_FALSE(ep.ok());
  EXPECT_THAT(ep.status().message(), HasSubstr("port \"99999\""));
}

TEST(EndpointTest, RedactKeepsEverythingButTheCredentials) {
  EXPECT_EQ(RedactRedisUrl("redis://alice:pw@127.0.0.1:99999/0"),
            "redis://***@127.0.0.1:99999/0");
  EXPECT_EQ(RedactRedisUrl("redis://pw@h/1"), "redis://***@h/1");
  EXPECT_EQ(RedactRedisUrl("redis://h:1/0"), "redis://h:1/0");
  EXPECT_EQ(RedactRedisUrl("redis://a:p@b@h:1"), "redis://***@h:1");
  EXPECT_EQ(RedactRedisUrl("redis://a:p/w@h/0"), "redis://***@h/0");
  EXPECT_EQ(RedactRedisUrl("unix://:pw@/tmp/r.sock"), "unix://***@/tmp/r.sock");
  EXPECT_EQ(RedactRedisUrl("unix:///tmp/r.sock"), "unix:///tmp/r.sock");
  EXPECT_EQ(RedactRedisUrl("u:pw@h"), "***@h");
  EXPECT_EQ(RedactRedisUrl(""), "");
}

TEST(RedisOptionsTest, ValidationNamesTheField) {
  RedisOptions o;
  o.command_timeout = absl::ZeroDuration();
  EXPECT_THAT(o.Validate().message(), HasSubstr("command_timeout"));
  o = RedisOptions{};
  o.reconnect_max_backoff = absl::Microseconds(1);
  EXPECT_THAT(o.Validate().message(), HasSubstr("reconnect_max_backoff"));
  o = RedisOptions{};
  o.max_pending = 1;
  EXPECT_THAT(o.Validate().message(), HasSubstr("max_pending"));
  o = RedisOptions{};
  o.url = "tcp://x";
  EXPECT_THAT(o.Validate().message(), HasSubstr("RedisOptions.url"));
  EXPECT_TRUE(RedisOptions{}.Validate().ok());
}

TEST(CommandQueueTest, BoundedAndFifo) {
  BoundedMpscQueue<int> q(4);
  int items[5] = {0, 1, 2, 3, 4};
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.TryPush(&items[i]));
  EXPECT_FALSE(q.TryPush(&items[4]));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.TryPop(), &items[i]);
  EXPECT_EQ(q.TryPop(), nullptr);
}

TEST(CommandQueueTest, ManyProducersLoseNothing) {
  BoundedMpscQueue<int> q(64);
  constexpr int kPerThread = 20000;
  static int dummy[2];
  std::atomic<bool> go{false};
  std::vector<std::thread> producers;
  for (int t = 0; t < 2; ++t) {
    producers.emplace_back([&, t] {
      while (!go.load()) {
      }
      for (int i = 0; i < kPerThread; ++i) {
        while (!q.TryPush(&dummy[t])) std::this_thread::yield();
      }
    });
  }
  go.store(true);
  int counts[2] = {0, 0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (counts[0] + counts[1] < 2 * kPerThread &&
         std::chrono::steady_clock::now() < end) {
    if (int* p = q.TryPop()) ++counts[p - dummy];
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(counts[0], kPerThread);
  EXPECT_EQ(counts[1], kPerThread);
}

class RedisClientTest : public testing::RedisTest {};
// Tests that pause or kill their server.
class RedisClientFaultTest : public testing::PrivateRedisTest {};

TEST_F(RedisClientTest, RoundTripsAndPipelinesFromManyThreads) {
  auto conn = NewConnection();
  ASSERT_NE(conn, nullptr);
  auto r = CallUntilOk(Client(conn), {"SET", "k", "v"});
  ASSERT_TRUE(r.ok()) << r.status();
  r = Call(Client(conn), {"GET", "k"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->str, "v");

  // 4 threads x 500 INCRs without waiting: every callback runs once and the
  // counter ends exactly at 2000.
  constexpr int kThreads = 4, kEach = 500;
  std::atomic<int> ok{0}, failed{0};
  Notification all_done;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        absl::Status s = Client(conn).Submit(
            {"INCR", "counter"}, [&](absl::StatusOr<RedisReply> reply) {
              (reply.ok() && reply->type == RedisReply::Type::kInteger ? ok
                                                                       : failed)
                  .fetch_add(1);
              if (ok.load() + failed.load() == kThreads * kEach) {
                all_done.Notify();
              }
            });
        if (!s.ok()) failed.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(kWaitBound));
  EXPECT_EQ(ok.load(), kThreads * kEach);
  EXPECT_EQ(failed.load(), 0);
  r = Call(Client(conn), {"GET", "counter"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->str, "2000");
  const RedisStats stats = conn->stats();
  EXPECT_GE(stats.commands_sent, 2002u);
  EXPECT_EQ(stats.timeouts, 0u);
  EXPECT_GE(stats.flushes, 1u);
  EXPECT_LE(stats.flushes, stats.commands_sent);
  EXPECT_TRUE(conn->connected());
}

TEST_F(RedisClientTest, CommandsQueuedTogetherLeaveInOneWrite) {
  auto conn = NewConnection();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
  // Hold the client thread inside a callback so that the next submits pile
  // up in the queue; the loop's next turn must send them in one write.
  Notification in_callback, gate;
  ASSERT_TRUE(Client(conn)
                  .Submit({"PING"},
                          [&](absl::StatusOr<RedisReply>) {
                            in_callback.Notify();
                            gate.WaitForNotificationWithTimeout(kWaitBound);
                          })
                  .ok());
  ASSERT_TRUE(in_callback.WaitForNotificationWithTimeout(kWaitBound));
  const RedisStats before = conn->stats();
  constexpr int kCommands = 200;
  std::atomic<int> ok{0}, answered{0};
  Notification all;
  for (int i = 0; i < kCommands; ++i) {
    ASSERT_TRUE(Client(conn)
                    .Submit(
                        {"INCR", "piped"},
                        [&](absl::StatusOr<RedisReply> r) {
                          if (r.ok()) ok.fetch_add(1);
                          if (answered.fetch_add(1) + 1 == kCommands) {
                            all.Notify();
                          }
                        },
                        absl::Seconds(10))
                    .ok());
  }
  gate.Notify();
  ASSERT_TRUE(all.WaitForNotificationWithTimeout(kWaitBound));
  EXPECT_EQ(ok.load(), kCommands);
  const RedisStats after = conn->stats();
  EXPECT_EQ(after.commands_sent - before.commands_sent,
            static_cast<uint64_t>(kCommands));
  EXPECT_EQ(after.flushes - before.flushes, 1u);
  EXPECT_EQ(*server().Command({"GET", "piped"}), "200");
}

TEST_F(RedisClientTest, ErrorRepliesAreRepliesNotFailures) {
  auto conn = NewConnection();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"SET", "s", "x"}).ok());
  auto r = Call(Client(conn), {"LPUSH", "s", "x"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ErrorStartsWith("WRONGTYPE")) << r->DebugString();
}

TEST_F(RedisClientTest, SelectsTheDatabaseOfTheUrl) {
  auto conn = NewConnection("/3");
  auto r = CallUntilOk(Client(conn), {"SET", "in3", "yes"});
  ASSERT_TRUE(r.ok()) << r.status();
  auto db3 = server().Command({"EVAL",
                               "redis.call('SELECT', 3) "
                               "return redis.call('GET', 'in3')",
                               "0"});
  ASSERT_TRUE(db3.ok());
  EXPECT_EQ(*db3, "yes");
  auto db0 = server().Command({"GET", "in3"});
  ASSERT_TRUE(db0.ok());
  EXPECT_EQ(*db0, "(nil)");
}

TEST_F(RedisClientTest, ReloadsAScriptAfterScriptFlush) {
  constexpr absl::string_view kBody = "return tonumber(ARGV[1]) + 1";
  auto sha = server().Command({"SCRIPT", "LOAD", std::string(kBody)});
  ASSERT_TRUE(sha.ok());
  static std::string sha_text;
  sha_text = *sha;
  const LuaScript script{sha_text, kBody};
  auto conn = NewConnection();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());

  auto run = [&](int x) {
    auto result = std::make_shared<absl::StatusOr<RedisReply>>();
    Notification done;
    EXPECT_TRUE(Client(conn)
                    .SubmitScript(script, {"0", std::to_string(x)},
                                  [&](absl::StatusOr<RedisReply> r) {
                                    *result = std::move(r);
                                    done.Notify();
                                  })
                    .ok());
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWaitBound));
    return *result;
  };
  auto r = run(41);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->integer, 42);
  EXPECT_EQ(conn->stats().script_reloads, 0u);

  ASSERT_TRUE(server().Command({"SCRIPT", "FLUSH"}).ok());
  r = run(1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->integer, 2);
  EXPECT_EQ(conn->stats().script_reloads, 1u);
  // EVAL loaded it again: the next call needs no reload.
  r = run(2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->integer, 3);
  EXPECT_EQ(conn->stats().script_reloads, 1u);
}

// Health transitions seen by RedisOptions::on_health_change (client thread).
struct HealthLog {
  std::mutex mu;
  std::vector<RedisHealthEvent> events;
  std::vector<std::string> lines;

  void Attach(RedisOptions* o) {
    o->on_health_change = [this](const RedisHealthEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
    };
    o->log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.emplace_back(line);
    };
  }
  std::string Transitions() {
    std::lock_guard<std::mutex> lock(mu);
    std::string out;
    for (const auto& e : events) {
      absl::StrAppend(&out, out.empty() ? "" : " ", RedisHealthName(e.to));
    }
    return out;
  }
};

TEST_F(RedisClientFaultTest, CommandDeadlineAgainstAFrozenServer) {
  RedisOptions o;
  HealthLog log;
  log.Attach(&o);
  auto conn = ConnectFast(url(), o);
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
  EXPECT_EQ(conn->health(), RedisHealth::kHealthy);
  server().Pause();  // SIGSTOP: the socket stays open, nothing answers
  const auto start = std::chrono::steady_clock::now();
  auto r = Call(Client(conn), {"PING"}, absl::Milliseconds(200));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
      << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("may still run"));
  EXPECT_GE(took, std::chrono::milliseconds(150));
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_GE(conn->stats().timeouts, 1u);
  // Nothing answered for down_after (250 ms) while a command waited.
  EXPECT_TRUE(WaitUntil([&] { return conn->health() == RedisHealth::kDown; }))
      << log.Transitions();
  server().Resume();
  // The connection was kept: the late reply proves the server is back, and
  // the next command needs no reconnect.
  r = CallUntilOk(Client(conn), {"PING"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->str, "PONG");
  const RedisStats s = conn->stats();
  EXPECT_EQ(s.connects, 1u);
  EXPECT_EQ(s.resets, 0u);
  EXPECT_GE(s.late_replies, 1u);
  EXPECT_GE(s.down, 1u);
  EXPECT_NE(conn->health(), RedisHealth::kDown);
  EXPECT_THAT(log.Transitions(), HasSubstr("healthy"));
  EXPECT_THAT(log.Transitions(), HasSubstr("down"));
  std::lock_guard<std::mutex> lock(log.mu);
  ASSERT_FALSE(log.lines.empty());
  EXPECT_THAT(log.lines.front(), HasSubstr("redis redis://127.0.0.1:"));
}

// A server frozen for longer than dead_after: the connection is reset, and
// reconnect attempts against it do not count as connects (the kernel
// accepts, but nobody answers the login's PING).
TEST_F(RedisClientFaultTest, AServerFrozenPastDeadAfterIsReset) {
  RedisOptions o;
  o.down_after = absl::Milliseconds(50);
  o.dead_after = absl::Milliseconds(200);
  o.connect_timeout = absl::Milliseconds(100);
  HealthLog log;
  log.Attach(&o);
  auto conn = ConnectFast(url(), o);
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
  server().Pause();
  auto r = Call(Client(conn), {"PING"}, absl::Seconds(10));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("no reply for"));
  EXPECT_TRUE(WaitUntil([&] { return conn->stats().connect_failures >= 2; }));
  RedisStats s = conn->stats();
  EXPECT_EQ(s.resets, 1u);
  EXPECT_EQ(s.connects, 1u);
  EXPECT_FALSE(conn->connected());
  EXPECT_EQ(conn->health(), RedisHealth::kDown);
  server().Resume();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
  s = conn->stats();
  EXPECT_EQ(s.connects, 2u);
  EXPECT_TRUE(conn->connected());
  {
    std::lock_guard<std::mutex> lock(log.mu);
    bool reset_logged = false;
    for (const auto& l : log.lines) {
      reset_logged |= l.find("resetting the connection") != std::string::npos;
    }
    EXPECT_TRUE(reset_logged);
  }
}

// hiredis allocates what an array header announces: the client's
// readers refuse more than kMaxReplyElements (found by the fuzzer: a
// header of 1.7e9 elements asked for 13.6 GB), and still read real
// replies.
TEST(ReplyReaderTest, OversizedArrayHeadersAreRefused) {
  // "*-1" is the nil array; hiredis itself refuses other negative counts.
  for (const std::string header :
       {"*1700000000\r\n", "*1048577\r\n", "*-5\r\n", "*-1\r\n"}) {
    redisReader* reader = redisReaderCreate();
    ASSERT_NE(reader, nullptr);
    internal::LimitReplyArrays(reader);
    ASSERT_EQ(redisReaderFeed(reader, header.data(), header.size()), REDIS_OK);
    void* reply = nullptr;
    const int rc = redisReaderGetReply(reader, &reply);
    EXPECT_EQ(rc, header == "*-1\r\n" ? REDIS_OK : REDIS_ERR) << header;
    if (reply != nullptr) freeReplyObject(reply);
    redisReaderFree(reader);
  }
  redisReader* reader = redisReaderCreate();
  internal::LimitReplyArrays(reader);
  const std::string ok = "*2\r\n:1\r\n:2\r\n";
  ASSERT_EQ(redisReaderFeed(reader, ok.data(), ok.size()), REDIS_OK);
  void* reply = nullptr;
  ASSERT_EQ(redisReaderGetReply(reader, &reply), REDIS_OK);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(internal::CopyReply(reply).DebugString(), "[1, 2]");
  freeReplyObject(reply);
  redisReaderFree(reader);
}

// The health judgment alone, on made-up times (ns).
TEST(HealthMonitorTest, FromRepliesTimeoutsAndTheConnection) {
  RedisOptions o;
  o.slow_reply = absl::Milliseconds(100);
  o.degraded_hold = absl::Seconds(1);
  o.down_after = absl::Milliseconds(250);
  o.dead_after = absl::Seconds(5);
  constexpr int64_t kMs = 1'000'000;
  HealthMonitor h(o);
  // Connecting for the first time: not an outage yet.
  EXPECT_EQ(h.Judge(0).health, RedisHealth::kDegraded);
  EXPECT_EQ(h.Judge(0).reason, "connecting for the first time");
  h.OnReady(0);
  EXPECT_EQ(h.Judge(0).health, RedisHealth::kHealthy);
  h.OnSent(10 * kMs);
  // Waiting, but not yet for down_after.
  EXPECT_EQ(h.Judge(259 * kMs).health, RedisHealth::kHealthy);
  HealthMonitor::Verdict v = h.Judge(260 * kMs);
  EXPECT_EQ(v.health, RedisHealth::kDown);
  EXPECT_THAT(v.reason, HasSubstr("while 1 commands waited"));
  EXPECT_FALSE(v.reset);
  EXPECT_TRUE(h.Judge(5010 * kMs).reset);
  // The late reply: answering again, but slowly.
  h.OnReply(400 * kMs, 390 * kMs);
  v = h.Judge(400 * kMs);
  EXPECT_EQ(v.health, RedisHealth::kDegraded);
  EXPECT_THAT(v.reason, HasSubstr("a reply took 390ms"));
  EXPECT_EQ(h.Judge(1399 * kMs).health, RedisHealth::kDegraded);
  EXPECT_EQ(h.Judge(1400 * kMs).health, RedisHealth::kHealthy);
  // A timeout degrades too; a quick reply does not.
  h.OnSent(2000 * kMs);
  h.OnReply(2001 * kMs, 1 * kMs);
  EXPECT_EQ(h.Judge(2001 * kMs).health, RedisHealth::kHealthy);
  h.OnTimeout(3000 * kMs);
  EXPECT_EQ(h.Judge(3000 * kMs).health, RedisHealth::kDegraded);
  // Nothing in flight: silence is not a stall.
  EXPECT_EQ(h.Judge(9000 * kMs).health, RedisHealth::kHealthy);
  h.OnClosed("connection refused");
  v = h.Judge(9000 * kMs);
  EXPECT_EQ(v.health, RedisHealth::kDown);
  EXPECT_EQ(v.reason, "connection refused");
  EXPECT_EQ(h.in_flight(), 0);
}

TEST_F(RedisClientFaultTest, ReconnectsAfterKillAndRestart) {
  auto conn = NewConnection();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"SET", "a", "1"}).ok());
  server().Kill();  // kill -9
  auto r = Call(Client(conn), {"GET", "a"}, absl::Milliseconds(200));
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().code(),
              ::testing::AnyOf(absl::StatusCode::kUnavailable,
                               absl::StatusCode::kDeadlineExceeded));
  ASSERT_TRUE(server().Restart().ok());
  r = CallUntilOk(Client(conn), {"SET", "a", "2"});
  ASSERT_TRUE(r.ok()) << r.status();
  r = Call(Client(conn), {"GET", "a"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->str, "2");
  EXPECT_GE(conn->stats().connects, 2u);
}

TEST_F(RedisClientFaultTest, CommandsWaitForTheFirstConnect) {
  // Created before the server exists: commands wait (within their deadline)
  // and fail with a message naming the last connect error.
  server().Kill();
  auto conn = NewConnection();
  auto r = Call(Client(conn), {"PING"}, absl::Milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("no connection to redis://"));
  ASSERT_TRUE(server().Restart().ok());
  EXPECT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
}

TEST_F(RedisClientFaultTest, ShutdownAnswersEveryPendingCommand) {
  auto conn = NewConnection();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
  server().Pause();
  std::atomic<int> answered{0}, cancelled_or_lost{0};
  constexpr int kCommands = 50;
  for (int i = 0; i < kCommands; ++i) {
    ASSERT_TRUE(Client(conn)
                    .Submit(
                        {"PING"},
                        [&](absl::StatusOr<RedisReply> r) {
                          if (!r.ok()) cancelled_or_lost.fetch_add(1);
                          answered.fetch_add(1);
                        },
                        absl::Seconds(30))
                    .ok());
  }
  const auto start = std::chrono::steady_clock::now();
  conn.reset();  // grace 1 s, then everything fails
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(answered.load(), kCommands);
  EXPECT_EQ(cancelled_or_lost.load(), kCommands);
  EXPECT_LT(took, std::chrono::seconds(5));
  server().Resume();
}

TEST_F(RedisClientTest, ShutdownLetsInFlightCommandsFinish) {
  auto conn = NewConnection();
  ASSERT_TRUE(CallUntilOk(Client(conn), {"PING"}).ok());
  std::atomic<int> ok{0};
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(Client(conn)
                    .Submit({"INCR", "n"},
                            [&](absl::StatusOr<RedisReply> r) {
                              if (r.ok()) ok.fetch_add(1);
                            })
                    .ok());
  }
  conn.reset();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_EQ(*server().Command({"GET", "n"}), "100");
}

TEST(RedisAuthTest, PasswordAndAclUser) {
  auto server = testing::StartRedisServer(
      {.password = "s3cret", .acl_user = "limiter", .acl_password = "p@ss"});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string hostport = absl::StrCat("127.0.0.1:", (*server)->port());

  auto by_password = ConnectFast(absl::StrCat("redis://:s3cret@", hostport));
  auto r = CallUntilOk(Client(by_password), {"SET", "x", "1"});
  ASSERT_TRUE(r.ok()) << r.status();

  auto by_user = ConnectFast(absl::StrCat("redis://limiter:p%40ss@", hostport));
  r = CallUntilOk(Client(by_user), {"ACL", "WHOAMI"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->str, "limiter");

  auto wrong = ConnectFast(absl::StrCat("redis://limiter:nope@", hostport));
  r = Call(Client(wrong), {"PING"}, absl::Milliseconds(300));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("login failed"));
  EXPECT_EQ(wrong->stats().connects, 0u);
}

TEST(RedisAuthTest, UnixSocket) {
  auto server = testing::StartRedisServer({.unix_socket = true});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string& socket_path = (*server)->socket_path();
  auto conn = ConnectFast("unix://" + socket_path);
  auto r = CallUntilOk(Client(conn), {"CLIENT", "INFO"});
  ASSERT_TRUE(r.ok()) << r.status();
  // A unix-socket client has no TCP peer address.
  EXPECT_THAT(r->str, HasSubstr("addr=" + socket_path));
}

}  // namespace
}  // namespace tokenlease::internal
