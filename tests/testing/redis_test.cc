#include "testing/redis_test.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tokenlease::testing {
namespace {

// The environment's server (gtest owns the environment itself).
RedisServer* shared_server = nullptr;

}  // namespace

void RedisEnvironment::SetUp() {
  absl::StatusOr<std::unique_ptr<RedisServer>> server = StartRedisServer();
  ASSERT_TRUE(server.ok()) << "the shared redis-server: " << server.status();
  shared_server = server->release();
}

void RedisEnvironment::TearDown() {
  delete shared_server;
  shared_server = nullptr;
}

RedisServer* RedisEnvironment::server() { return shared_server; }

std::shared_ptr<RedisConnection> ConnectFast(const std::string& url,
                                             RedisOptions options) {
  options.url = url;
  options.reconnect_min_backoff = absl::Milliseconds(5);
  options.reconnect_max_backoff = absl::Milliseconds(100);
  auto conn = RedisConnection::Create(options);
  EXPECT_TRUE(conn.ok()) << conn.status();
  return conn.ok() ? *conn : nullptr;
}

std::function<void(std::string_view)> LogLines::Sink() {
  return [this](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
  };
}

std::vector<std::string> LogLines::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

std::vector<std::string> LogLines::NoDecision() const {
  std::vector<std::string> out;
  for (std::string& l : lines()) {
    if (absl::StartsWith(l, "Redis gave no decision: ")) {
      out.push_back(std::move(l));
    }
  }
  return out;
}

DecisionSource ModeSource(FailureMode mode) {
  switch (mode) {
    case FailureMode::kFailClosed:
      return DecisionSource::kFailClosed;
    case FailureMode::kFailOpen:
      return DecisionSource::kFailOpen;
    case FailureMode::kFailLocal:
      return DecisionSource::kFallback;
  }
  ADD_FAILURE() << "unknown failure mode " << static_cast<int>(mode);
  return DecisionSource::kInvalidArgument;
}

void RedisTest::SetUp() {
  RedisServer* shared = RedisEnvironment::server();
  ASSERT_NE(shared, nullptr)
      << "no shared redis-server: link tests/testing/redis_main.cc (it "
         "registers RedisEnvironment)";
  UseServer(shared);
  absl::StatusOr<std::string> flushed = shared->Command({"FLUSHALL"});
  ASSERT_TRUE(flushed.ok()) << flushed.status();
  ASSERT_EQ(*flushed, "OK");
}

void RedisTest::UseServer(RedisServer* server) {
  server_ = server;
  client_.reset();
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  prefix_ = absl::StrCat(info->test_suite_name(), ".", info->name());
  if (prefix_.size() > 200) prefix_.resize(200);  // key_prefix <= 256 bytes
  prefix_ += ":";
}

std::shared_ptr<RedisConnection> RedisTest::NewConnection(
    std::string_view suffix) {
  return ConnectFast(url() + std::string(suffix));
}

SyncClient& RedisTest::client() {
  if (client_ == nullptr) {
    client_ = std::make_unique<SyncClient>(server_->port());
  }
  return *client_;
}

void PrivateRedisTest::SetUp() {
  absl::StatusOr<std::unique_ptr<RedisServer>> server =
      StartRedisServer(options_);
  ASSERT_TRUE(server.ok()) << "a private redis-server: " << server.status();
  own_ = *std::move(server);
  UseServer(own_.get());
}

}  // namespace tokenlease::testing
