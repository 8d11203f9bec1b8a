// The synchronous client (sync_redis.h) against a real redis-server: URL
// forms and login, binary-safe commands, replies, bounded waits.
#include "support/sync_redis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "support/redis_info.h"
#include "support/redis_server.h"

namespace tokenlease::support {
namespace {

using internal::RedisReply;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPassword[] = "pw-4711";

class SyncRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = StartRedisServer({.password = kPassword});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  // A URL of the server with the password, then `suffix` ("/3").
  std::string Url(const std::string& suffix = "") const {
    return absl::StrCat("redis://:", kPassword, "@127.0.0.1:", server_->port(),
                        suffix);
  }
  // The reply of a command that must get one.
  static RedisReply Must(absl::StatusOr<RedisReply> r) {
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : RedisReply{};
  }

  std::unique_ptr<RedisServer> server_;
};

TEST_F(SyncRedisTest, ConnectsByUrlLogsInAndSelectsTheDatabase) {
  absl::StatusOr<SyncRedis> db3 = SyncRedis::Connect(Url("/3"));
  ASSERT_TRUE(db3.ok()) << db3.status();
  EXPECT_EQ(db3->endpoint(),
            absl::StrCat("redis://127.0.0.1:", server_->port(), "/3"));
  EXPECT_EQ(Must(db3->Run({"SET", "x", "1"})).str, "OK");
  absl::StatusOr<SyncRedis> db0 = SyncRedis::Connect(Url());
  ASSERT_TRUE(db0.ok()) << db0.status();
  EXPECT_EQ(Must(db0->Run({"GET", "x"})).type, RedisReply::Type::kNil);
  EXPECT_EQ(Must(db3->Run({"GET", "x"})).str, "1");
}

TEST_F(SyncRedisTest, ARefusedLoginIsUnavailableAndHidesThePassword) {
  const std::string url =
      absl::StrCat("redis://:wrong-secret@127.0.0.1:", server_->port());
  absl::StatusOr<SyncRedis> redis = SyncRedis::Connect(url);
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(redis.status().message(), HasSubstr("refused AUTH"));
  EXPECT_THAT(redis.status().message(), Not(HasSubstr("wrong-secret")));
}

TEST_F(SyncRedisTest, ABadUrlIsInvalidArgument) {
  EXPECT_EQ(SyncRedis::Connect("http://127.0.0.1:1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SyncRedisTest, NoServerIsUnavailable) {
  const int port = server_->port();
  server_->Stop();
  absl::StatusOr<SyncRedis> redis = SyncRedis::ConnectPort(port);
  ASSERT_FALSE(redis.ok());
  EXPECT_EQ(redis.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(redis.status().message(), HasSubstr("cannot connect"));
}

TEST_F(SyncRedisTest, ArgumentsAndRepliesAreBinarySafe) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const std::string key("k\0\r\n ", 5);
  const std::string value("\0\xff\r\n\"v", 6);
  EXPECT_EQ(Must(redis->Run({"SET", key, value})).str, "OK");
  const RedisReply r = Must(redis->Run({"GET", key}));
  EXPECT_EQ(r.type, RedisReply::Type::kString);
  EXPECT_EQ(r.str, value);
}

TEST_F(SyncRedisTest, AnErrorReplyIsAReply) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const RedisReply r = Must(redis->Run({"NOSUCHCOMMAND"}));
  EXPECT_TRUE(r.ErrorStartsWith("ERR")) << r.DebugString();
  EXPECT_EQ(redis->Run({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Must(redis->Run({"PING"})).str, "PONG");  // still usable
}

TEST_F(SyncRedisTest, Eval) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const RedisReply r =
      Must(redis->Eval("return {KEYS[1], ARGV[1], 7}", {"1", "key", "arg"}));
  EXPECT_EQ(r.DebugString(), "[key, arg, 7]");
}

TEST_F(SyncRedisTest, Info) {
  absl::StatusOr<SyncRedis> redis = server_->Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  ASSERT_EQ(Must(redis->Eval("return 1", {"0"})).integer, 1);
  absl::StatusOr<std::string> info = redis->Info("commandstats");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(ScriptCalls(*info), 1);
  info = redis->Info("server");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_NE(InfoText(*info, "redis_version"), "");
  EXPECT_EQ(InfoField(*info, "tcp_port"), server_->port());
}

TEST_F(SyncRedisTest, EveryCommandWaitsAtMostTheTimeout) {
  absl::StatusOr<SyncRedis> redis =
      SyncRedis::Connect(Url(), absl::Milliseconds(200));
  ASSERT_TRUE(redis.ok()) << redis.status();
  server_->Pause();
  const absl::Time start = absl::Now();
  const absl::StatusOr<RedisReply> r = redis->Run({"PING"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("did not answer PING"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  server_->Resume();
  // A connection that failed stays failed.
  EXPECT_EQ(redis->Run({"PING"}).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tokenlease::support
