// Instance discovery for FailureMode::kFailLocal: each instance of a group
// announces itself in Redis with a short TTL (lua/announce.lua) and learns
// how many instances are alive, so that the local share of a limit is the
// limit divided by the live instances instead of a configured count.
//
// One owner at a time drives it (Tick; the leased reconciler's thread, or a
// direct caller holding the limiter's mutex); replies arrive on the
// client's thread and are handed over through one atomic word, which the
// owner folds in at its next Tick (the owner alone keeps the history the
// count comes from).
#ifndef TOKENLEASE_SRC_REDIS_INSTANCE_CENSUS_H_
#define TOKENLEASE_SRC_REDIS_INSTANCE_CENSUS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "redis/redis_client.h"

namespace tokenlease::internal {

// The Redis key of a group's announcements: "{<prefix><group>}:instances"
// (a sorted set; docs/lua-protocol.md, announce.lua).
std::string InstancesKey(std::string_view prefix, std::string_view group);

// 16 random hex digits, unique per limiter instance (lease ids and
// announcements must not collide across processes sharing a limit).
std::string RandomInstanceId();

class InstanceCensus {
 public:
  // The most instances a count may report (the local share's range).
  static constexpr int32_t kMaxInstances = 65536;

  // `client` must outlive the census. `key`: InstancesKey(...);
  // `instance_id`: 1 to 128 bytes, unique per instance; `ttl`: how long an
  // announcement lasts (100 ms .. 10 min), renewed every ttl / 3;
  // `initial_count` (1 .. kMaxInstances) is the count until Redis first
  // answers.
  InstanceCensus(RedisClient* client, std::string key, std::string instance_id,
                 absl::Duration ttl, int32_t initial_count);
  InstanceCensus(const InstanceCensus&) = delete;
  InstanceCensus& operator=(const InstanceCensus&) = delete;

  // The owner only. Folds in the last reply, and sends an
  // announcement when one is due (at the first call, then every ttl / 3)
  // and none is unanswered. `now_ns`: the owner's clock (any monotonic
  // one; a manual clock in tests).
  void Tick(int64_t now_ns);

  // The count the local share divides by: the highest count Redis reported
  // within the ttl before its last reply, so that a count falls only after
  // a whole ttl (an instance's share does not grow while the announcements
  // of a Redis that restarted empty come back in, nor while Redis does not
  // answer). initial_count counts as reported at the first Tick (instances
  // starting together may not all have announced when the first reply
  // comes). 1 .. kMaxInstances. Any thread.
  int32_t count() const {
    // relaxed: a value on its own; readers need nothing it did not carry.
    return count_.load(std::memory_order_relaxed);
  }
  // Announcements Redis answered with a count, and those that failed
  // (no connection, a timeout, an error reply such as a wrong-type key).
  // Any thread.
  uint64_t answered() const;
  uint64_t failed() const;

  // Withdraws this instance's announcement (best effort, not waited for):
  // the others see their count drop at their next announcement instead of
  // after the ttl. Later Ticks announce nothing. The owner, once it no
  // longer calls Tick.
  void Leave();

 private:
  // What the client thread's reply callbacks write (they may outlive the
  // census: shared ownership).
  struct Replies {
    // The last count Redis reported and not yet folded in, or -1. Release
    // by the callback, acquire exchange by Tick: a plain hand-over.
    std::atomic<int64_t> latest{-1};
    // True while an announcement is unanswered. Release by the callback,
    // acquire by Tick (pairs with `latest`'s store before it).
    std::atomic<bool> in_flight{false};
    std::atomic<uint64_t> answered{0};  // relaxed: counters
    std::atomic<uint64_t> failed{0};
  };
  struct Seen {
    int64_t at_ns;
    int32_t count;
  };

  RedisClient* const client_;
  const std::string key_;
  const std::string instance_id_;
  const int64_t ttl_ns_;
  const std::shared_ptr<Replies> replies_;
  std::atomic<int32_t> count_;

  // The owner only.
  int64_t next_due_ns_ = INT64_MIN;
  bool left_ = false;
  std::deque<Seen> history_;  // the counts of the last ttl, oldest first
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_INSTANCE_CENSUS_H_
