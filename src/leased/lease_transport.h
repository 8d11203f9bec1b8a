// What the reconciler needs from Redis: queue script calls during a step and
// send them together at its end. An interface, so that tests can drive the
// reconciler with a transport that answers when they say so
// (tests/leased/reconciler_test.cc).
#ifndef TOKENLEASE_SRC_LEASED_LEASE_TRANSPORT_H_
#define TOKENLEASE_SRC_LEASED_LEASE_TRANSPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "redis/redis_client.h"

namespace tokenlease::internal {

class LeaseTransport {
 public:
  virtual ~LeaseTransport() = default;
  // Queues one call of `script` with `args` (numkeys, keys..., argv...). On
  // OK, `done` runs exactly once, on any thread; on an error it never runs.
  virtual absl::Status Submit(const LuaScript& script,
                              std::vector<std::string> args,
                              ReplyCallback done) = 0;
  // Sends what was queued since the last Flush (one pipelined write).
  virtual void Flush() = 0;
};

// The transport of a RedisClient: a step's calls form one Batch.
class RedisLeaseTransport final : public LeaseTransport {
 public:
  // `client` must outlive the transport.
  explicit RedisLeaseTransport(RedisClient* client) : client_(client) {}

  absl::Status Submit(const LuaScript& script, std::vector<std::string> args,
                      ReplyCallback done) override {
    if (!batch_.has_value()) batch_.emplace(client_);
    return batch_->SubmitScript(script, std::move(args), std::move(done));
  }
  // Ending the batch wakes the client thread once (if anything was queued).
  void Flush() override { batch_.reset(); }

 private:
  RedisClient* const client_;
  std::optional<RedisClient::Batch> batch_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_TRANSPORT_H_
