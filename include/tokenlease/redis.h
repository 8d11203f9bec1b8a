// The connection to a shared Redis server: one background thread running an
// event loop that pipelines every caller's commands.
#ifndef TOKENLEASE_REDIS_H_
#define TOKENLEASE_REDIS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tokenlease {

namespace internal {
class RedisClient;
}  // namespace internal

// How to reach Redis. Every field has a usable default; Validate() says
// which one is out of range.
struct RedisOptions {
  // "redis://[[user]:password@]host[:port][/db]" or "unix:///path[?db=N]".
  // A host name is resolved once, when the connection is created.
  std::string url = "redis://127.0.0.1:6379";
  // Connect plus AUTH and SELECT must finish within this, else the attempt
  // is abandoned and retried after a backoff. 1 ms .. 1 min.
  absl::Duration connect_timeout = absl::Seconds(1);
  // Default deadline of a command, from submission to reply. A command that
  // misses it fails with DeadlineExceeded and the connection is reset (the
  // server is stuck or the network is). 1 ms .. 1 min.
  absl::Duration command_timeout = absl::Milliseconds(500);
  // Reconnect backoff: doubles from min to max, with jitter (each wait is
  // uniform in [d/2, d]). 1 ms <= min <= max <= 1 min.
  absl::Duration reconnect_min_backoff = absl::Milliseconds(10);
  absl::Duration reconnect_max_backoff = absl::Seconds(2);
  // Commands submitted but not yet picked up by the client thread; a submit
  // beyond it fails with ResourceExhausted. 2 .. 2^24 (rounded up to a
  // power of two).
  size_t max_pending = 1 << 16;
  // On destruction, how long commands already submitted may still finish
  // before they are failed with Cancelled. 0 .. 1 min.
  absl::Duration shutdown_grace = absl::Seconds(1);

  // OK, or InvalidArgument naming the field, its value and the accepted
  // range (including a malformed url).
  absl::Status Validate() const;
};

// Counters of one connection since creation. Approximate while traffic runs.
struct RedisStats {
  uint64_t commands_sent = 0;  // written to a connection (incl. resends)
  uint64_t replies = 0;        // replies received (incl. error replies)
  uint64_t timeouts = 0;       // commands failed with DeadlineExceeded
  uint64_t connects = 0;       // successful connects (after AUTH/SELECT)
  uint64_t connect_failures = 0;
  uint64_t script_reloads = 0;  // NOSCRIPT answered by resending as EVAL
  // Pipelined writes: loop turns that sent at least one command (all the
  // commands of one turn leave in one write). commands_sent / flushes is the
  // mean pipeline depth.
  uint64_t flushes = 0;
};

// A shared handle to one Redis client thread. Limiters that take a
// connection share its thread and pipeline; destroying the last handle
// stops the thread (see RedisOptions::shutdown_grace). Thread-safe.
// Asynchronous callbacks run on that thread: they must not block, and must
// not drop the last reference to the connection (or to a limiter that owns
// it): the process aborts with a message if they do.
class RedisConnection {
 public:
  // Validates `options`, resolves the host, and starts the client thread.
  // Does not wait for the server: connecting happens in the background, and
  // commands submitted meanwhile wait (up to their deadline) for it.
  static absl::StatusOr<std::shared_ptr<RedisConnection>> Create(
      const RedisOptions& options);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // The endpoint, without credentials ("redis://127.0.0.1:6379/0").
  std::string endpoint() const;
  const RedisOptions& options() const { return options_; }
  RedisStats stats() const;
  // True while a connection is established and logged in.
  bool connected() const;

  // For the library's own modes.
  internal::RedisClient& client() const { return *client_; }

 private:
  RedisConnection(RedisOptions options,
                  std::unique_ptr<internal::RedisClient> client);
  RedisOptions options_;
  std::unique_ptr<internal::RedisClient> client_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_REDIS_H_
