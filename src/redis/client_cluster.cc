// The client thread's view of a Redis Cluster: reading the slot map
// (CLUSTER SLOTS) in the background and applying it.
//
// A read is asked for at start, after MOVED, after a node's connect
// failure, timeout or CLUSTERDOWN, and while a primary of the map is down
// (a failover may have replaced it). Reads are paced: at most one in
// flight (one that got no answer within command_timeout counts as lost:
// its late answer is ignored), at most one per topology_refresh_interval
// (a request in between arms one timer), and a failed read is retried at
// that pace until one succeeds. A read never blocks the loop: it is one
// pipelined command on a ready connection, and the map it returns is
// applied from an event of ours, outside the hiredis callback.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "redis/client_loop.h"
#include "redis/client_time.h"

namespace tokenlease::internal {

// What a CLUSTER SLOTS callback needs: which read it answers.
struct RedisClient::Loop::RefreshTag {
  Loop* loop;
  uint64_t generation;
  Node* asked;
};

bool RedisClient::Loop::ClusterNeedsRefresh() const {
  if (!have_map_) return true;
  for (const auto& n : nodes_) {
    if (n->serving && n->published == RedisHealth::kDown) return true;
  }
  return false;
}

void RedisClient::Loop::RequestRefresh() {
  if (!client_->cluster_ || stopped_) return;
  refresh_wanted_ = true;
  const int64_t now = SteadyNowNs();
  if (refresh_in_flight_) {
    if (now - last_refresh_ns_ <
        absl::ToInt64Nanoseconds(options().command_timeout)) {
      return;  // its answer will do
    }
    refresh_in_flight_ = false;  // lost; a late answer is ignored
    ++refresh_generation_;
  }
  const int64_t wait =
      last_refresh_ns_ +
      absl::ToInt64Nanoseconds(options().topology_refresh_interval) - now;
  if (wait > 0) {
    if (!evtimer_pending(refresh_timer_, nullptr)) {
      const timeval tv = ToTimeval(wait);
      evtimer_add(refresh_timer_, &tv);
    }
    return;
  }
  StartRefresh();
}

void RedisClient::Loop::OnRefreshTimerCb(evutil_socket_t, short, void* arg) {
  auto* loop = static_cast<Loop*>(arg);
  if (loop->refresh_wanted_) loop->RequestRefresh();
}

// Sends CLUSTER SLOTS on a ready connection, the nodes taken in turn
// (healthy ones first); with none ready, the read waits for the next
// connect (MarkReady asks again), and the seeds are connected again if
// the map had dropped them.
void RedisClient::Loop::StartRefresh() {
  Connection* conn = nullptr;
  for (int pass = 0; pass < 2 && conn == nullptr; ++pass) {
    for (size_t i = 0; i < nodes_.size() && conn == nullptr; ++i) {
      Node* n = nodes_[(refresh_rotor_ + i) % nodes_.size()].get();
      if (n->current == nullptr ||
          n->current->state != Connection::State::kReady ||
          (pass == 0 && n->published != RedisHealth::kHealthy)) {
        continue;
      }
      conn = n->current;
      refresh_rotor_ = (refresh_rotor_ + i + 1) % nodes_.size();
    }
  }
  if (conn == nullptr) {
    for (const HostPort& seed : endpoint().seeds) {
      Node* n = FindOrAddNode(seed.address, seed.port);
      if (!n->serving) {
        n->serving = true;
        if (n->current == nullptr &&
            !evtimer_pending(n->reconnect_timer, nullptr)) {
          StartConnect(n);
        }
      }
    }
    return;
  }
  auto* tag = new RefreshTag{this, ++refresh_generation_, conn->node};
  if (redisAsyncCommand(conn->ac, &Loop::OnSlotsCb, tag, "CLUSTER SLOTS") !=
      REDIS_OK) {
    delete tag;
    return;  // the connection is closing; a later request retries
  }
  refresh_wanted_ = false;
  refresh_in_flight_ = true;
  last_refresh_ns_ = SteadyNowNs();
  // relaxed: statistics.
  client_->counters_.topology_refreshes.fetch_add(1, std::memory_order_relaxed);
}

void RedisClient::Loop::OnSlotsCb(redisAsyncContext*, void* r, void* privdata) {
  auto* tag = static_cast<RefreshTag*>(privdata);
  tag->loop->OnSlots(tag->generation, tag->asked, static_cast<redisReply*>(r));
  delete tag;
}

void RedisClient::Loop::OnSlots(uint64_t generation, Node* asked,
                                redisReply* r) {
  if (generation != refresh_generation_ || stopped_) return;  // stale
  refresh_in_flight_ = false;
  absl::StatusOr<std::vector<SlotRange>> map =
      r == nullptr ? absl::UnavailableError("the connection closed")
                   : ParseClusterSlots(CopyReply(r), asked->host);
  if (map.ok() && map->empty()) {
    map =
        absl::UnavailableError("the node serves no slots (not in a cluster?)");
  }
  if (!map.ok()) {
    const std::string why = std::string(map.status().message());
    if (why != refresh_error_) {
      Log(asked,
          absl::StrCat(
              "cannot read the slot map: ", why, " (retrying at most every ",
              absl::FormatDuration(options().topology_refresh_interval), ")"));
      refresh_error_ = why;
    }
    refresh_wanted_ = true;
    const timeval tv = ToTimeval(
        absl::ToInt64Nanoseconds(options().topology_refresh_interval));
    if (!evtimer_pending(refresh_timer_, nullptr)) {
      evtimer_add(refresh_timer_, &tv);
    }
    return;
  }
  refresh_error_.clear();
  pending_map_ = *std::move(map);
  event_active(apply_map_, 0, 0);
}

void RedisClient::Loop::OnApplyMapCb(evutil_socket_t, short, void* arg) {
  static_cast<Loop*>(arg)->ApplyMap();
}

// Installs the map read last: each slot's primary; nodes no longer in it
// stop (their connection closes, their waiting commands go where their
// slots are now); waiting commands whose slot moved follow it.
void RedisClient::Loop::ApplyMap() {
  if (stopped_ || pending_map_.empty()) return;
  std::vector<Node*> owner(kClusterSlots, nullptr);
  std::string text;
  for (const SlotRange& r : pending_map_) {
    Node* n = FindOrAddNode(r.host, r.port);
    for (int s = r.first; s <= r.last; ++s) owner[s] = n;
    absl::StrAppend(&text, text.empty() ? "" : ", ", n->label, " ", r.first,
                    "-", r.last);
  }
  pending_map_.clear();
  slots_.swap(owner);
  have_map_ = true;
  if (text != map_text_) {
    if (options().log) {
      options().log(
          absl::StrCat("redis ", endpoint().Describe(), ": slot map: ", text));
    }
    map_text_ = std::move(text);
  }
  std::vector<bool> serving(nodes_.size(), false);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (int s = 0; s < kClusterSlots && !serving[i]; ++s) {
      serving[i] = slots_[s] == nodes_[i].get();
    }
  }
  std::vector<Command*> moved;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node* n = nodes_[i].get();
    const bool was = n->serving;
    n->serving = serving[i];
    if (was && !n->serving) {
      event_del(n->reconnect_timer);
      if (n->current != nullptr) {
        Teardown(n->current, "the node left the slot map");
      }
    } else if (!was && n->serving && n->current == nullptr) {
      StartConnect(n);
    }
    for (auto it = n->waiting.begin(); it != n->waiting.end();) {
      if ((*it)->ask_node == nullptr && Route(*it) != n) {
        moved.push_back(*it);
        it = n->waiting.erase(it);
      } else {
        ++it;
      }
    }
  }
  const uint64_t sent_before = sent_;
  for (Command* cmd : moved) Dispatch(cmd);
  if (sent_ != sent_before) CountFlush();
  PublishSlots();
  PublishHealth("the slot map changed");
}

}  // namespace tokenlease::internal
