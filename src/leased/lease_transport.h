// What the reconciler needs from Redis: batch calls (lua/batch.lua, many
// keys' items in one script call) queued during a step and sent together at
// its end. An interface, so that tests can drive the reconciler with a
// transport that answers when they say so (tests/leased/reconciler_test.cc).
#ifndef TOKENLEASE_SRC_LEASED_LEASE_TRANSPORT_H_
#define TOKENLEASE_SRC_LEASED_LEASE_TRANSPORT_H_

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis/redis_client.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// One reply per item of a batch call, in order: what the single script
// (acquire.lua or release.lua) would have replied for that item, an error
// reply of that item alone, or the call's error for every item.
using BatchReplies = std::vector<absl::StatusOr<RedisReply>>;
using BatchCallback = absl::AnyInvocable<void(BatchReplies)>;

class LeaseTransport {
 public:
  virtual ~LeaseTransport() = default;
  // Queues one batch call of `items` (1 .. kMaxBatchItems). On OK, `done`
  // runs exactly once, on any thread, with one reply per item; on an error
  // it never runs.
  virtual absl::Status SubmitBatch(std::span<const BatchItem> items,
                                   BatchCallback done) = 0;
  // Sends what was queued since the last Flush (one pipelined write).
  virtual void Flush() = 0;
  // True while Redis cannot answer (RedisHealth::kDown; a cluster: every
  // primary). Any thread.
  virtual bool Down() const { return false; }
  // True while the server of limit key `name` cannot answer (a cluster:
  // the primary of its slot; elsewhere Down()). Any thread.
  virtual bool DownFor(std::string_view /*name*/) const { return Down(); }
  // True when one batch call may carry only keys of one group (Redis
  // Cluster: of one node), CallGroup says which.
  virtual bool GroupsCalls() const { return false; }
  virtual int64_t CallGroup(std::string_view /*name*/) const { return 0; }
};

// Splits the reply of a batch call of `n` items into one reply per item.
BatchReplies SplitBatchReply(absl::StatusOr<RedisReply> reply, size_t n);

// The transport of a RedisClient for one limit: a step's calls form one
// RedisClient::Batch.
class RedisLeaseTransport final : public LeaseTransport {
 public:
  // `client` must outlive the transport; `spec` must satisfy
  // ValidateScriptSpec. `start_empty`: acquires and batches carry the
  // connection's state_since_us (LeasedLimiterOptions::start_empty).
  RedisLeaseTransport(RedisClient* client, const LimitSpec& spec,
                      std::string key_prefix, bool start_empty = false)
      : client_(client),
        spec_(spec),
        key_prefix_(std::move(key_prefix)),
        start_empty_(start_empty) {}

  absl::Status SubmitBatch(std::span<const BatchItem> items,
                           BatchCallback done) override;
  // Ending the batch wakes the client thread once (if anything was queued).
  void Flush() override { batch_.reset(); }
  // Calls from now on carry `spec` (LeasedLimiter::UpdateSpec; the
  // reconciler's thread, as SubmitBatch).
  void SetSpec(const LimitSpec& spec) { spec_ = spec; }
  bool Down() const override { return client_->health() == RedisHealth::kDown; }
  bool DownFor(std::string_view name) const override {
    if (!client_->cluster()) return Down();
    return client_->HealthOfSlot(LimitSlot(key_prefix_, name)) ==
           RedisHealth::kDown;
  }
  // A cluster: the primary of the key's slot (a slot whose primary is not
  // known yet is a group of its own).
  bool GroupsCalls() const override { return client_->cluster(); }
  int64_t CallGroup(std::string_view name) const override {
    const uint16_t slot = LimitSlot(key_prefix_, name);
    const int node = client_->NodeOfSlot(slot);
    return node >= 0 ? node : int64_t{1} << 20 | slot;
  }

 private:
  RedisClient* const client_;
  LimitSpec spec_;
  const std::string key_prefix_;
  const bool start_empty_;
  std::optional<RedisClient::Batch> batch_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_LEASE_TRANSPORT_H_
