// The Redis client thread: a libevent loop owning async hiredis contexts.
//
// Callers on any thread Submit() commands; they go through a bounded
// lock-free queue, and one wake-up of the loop sends everything queued as
// one pipelined write. hiredis 0.14 has no timeouts, so every command and
// every connect attempt has a libevent timer of ours. A connection whose
// command timed out, or that broke, is freed from one of our own event
// callbacks (never inside a hiredis callback) and replaced after an
// exponential backoff with jitter.
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
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "redis/command_queue.h"
#include "redis/endpoint.h"
#include "redis/reply.h"
#include "tokenlease/redis.h"

struct event_base;
struct event;

namespace tokenlease::internal {

using ReplyCallback = absl::AnyInvocable<void(absl::StatusOr<RedisReply>)>;

// A Lua script known by its SHA1 (EVALSHA) with its body for EVAL after
// NOSCRIPT. Both views must outlive the client (they are static data).
struct LuaScript {
  absl::string_view sha1;
  absl::string_view body;
};

class RedisClient {
 public:
  // `options` must be valid (ValidateRedisOptions); `address` is the
  // numeric host (ResolveHost) or the socket path.
  static absl::StatusOr<std::unique_ptr<RedisClient>> Create(
      const RedisOptions& options, RedisEndpoint endpoint, std::string address);
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
  absl::Status SubmitScript(const LuaScript& script,
                            std::vector<std::string> args, ReplyCallback done,
                            absl::Duration timeout = absl::ZeroDuration());

  // Batching: between BeginBatch() and EndBatch() on one thread, submits
  // only queue; EndBatch() wakes the client thread once, so the whole batch
  // leaves in one write (unless the loop was already awake and picks part
  // of it up early). Other threads are unaffected.
  void BeginBatch() {
    batching_ = true;
    batched_ = 0;
  }
  void EndBatch() {
    batching_ = false;
    if (batched_ > 0) Wake();
  }

  RedisStats stats() const;
  bool connected() const {
    // relaxed: a monitoring hint only.
    return connected_.load(std::memory_order_relaxed);
  }
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  struct Command;
  struct Connection;
  class Loop;

  RedisClient(const RedisOptions& options, RedisEndpoint endpoint,
              std::string address);
  absl::Status Enqueue(Command* cmd);
  void Wake();

  static thread_local bool batching_;
  static thread_local int batched_;  // commands queued since BeginBatch()

  const RedisOptions options_;
  const RedisEndpoint endpoint_;
  const std::string address_;

  BoundedMpscQueue<Command> queue_;
  // Set by a producer that must wake the loop; cleared by the loop before
  // it drains, so at most one event_active per loop turn.
  std::atomic<bool> wake_pending_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> connected_{false};

  struct Counters {
    std::atomic<uint64_t> commands_sent{0}, replies{0}, timeouts{0},
        connects{0}, connect_failures{0}, script_reloads{0}, flushes{0};
  };
  Counters counters_;

  std::unique_ptr<Loop> loop_;  // loop-thread state
  std::thread thread_;
};

// `given` if the caller shares a connection, else a new one for `options`
// (the Create functions of the direct and leased limiters).
absl::StatusOr<std::shared_ptr<RedisConnection>> GivenOrNewConnection(
    std::shared_ptr<RedisConnection> given, const RedisOptions& options);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_REDIS_CLIENT_H_
