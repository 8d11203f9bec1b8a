// The health of one Redis client (RedisHealth), judged from what the
// client thread saw: the connection's login, commands written, replies
// with their latency, timeouts. Pure: every input carries its time, so
// tests drive it with made-up clocks; the client thread owns it.
#ifndef TOKENLEASE_SRC_REDIS_HEALTH_MONITOR_H_
#define TOKENLEASE_SRC_REDIS_HEALTH_MONITOR_H_

#include <cstdint>
#include <string>

#include "tokenlease/redis.h"

namespace tokenlease::internal {

class HealthMonitor {
 public:
  // Uses slow_reply, degraded_hold, down_after and dead_after of `options`
  // (which must be valid).
  explicit HealthMonitor(const RedisOptions& options);

  // A connection's login and PING were answered: it carries commands now.
  void OnReady(int64_t now_ns);
  // The current connection is gone (`reason` says why, for people); its
  // unanswered commands will never be answered.
  void OnClosed(std::string reason);
  // A command was written to the current connection.
  void OnSent(int64_t now_ns);
  // A reply (or an error reply) came back on the current connection,
  // `latency_ns` after its command was written (late replies included:
  // they prove the server answers).
  void OnReply(int64_t now_ns, int64_t latency_ns);
  // A command's deadline passed before its reply.
  void OnTimeout(int64_t now_ns);

  struct Verdict {
    RedisHealth health = RedisHealth::kDown;
    std::string reason;  // why, for people (never a credential)
    // Nothing answered for dead_after while commands waited: the caller
    // resets the connection (then OnClosed).
    bool reset = false;
  };
  // The health at `now_ns`.
  Verdict Judge(int64_t now_ns) const;

  // Commands written to the current connection and not yet answered.
  int64_t in_flight() const { return in_flight_; }

 private:
  const int64_t slow_reply_ns_;
  const int64_t degraded_hold_ns_;
  const int64_t down_after_ns_;
  const int64_t dead_after_ns_;

  bool ready_ = false;
  // No connect attempt has ended yet: kDegraded, not kDown, so that
  // limiters created at start-up use their cold-key policies while the first
  // connect finishes (a first connect that fails makes it kDown).
  bool first_connect_ = true;
  std::string closed_reason_ = "not connected yet";
  int64_t in_flight_ = 0;
  // The last sign of life while commands wait: the last reply, or the
  // write that found nothing in flight.
  int64_t progress_ns_ = 0;
  int64_t last_bad_ns_ = INT64_MIN / 2;  // a slow reply or a timeout
  std::string last_bad_;                 // what it was
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_HEALTH_MONITOR_H_
