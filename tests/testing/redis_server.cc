#include "testing/redis_server.h"

#include <gtest/gtest.h>

#include <utility>

namespace tokenlease::testing {

absl::StatusOr<std::string> RedisServer::Command(
    const std::vector<std::string>& args) {
  absl::StatusOr<support::SyncRedis> redis = Connect();
  if (!redis.ok()) return redis.status();
  absl::StatusOr<internal::RedisReply> reply = redis->Run(args);
  if (!reply.ok()) return reply.status();
  return reply->DebugString();
}

SyncClient::SyncClient(int port) {
  absl::StatusOr<support::SyncRedis> redis =
      support::SyncRedis::ConnectPort(port, kTimeout);
  EXPECT_TRUE(redis.ok()) << redis.status();
  if (redis.ok()) redis_ = *std::move(redis);
}

internal::RedisReply SyncClient::Run(const std::vector<std::string>& args) {
  if (!redis_.has_value())
    return Check(absl::UnavailableError("not connected"));
  return Check(redis_->Run(args));
}

internal::RedisReply SyncClient::Eval(std::string_view script,
                                      const std::vector<std::string>& args) {
  if (!redis_.has_value())
    return Check(absl::UnavailableError("not connected"));
  return Check(redis_->Eval(script, args));
}

internal::RedisReply SyncClient::Check(
    absl::StatusOr<internal::RedisReply> reply) {
  if (reply.ok()) return *std::move(reply);
  ADD_FAILURE() << "the test's Redis client: " << reply.status();
  return internal::RedisReply{};
}

}  // namespace tokenlease::testing
