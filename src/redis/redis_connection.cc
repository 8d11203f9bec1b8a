// The public RedisConnection: options validation and the client's owner.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/options_checks.h"
#include "redis/endpoint.h"
#include "redis/redis_client.h"
#include "redis/tls.h"
#include "tokenlease/redis.h"

namespace tokenlease {

const char* RedisHealthName(RedisHealth h) {
  switch (h) {
    case RedisHealth::kHealthy:
      return "healthy";
    case RedisHealth::kDegraded:
      return "degraded";
    case RedisHealth::kDown:
      return "down";
  }
  return "unknown";
}

absl::Status RedisOptions::Validate() const {
  absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(url);
  if (!ep.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RedisOptions.url: ", ep.status().message()));
  }
  if (absl::Status s = internal::ValidateTlsOptions(tls, ep->tls); !s.ok()) {
    return s;
  }
  using internal::CheckDuration;
  const absl::Duration ms = absl::Milliseconds(1);
  const absl::Duration minute = absl::Minutes(1);
  return internal::FirstError({
      CheckDuration("RedisOptions.connect_timeout", connect_timeout, ms,
                    minute),
      CheckDuration("RedisOptions.command_timeout", command_timeout, ms,
                    minute),
      CheckDuration("RedisOptions.slow_reply", slow_reply, ms, minute),
      CheckDuration("RedisOptions.degraded_hold", degraded_hold,
                    absl::ZeroDuration(), minute),
      CheckDuration("RedisOptions.down_after", down_after, ms,
                    absl::Minutes(10)),
      CheckDuration("RedisOptions.dead_after", dead_after, down_after,
                    absl::Minutes(10)),
      CheckDuration("RedisOptions.reconnect_min_backoff", reconnect_min_backoff,
                    ms, minute),
      CheckDuration("RedisOptions.reconnect_max_backoff", reconnect_max_backoff,
                    reconnect_min_backoff, minute),
      CheckDuration("RedisOptions.shutdown_grace", shutdown_grace,
                    absl::ZeroDuration(), minute),
      CheckDuration("RedisOptions.topology_refresh_interval",
                    topology_refresh_interval, ms, minute),
      internal::CheckInteger("RedisOptions.durable_replicas", durable_replicas,
                             0, 16),
      durable_replicas == 0
          ? absl::OkStatus()
          : CheckDuration("RedisOptions.durable_timeout", durable_timeout, ms,
                          command_timeout - absl::Nanoseconds(1)),
      internal::CheckInteger("RedisOptions.caller_lanes", caller_lanes, 0, 64),
      internal::CheckInteger(
          "RedisOptions.max_pending",
          static_cast<int64_t>(std::min<size_t>(max_pending, size_t{1} << 40)),
          2, int64_t{1} << 24),
  });
}

absl::StatusOr<std::shared_ptr<RedisConnection>> RedisConnection::Create(
    const RedisOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  absl::StatusOr<internal::RedisEndpoint> ep =
      internal::ParseRedisUrl(options.url);
  if (!ep.ok()) return ep.status();
  if (absl::Status s = internal::ResolveHosts(&*ep); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<internal::RedisClient>> client =
      internal::RedisClient::Create(options, *std::move(ep));
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

RedisHealth RedisConnection::health() const { return client_->health(); }

namespace internal {

absl::StatusOr<std::shared_ptr<RedisConnection>> GivenOrNewConnection(
    std::shared_ptr<RedisConnection> given, const RedisOptions& options) {
  if (given != nullptr) return given;
  return RedisConnection::Create(options);
}

}  // namespace internal
}  // namespace tokenlease
