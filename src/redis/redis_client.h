// src/redis: the Redis transport shared by the direct and leased modes
// (the public RedisConnection): the client thread below, the endpoint (a
// URL parsed once, host resolved off the loop), owned copies of replies,
// the encoding of the Lua scripts' calls and their replies
// (script_call.h), the embedded scripts (scripts.h) and instance discovery
// (instance_census.h). It knows nothing of leases or decisions beyond the
// scripts' reply shapes and the public stats types.
//
// The Redis client thread: a libevent loop owning async hiredis contexts.
//
// Callers on any thread Submit() commands; they go through a bounded
// lock-free queue, and one wake-up of the loop sends everything queued as
// one pipelined write per server.
//
// Servers: one (redis://, unix://); the primary the sentinels name
// (redis+sentinel://: asked again before every connect, checked with ROLE,
// dropped on READONLY, LOADING or +switch-master); or every primary of a
// Redis Cluster
// (redis+cluster://): a command goes to the primary of its first key's
// hash slot, by the slot map (CLUSTER SLOTS, read in the background, at
// most one read in flight and at most one per topology_refresh_interval);
// MOVED updates the slot at once and resends, ASK resends once with
// ASKING; each node has its own connection, backoff, health and scripts
// (NOSCRIPT is answered per node). rediss endpoints speak TLS on every
// connection (tls.h), the handshake within the connect attempt. Every
// command and every connect attempt (TCP, TLS handshake, login) has a
// libevent timer of ours: per-command deadlines that hiredis's one
// context-wide timeout cannot give. A command
// that times out fails, and the connection stays (its late reply is discarded).
// A connection that broke, or where nothing answered for dead_after, is freed
// from one of our own event callbacks (never inside a hiredis callback) and
// replaced after an exponential backoff with jitter; a replacement is usable
// once its login and a PING were answered.
//
// Health (RedisHealth) is judged on the client thread by a periodic check
// and at every reply, and published in one atomic for the limiters.
//
// Every submitted command's callback runs exactly once, on the client
// thread (or, for a command still queued when the client is destroyed, on
// the destroying thread). Callbacks must be quick and must not block: they
// hold up every other reply.
#ifndef TOKENLEASE_SRC_REDIS_REDIS_CLIENT_H_
#define TOKENLEASE_SRC_REDIS_REDIS_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/mpsc_queue.h"
#include "redis/cluster_map.h"
#include "redis/endpoint.h"
#include "redis/reply.h"
#include "tokenlease/redis.h"

struct event_base;
struct event;

namespace tokenlease::internal {

class CallerLanes;
class TlsContext;

using ReplyCallback = absl::AnyInvocable<void(absl::StatusOr<RedisReply>)>;

// A Lua script known by its SHA1 (EVALSHA) with its body for EVAL after
// NOSCRIPT. Both views must outlive the client (they are static data).
struct LuaScript {
  absl::string_view sha1;
  absl::string_view body;
};

class RedisClient {
 public:
  // `options` must be valid (RedisOptions::Validate); `endpoint` resolved
  // (ResolveHosts).
  static absl::StatusOr<std::unique_ptr<RedisClient>> Create(
      const RedisOptions& options, RedisEndpoint endpoint);
  // Stops accepting commands, lets submitted ones finish for up to
  // shutdown_grace, fails the rest with Cancelled, and joins the thread.
  ~RedisClient();

  // Any thread; never blocks. On OK, `done` will run exactly once. On error
  // (ResourceExhausted: queue full; Cancelled: shutting down) nothing was
  // queued and `done` is not called. timeout <= 0 means the default.
  absl::Status Submit(std::vector<std::string> argv, ReplyCallback done,
                      absl::Duration timeout = absl::ZeroDuration());
  // EVALSHA script.sha1 followed by `args` (numkeys, keys..., argv...);
  // NOSCRIPT (the script did not run) is answered by resending as EVAL.
  // `append_since`: one more argument, written when the command is sent:
  // the state_since_us of the connection it is sent on (acquire.lua's and
  // batch.lua's empty_since_us), so that a call queued before a reconnect
  // carries the time of the Redis that runs it.
  // `route_slot` (>= 0): a cluster sends it to the primary of that hash
  // slot (a call that declares no keys, such as batch.lua's cluster form);
  // otherwise the first key's slot routes it.
  absl::Status SubmitScript(const LuaScript& script,
                            std::vector<std::string> args, ReplyCallback done,
                            absl::Duration timeout = absl::ZeroDuration(),
                            bool append_since = false, int route_slot = -1);

  // Submits from one thread that leave in one write: submits through a
  // Batch only queue, and its destruction wakes the client thread once (a
  // loop already awake may pick part of the batch up early). A Batch
  // belongs to the thread that made it; other threads' submits are
  // unaffected.
  class Batch {
   public:
    explicit Batch(RedisClient* client) : client_(client) {}
    ~Batch() {
      if (queued_ > 0) client_->Wake();
    }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    // As RedisClient::SubmitScript, without waking the client thread.
    absl::Status SubmitScript(const LuaScript& script,
                              std::vector<std::string> args, ReplyCallback done,
                              absl::Duration timeout = absl::ZeroDuration(),
                              bool append_since = false, int route_slot = -1);
    // Commands queued through this batch so far.
    int queued() const { return queued_; }

   private:
    RedisClient* const client_;
    int queued_ = 0;
  };

  // A task run on the client thread every `interval` (RedisClient::Every)
  // until this object is destroyed. Destruction waits for a run in
  // progress on the client thread to end, so it must not happen inside the
  // task itself; it must happen before the client's destruction.
  class Periodic {
   public:
    ~Periodic();
    Periodic(const Periodic&) = delete;
    Periodic& operator=(const Periodic&) = delete;

   private:
    friend class RedisClient;
    explicit Periodic(absl::AnyInvocable<void()> task)
        : task_(std::move(task)) {}
    static void Run(int, short, void* arg);
    absl::AnyInvocable<void()> task_;
    event* ev_ = nullptr;
  };
  // Runs `task` on the client thread every `interval` (> 0; at least 1 ms
  // is sensible) from now on, until the returned object is destroyed. The
  // task must be quick and must not block, as every callback of the client
  // thread. Internal if the timer cannot be made.
  absl::StatusOr<std::unique_ptr<Periodic>> Every(
      absl::Duration interval, absl::AnyInvocable<void()> task);

  // Counts one blocking caller (DirectLimiter's TryAcquire, Reserve) from
  // its start to its return, whichever path it takes: lanes serve only
  // while such callers are no more than the lanes, so that many callers
  // pipeline on the client thread (one write, one Redis read for many
  // calls) instead of each paying an unpipelined round trip.
  class BlockingCall {
   public:
    explicit BlockingCall(RedisClient& client)
        : counter_(client.lanes_ != nullptr ? &client.blocking_calls_
                                            : nullptr) {
      // relaxed: a count read as a hint (either path decides correctly).
      if (counter_ != nullptr) {
        counter_->fetch_add(1, std::memory_order_relaxed);
      }
    }
    ~BlockingCall() {
      // relaxed: as above.
      if (counter_ != nullptr) {
        counter_->fetch_sub(1, std::memory_order_relaxed);
      }
    }
    BlockingCall(const BlockingCall&) = delete;
    BlockingCall& operator=(const BlockingCall&) = delete;

   private:
    std::atomic<int>* const counter_;
  };

  // A blocking caller's script call on a caller lane (caller_lanes.h), on
  // this thread, when the endpoint has lanes (RedisOptions::caller_lanes),
  // one is idle, blocking callers in flight (BlockingCall) are no more than
  // the lanes, and Redis is kHealthy; arguments as SubmitScript's.
  // nullopt: nothing was sent, use SubmitScript. Otherwise the reply or the
  // error that ended the call (the command may or may not have run).
  std::optional<absl::StatusOr<RedisReply>> CallOnLane(
      const LuaScript& script, const std::vector<std::string>& args,
      absl::Duration timeout = absl::ZeroDuration(), bool append_since = false);

  RedisStats stats() const;
  bool connected() const {
    // relaxed: a monitoring hint only.
    return connected_.load(std::memory_order_relaxed);
  }
  RedisHealth health() const {
    // relaxed: a hint for limiters (which failure mode applies); either
    // value gives a safe decision.
    return static_cast<RedisHealth>(health_.load(std::memory_order_relaxed));
  }
  // The health of the server that takes commands on hash slot `slot`
  // (HashSlot, LimitSlot): its primary's in a cluster, health() elsewhere.
  RedisHealth HealthOfSlot(uint16_t slot) const {
    if (!cluster_) return health();
    // relaxed: a hint, as health().
    return static_cast<RedisHealth>(
        slot_health_[slot % kClusterSlots].load(std::memory_order_relaxed));
  }
  // Why a connection could not be made or was lost, the latest reason
  // (what RedisOptions::log says after "no connection: "); "" once a
  // connection is usable again. For the errors of calls made while Redis
  // is down. Takes a mutex: not for the hot path.
  std::string LastConnectError() const;
  // Cluster only: which primary serves `slot` now, as a small number equal
  // for slots of one node (-1 while unknown). Calls for slots of one node
  // may share one batch call (keys in ARGV).
  int NodeOfSlot(uint16_t slot) const {
    if (!cluster_) return 0;
    // relaxed: a hint; a stale value sends a call to a node that fails the
    // items it does not serve ("non local key"), and they are retried.
    return slot_node_[slot % kClusterSlots].load(std::memory_order_relaxed);
  }
  // Asks the client thread for a new slot map (a cluster's; rate-limited as
  // every read). Any thread; for callers that saw a node answer for keys it
  // does not serve.
  void AskForSlotMap();
  // True for a Redis Cluster endpoint: a command's keys must share a slot.
  bool cluster() const { return cluster_; }
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Command;
  struct Connection;
  struct Node;
  struct SentinelQuery;
  struct WaitGroup;
  class Loop;

  RedisClient(const RedisOptions& options, RedisEndpoint endpoint);
  // Queues `cmd` (taking ownership) and, if `wake`, wakes the loop.
  absl::Status Enqueue(Command* cmd, bool wake);
  Command* NewScriptCommand(const LuaScript& script,
                            std::vector<std::string> args, ReplyCallback done,
                            absl::Duration timeout, bool append_since,
                            int route_slot);
  void Wake();

  const RedisOptions options_;
  const RedisEndpoint endpoint_;
  const bool cluster_;
  // rediss endpoints: the TLS settings every connection uses (tls.h);
  // nullptr otherwise.
  std::shared_ptr<const TlsContext> tls_;
  // Caller lanes; nullptr when the endpoint or options have none.
  std::unique_ptr<CallerLanes> lanes_;
  // BlockingCall's count, on its own cache line (every blocking call
  // writes it twice).
  alignas(64) std::atomic<int> blocking_calls_{0};
  // After a lane error: the client thread's reply count then; lanes serve
  // again once it has grown (Redis answered the client thread since), so
  // that a frozen or lost Redis is judged by the client thread's health
  // and not met again by each lane's connect. -1: lanes serve.
  std::atomic<int64_t> lanes_wait_for_reply_{-1};
  // Cluster only: the health of each slot's primary (kDown for a slot no
  // primary serves), written by the client thread.
  std::unique_ptr<std::atomic<uint8_t>[]> slot_health_;
  // Cluster only: each slot's primary's index (NodeOfSlot), -1 unknown.
  std::unique_ptr<std::atomic<int16_t>[]> slot_node_;
  // Set by AskForSlotMap, taken by the client thread's next wake-up.
  std::atomic<bool> map_wanted_{false};

  BoundedMpscQueue<Command> queue_;
  // Set by a producer that must wake the loop; cleared by the loop before
  // it drains, so at most one event_active per loop turn.
  std::atomic<bool> wake_pending_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> connected_{false};
  // kDegraded until the first connect attempt ends (HealthMonitor).
  std::atomic<uint8_t> health_{static_cast<uint8_t>(RedisHealth::kDegraded)};
  // LastConnectError: written by the client thread, read by callers.
  mutable std::mutex connect_error_mu_;
  std::string connect_error_;

  // relaxed, every counter (fetch_add from any thread, loads in stats()):
  // statistics, through which nothing is published.
  struct Counters {
    std::atomic<uint64_t> commands_sent{0}, replies{0}, timeouts{0},
        connects{0}, connect_failures{0}, script_reloads{0}, flushes{0},
        late_replies{0}, resets{0}, healthy{0}, degraded{0}, down{0},
        data_losses{0}, moved{0}, asked{0}, topology_refreshes{0},
        sentinel_queries{0}, role_refusals{0}, durability_waits{0},
        not_durable{0};
    std::atomic<int> nodes{0}, nodes_down{0};  // stored by the client thread
  };
  // RedisStats::round_trip, written by the client thread only (relaxed
  // load and store: one writer; readers' relaxed loads see each cell whole).
  struct RoundTripCounters {
    std::atomic<uint64_t> buckets[LatencyHistogram::kBuckets + 1] = {};
    std::atomic<uint64_t> sum_ns{0};
  };
  RoundTripCounters round_trip_;
  // RedisStats::state_since_us (written by the client thread; relaxed: a
  // value on its own).
  std::atomic<int64_t> state_since_us_{-1};
  Counters counters_;

  std::unique_ptr<Loop> loop_;  // loop-thread state
  std::thread thread_;
};

// The library's access to a RedisConnection's client (the public header
// does not expose the internal type).
struct RedisConnectionAccess {
  static RedisClient& Client(const RedisConnection& c) { return *c.client_; }
};

// `given` if the caller shares a connection, else a new one for `options`
// (the Create functions of the direct and leased limiters).
absl::StatusOr<std::shared_ptr<RedisConnection>> GivenOrNewConnection(
    std::shared_ptr<RedisConnection> given, const RedisOptions& options);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_REDIS_CLIENT_H_
