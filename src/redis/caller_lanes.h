// Caller lanes (RedisOptions::caller_lanes): a few synchronous hiredis
// connections that a blocking caller uses on its own thread, so that one
// decision costs one round trip and no hand-off to the client thread and
// back (two thread wake-ups). A caller takes an idle lane without waiting
// (one exchange on its flag); if none is idle, or lanes are paused after an
// error, it gets no lane and takes the client thread's pipelined path, so
// many callers in flight keep pipelining.
//
// A lane connects lazily, on the thread of the call that finds it closed,
// within RedisOptions::connect_timeout (login as the client thread's
// connections do: TLS, AUTH, SELECT, PING, the data-loss marker). A lane
// that errs is closed (its socket may hold a late reply) and every lane is
// paused for a backoff (reconnect_min_backoff doubling to
// reconnect_max_backoff, with jitter), during which calls take the client
// thread's path and feed its health judgement. A lane idle for 10 ms or
// more whose server closed it (a restart) is noticed before the write (a
// non-blocking peek) and reconnected, without failing the call.
#ifndef TOKENLEASE_SRC_REDIS_CALLER_LANES_H_
#define TOKENLEASE_SRC_REDIS_CALLER_LANES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "redis/endpoint.h"
#include "redis/reply.h"
#include "tokenlease/redis.h"

struct redisContext;

namespace tokenlease::internal {

class TlsContext;
struct LuaScript;

class CallerLanes {
 public:
  // `endpoint` must be a single server (kSingle), resolved; `tls` non-null
  // for a rediss endpoint. options.caller_lanes > 0.
  CallerLanes(const RedisOptions& options, const RedisEndpoint& endpoint,
              std::shared_ptr<const TlsContext> tls);
  // No call may be in progress (the owner outlives its callers).
  ~CallerLanes();
  CallerLanes(const CallerLanes&) = delete;
  CallerLanes& operator=(const CallerLanes&) = delete;

  // EVALSHA script.sha1 `args` (NOSCRIPT: EVAL, once) on an idle lane, on
  // the calling thread, within `timeout` (> 0), with the lane server's
  // data-loss marker time appended if `append_since` (as
  // RedisClient::SubmitScript). nullopt: no lane was taken (none idle,
  // paused, or its connect failed): nothing was sent, take the client
  // thread's path. Otherwise the reply, or the error (DeadlineExceeded,
  // Unavailable) that closed the lane; the command may or may not have run.
  std::optional<absl::StatusOr<RedisReply>> Call(
      const LuaScript& script, const std::vector<std::string>& args,
      absl::Duration timeout, bool append_since);

  // Adds the lanes' counters to `s` (RedisStats's lane_* fields, and
  // script_reloads).
  void Fill(RedisStats* s) const;
  // Lane errors so far (RedisStats::lane_errors).
  uint64_t errors() const {
    // relaxed: statistics, and a hint for RedisClient::CallOnLane.
    return errors_.load(std::memory_order_relaxed);
  }

 private:
  struct Lane;
  // On a lane this thread holds: opens it if closed or found closed by the
  // server. False (lane closed, pause set) if that fails.
  bool Ready(Lane* lane, int64_t now);
  bool Connect(Lane* lane, std::string* why);
  void Close(Lane* lane);
  // An error on a lane: closes it and pauses every lane for a backoff.
  void Pause();

  const RedisOptions options_;
  const RedisEndpoint endpoint_;
  const std::shared_ptr<const TlsContext> tls_;
  const std::unique_ptr<Lane[]> lanes_;
  const int count_;
  // Steady-clock ns before which no lane is taken (after an error).
  std::atomic<int64_t> paused_until_ns_{0};
  // Errors since the last success: the backoff's exponent.
  std::atomic<int> backoff_attempt_{0};
  // relaxed, every counter: statistics, through which nothing is published.
  std::atomic<uint64_t> calls_{0}, connects_{0}, errors_{0}, reloads_{0};
  std::atomic<int> open_{0};
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_CALLER_LANES_H_
