// The client thread's health judgement: per node (HealthMonitor), published
// per slot (cluster) and as the client's one RedisHealth.
#include "absl/strings/str_cat.h"
#include "redis/client_loop.h"
#include "redis/client_time.h"

namespace tokenlease::internal {

void RedisClient::Loop::OnHealthTimerCb(evutil_socket_t, short, void* arg) {
  static_cast<Loop*>(arg)->OnHealthTimer();
}

void RedisClient::Loop::OnHealthTimer() {
  Purge();
  const int64_t now = SteadyNowNs();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    UpdateHealth(nodes_[i].get(), now, /*may_reset=*/true);
  }
  // A primary that is down may have been replaced by a failover: the map
  // is read again (at its rate) until the node answers or leaves the map.
  if (client_->cluster_ && ClusterNeedsRefresh()) RequestRefresh();
}

// Judges `node`'s health now, resets a dead connection (`may_reset`: only
// from our own events, never inside a hiredis callback), and publishes a
// change.
void RedisClient::Loop::UpdateHealth(Node* node, int64_t now, bool may_reset) {
  if (stopped_) return;
  HealthMonitor::Verdict v = node->health.Judge(now);
  if (may_reset && v.reset && node->current != nullptr &&
      node->current->state == Connection::State::kReady) {
    // relaxed: statistics.
    client_->counters_.resets.fetch_add(1, std::memory_order_relaxed);
    Log(node, absl::StrCat("resetting the connection: ", v.reason));
    Teardown(node->current, v.reason);
    v = node->health.Judge(now);
  }
  if (v.health == node->published) return;
  const RedisHealth before = node->published;
  node->published = v.health;
  if (!client_->cluster_) {
    PublishHealth(v.reason);
    return;
  }
  Log(node, absl::StrCat(RedisHealthName(before), " -> ",
                         RedisHealthName(v.health), ": ", v.reason));
  PublishSlots();
  PublishHealth(absl::StrCat(node->label, " ", RedisHealthName(v.health), ": ",
                             v.reason));
}

// The client's one health from its nodes' (a cluster: kHealthy if every
// primary of the map is, kDown if every one is, else kDegraded), and a
// change published: atomic, counters, callback, log line.
void RedisClient::Loop::PublishHealth(const std::string& why) {
  RedisHealth now = nodes_[0]->published;
  std::string reason = why;
  if (client_->cluster_) {
    int serving = 0, down = 0, healthy = 0;
    for (const auto& n : nodes_) {
      if (!n->serving) continue;
      ++serving;
      down += n->published == RedisHealth::kDown;
      healthy += n->published == RedisHealth::kHealthy;
    }
    // relaxed: statistics.
    client_->counters_.nodes.store(serving, std::memory_order_relaxed);
    client_->counters_.nodes_down.store(down, std::memory_order_relaxed);
    now = serving == 0 || down == serving ? RedisHealth::kDown
          : healthy == serving            ? RedisHealth::kHealthy
                                          : RedisHealth::kDegraded;
    reason = absl::StrCat(why, " (", down, " of ", serving, " primaries down)");
  }
  const RedisHealth before = client_->health();
  if (now == before) return;
  // relaxed: a hint for limiters (RedisClient::health).
  client_->health_.store(static_cast<uint8_t>(now), std::memory_order_relaxed);
  if (now == RedisHealth::kHealthy) {
    client_->counters_.healthy.fetch_add(1, std::memory_order_relaxed);
  } else if (now == RedisHealth::kDegraded) {
    client_->counters_.degraded.fetch_add(1, std::memory_order_relaxed);
  } else {
    client_->counters_.down.fetch_add(1, std::memory_order_relaxed);
  }
  const std::string line = absl::StrCat(RedisHealthName(before), " -> ",
                                        RedisHealthName(now), ": ", reason);
  if (options().log) {
    options().log(absl::StrCat("redis ", endpoint().Describe(), ": ", line));
  }
  if (options().on_health_change) {
    options().on_health_change(RedisHealthEvent{before, now, reason});
  }
  if (client_->cluster_ && !have_map_) PublishSlots();
}

// Each slot's health: its primary's; before the first map, the client's
// (as a single server's before its first connect).
void RedisClient::Loop::PublishSlots() {
  const uint8_t unknown =
      static_cast<uint8_t>(have_map_ ? RedisHealth::kDown : client_->health());
  for (int s = 0; s < kClusterSlots; ++s) {
    const Node* owner = slots_[s];
    // relaxed: hints (HealthOfSlot, NodeOfSlot).
    client_->slot_health_[s].store(
        owner != nullptr ? static_cast<uint8_t>(owner->published) : unknown,
        std::memory_order_relaxed);
    client_->slot_node_[s].store(owner != nullptr ? NodeIndex(owner) : -1,
                                 std::memory_order_relaxed);
  }
}

void RedisClient::Loop::Log(const Node* node, const std::string& line) {
  if (options().log) {
    options().log(absl::StrCat("redis ", Where(node), ": ", line));
  }
}

}  // namespace tokenlease::internal
