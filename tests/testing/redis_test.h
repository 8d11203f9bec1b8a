// Fixtures for tests against Redis (the servers: testing/redis_server.h,
// StartRedisServer for one of a test's own). RedisEnvironment starts one
// redis-server per test binary (redis_main.cc registers it); RedisTest runs
// a test against it, emptied first. Tests that inject faults (SIGSTOP,
// kill -9, restart) or need other server options (AUTH, ACL, unix socket)
// derive from PrivateRedisTest instead, which starts a server of their own.
// Every server listens on 127.0.0.1 only.
//
//   class FooTest : public tokenlease::testing::RedisTest {};
//   TEST_F(FooTest, Bar) {
//     auto conn = NewConnection();               // to url()
//     client().Run({"SET", prefix() + "k", "v"});
//   }
#ifndef TOKENLEASE_TESTS_TESTING_REDIS_TEST_H_
#define TOKENLEASE_TESTS_TESTING_REDIS_TEST_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "testing/redis_server.h"
#include "tokenlease/decision.h"
#include "tokenlease/redis.h"
#include "tokenlease/shared_limit.h"

namespace tokenlease::testing {

// The test binary's shared redis-server, from before its first test to
// after its last (ctest runs each test in a process of its own).
class RedisEnvironment : public ::testing::Environment {
 public:
  // Starts the server; a failure stops the binary before any test runs.
  void SetUp() override;
  // Stops the server.
  void TearDown() override;
  // The shared server while the environment is set up, else nullptr.
  static RedisServer* server();
};

// A RedisConnection to `url` with a fast reconnect backoff (5 to 100 ms)
// on top of `options`; nullptr, and a test failure, if Create fails.
std::shared_ptr<RedisConnection> ConnectFast(const std::string& url,
                                             RedisOptions options = {});

// The lines a connection logs (RedisOptions::log, called on its client
// thread), kept for the test to read. It must outlive the connection.
//
//   LogLines log;
//   options.log = log.Sink();
class LogLines {
 public:
  // What RedisOptions::log takes: keeps each line here.
  std::function<void(std::string_view)> Sink();
  // Every line so far, in order.
  std::vector<std::string> lines() const;
  // The lines a limiter logged for calls Redis gave no decision
  // (FailurePolicy::NoteError: "Redis gave no decision: ..."), in order.
  std::vector<std::string> NoDecision() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// The source of the decisions `mode` makes for a call Redis gives none:
// kFailClosed, kFailOpen, or kFallback (fail_local's share).
DecisionSource ModeSource(FailureMode mode);

// A test against the shared server, emptied (FLUSHALL) before the test.
class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // The server this test runs against.
  RedisServer& server() { return *server_; }
  // "redis://127.0.0.1:<port>".
  std::string url() const { return server_->url(); }
  // A new connection to url() + `suffix` (e.g. "/3": database 3).
  std::shared_ptr<RedisConnection> NewConnection(std::string_view suffix = "");
  // A synchronous client on server(), connected on first use.
  SyncClient& client();
  // A key prefix unique to this test ("<Suite>.<Test>:", '/' kept).
  const std::string& prefix() const { return prefix_; }

  // For PrivateRedisTest: run against `server` instead.
  void UseServer(RedisServer* server);

 private:
  RedisServer* server_ = nullptr;
  std::unique_ptr<SyncClient> client_;
  std::string prefix_;
};

// A test with a redis-server of its own, started with `options` before the
// test and stopped after it: Pause, Kill and Restart touch no other test.
class PrivateRedisTest : public RedisTest {
 protected:
  explicit PrivateRedisTest(RedisServerOptions options = {})
      : options_(std::move(options)) {}
  void SetUp() override;

 private:
  RedisServerOptions options_;
  std::unique_ptr<RedisServer> own_;
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_REDIS_TEST_H_
