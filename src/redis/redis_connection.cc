// The public RedisConnection: options validation and the client's owner.
#include "absl/strings/str_cat.h"
#include "redis/endpoint.h"
#include "redis/redis_client.h"
#include "tokenlease/redis.h"

namespace tokenlease {
namespace {

absl::Status CheckDuration(const char* field, absl::Duration value,
                           absl::Duration lo, absl::Duration hi) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RedisOptions.", field, " is ", absl::FormatDuration(value),
        "; it must be between ", absl::FormatDuration(lo), " and ",
        absl::FormatDuration(hi)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRedisOptions(const RedisOptions& o) {
  absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(o.url);
  if (!ep.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RedisOptions.url: ", ep.status().message()));
  }
  const absl::Duration ms = absl::Milliseconds(1);
  const absl::Duration minute = absl::Minutes(1);
  for (absl::Status s :
       {CheckDuration("connect_timeout", o.connect_timeout, ms, minute),
        CheckDuration("command_timeout", o.command_timeout, ms, minute),
        CheckDuration("reconnect_min_backoff", o.reconnect_min_backoff, ms,
                      minute),
        CheckDuration("reconnect_max_backoff", o.reconnect_max_backoff,
                      o.reconnect_min_backoff, minute),
        CheckDuration("shutdown_grace", o.shutdown_grace, absl::ZeroDuration(),
                      minute)}) {
    if (!s.ok()) return s;
  }
  if (o.max_pending < 2 || o.max_pending > (size_t{1} << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RedisOptions.max_pending is ", o.max_pending,
                     "; it must be between 2 and 16777216"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<RedisConnection>> RedisConnection::Create(
    const RedisOptions& options) {
  if (absl::Status s = ValidateRedisOptions(options); !s.ok()) return s;
  absl::StatusOr<internal::RedisEndpoint> ep =
      internal::ParseRedisUrl(options.url);
  if (!ep.ok()) return ep.status();
  absl::StatusOr<std::string> address = internal::ResolveHost(*ep);
  if (!address.ok()) return address.status();
  absl::StatusOr<std::unique_ptr<internal::RedisClient>> client =
      internal::RedisClient::Create(options, *ep, *std::move(address));
  if (!client.ok()) return client.status();
  return std::shared_ptr<RedisConnection>(
      new RedisConnection(options, *std::move(client)));
}

RedisConnection::RedisConnection(RedisOptions options,
                                 std::unique_ptr<internal::RedisClient> client)
    : options_(std::move(options)), client_(std::move(client)) {}

RedisConnection::~RedisConnection() = default;

std::string RedisConnection::endpoint() const {
  return client_->endpoint().Describe();
}

RedisStats RedisConnection::stats() const { return client_->stats(); }

bool RedisConnection::connected() const { return client_->connected(); }

namespace internal {

absl::StatusOr<std::shared_ptr<RedisConnection>> GivenOrNewConnection(
    std::shared_ptr<RedisConnection> given, const RedisOptions& options) {
  if (given != nullptr) return given;
  return RedisConnection::Create(options);
}

}  // namespace internal
}  // namespace tokenlease
