#include "redis/instance_census.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "redis/script_call.h"
#include "redis/scripts.h"

namespace tokenlease::internal {

std::string InstancesKey(std::string_view prefix, std::string_view group) {
  return LimitKeyTag(prefix, group) + ":instances";
}

std::string RandomInstanceId() {
  std::random_device rd;
  const uint64_t x = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(x));
  return buf;
}

InstanceCensus::InstanceCensus(RedisClient* client, std::string key,
                               std::string instance_id, absl::Duration ttl,
                               int32_t initial_count)
    : client_(client),
      key_(std::move(key)),
      instance_id_(std::move(instance_id)),
      ttl_ns_(absl::ToInt64Nanoseconds(ttl)),
      replies_(std::make_shared<Replies>()),
      count_(std::clamp(initial_count, 1, kMaxInstances)) {}

uint64_t InstanceCensus::answered() const {
  return replies_->answered.load(std::memory_order_relaxed);  // a count
}

uint64_t InstanceCensus::failed() const {
  return replies_->failed.load(std::memory_order_relaxed);  // a count
}

void InstanceCensus::Tick(int64_t now_ns) {
  // acquire: pairs with the callback's release store of the count.
  const int64_t latest =
      replies_->latest.exchange(-1, std::memory_order_acquire);
  // The initial count counts as seen at the first Tick: instances that
  // start together have not all announced yet, so a first reply may count
  // fewer (measured: an instance that then lost Redis enforced the whole
  // limit alone while its peer enforced half).
  if (history_.empty())
    history_.push_back({now_ns, count_.load(std::memory_order_relaxed)});
  if (latest >= 0) {
    history_.push_back({now_ns, static_cast<int32_t>(std::clamp<int64_t>(
                                    latest, 1, kMaxInstances))});
  }
  // Counts a ttl older than the newest go: the window ends at the last
  // reply, not now, so while Redis does not answer the count stays the
  // highest of the last ttl it did answer for.
  while (history_.size() > 1 &&
         history_.front().at_ns <= history_.back().at_ns - ttl_ns_) {
    history_.pop_front();
  }
  int32_t highest = 1;
  for (const Seen& s : history_) highest = std::max(highest, s.count);
  // relaxed: see count().
  count_.store(highest, std::memory_order_relaxed);

  // acquire: pairs with the callback's release store (its count was
  // folded in above, or will be at the next Tick).
  if (left_ || now_ns < next_due_ns_ ||
      replies_->in_flight.load(std::memory_order_acquire)) {
    return;
  }
  next_due_ns_ = now_ns + ttl_ns_ / 3;
  // relaxed: only this thread sets it, and the callback clears it.
  replies_->in_flight.store(true, std::memory_order_relaxed);
  std::vector<std::string> args = {
      "1",  // numkeys
      key_,
      "1",   // protocol
      "-1",  // now: the server's time
      instance_id_, absl::StrCat(std::max<int64_t>(1, ttl_ns_ / 1000000)),
  };
  absl::Status s = client_->SubmitScript(
      kAnnounceScript, std::move(args),
      [replies = replies_](absl::StatusOr<RedisReply> reply) {
        if (reply.ok() && reply->type == RedisReply::Type::kInteger) {
          replies->latest.store(reply->integer, std::memory_order_release);
          replies->answered.fetch_add(1, std::memory_order_relaxed);
        } else {
          replies->failed.fetch_add(1, std::memory_order_relaxed);
        }
        replies->in_flight.store(false, std::memory_order_release);
      });
  if (!s.ok()) {  // the client's queue is full, or it shuts down
    replies_->failed.fetch_add(1, std::memory_order_relaxed);
    replies_->in_flight.store(false, std::memory_order_relaxed);
  }
}

void InstanceCensus::Leave() {
  if (left_) return;
  left_ = true;
  std::vector<std::string> args = {"1", key_, "1", "-1", instance_id_, "0"};
  // Best effort: a failure only leaves the announcement to expire.
  client_
      ->SubmitScript(kAnnounceScript, std::move(args),
                     [](absl::StatusOr<RedisReply>) {})
      .IgnoreError();
}

}  // namespace tokenlease::internal
