// Durable grants (RedisOptions::durable_replicas): a script command's reply
// is used only once WAIT says enough replicas hold its write.
//
// The script commands written to a connection in one loop turn form a
// group; at the end of the turn (an event of ours, before the pipelined
// write leaves: libevent runs active events before it polls the socket)
// one WAIT follows them on the same connection. Replies come in order, so
// every member's reply is held when the WAIT answers: with at least
// durable_replicas acknowledgements the held replies are delivered, else
// each member fails with Unavailable and its limit's failure mode decides.
// A member resent elsewhere (NOSCRIPT, MOVED, ASK) leaves its group and
// joins the next one; one that finishes otherwise (an error reply, a
// deadline, a lost connection) leaves it too.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "redis/client_loop.h"

namespace tokenlease::internal {

void RedisClient::Loop::JoinGroup(Connection* conn, Command* cmd) {
  LeaveGroup(cmd);
  if (conn->open_group == nullptr) {
    conn->open_group = new WaitGroup{this, conn, {}};
    waits_due_.push_back(conn);
    event_active(waits_due_event_, 0, 0);
  }
  conn->open_group->members.push_back(cmd);
  cmd->group = conn->open_group;
}

void RedisClient::Loop::LeaveGroup(Command* cmd) {
  if (cmd->group == nullptr) return;
  for (Command*& m : cmd->group->members) {
    if (m == cmd) m = nullptr;
  }
  cmd->group = nullptr;
}

void RedisClient::Loop::OnWaitsDueCb(evutil_socket_t, short, void* arg) {
  static_cast<Loop*>(arg)->SendWaits();
}

void RedisClient::Loop::SendWaits() {
  std::vector<Connection*> due;
  due.swap(waits_due_);
  const long long timeout_ms =
      absl::ToInt64Milliseconds(options().durable_timeout);
  for (Connection* conn : due) {
    WaitGroup* group = conn->open_group;
    conn->open_group = nullptr;
    if (group == nullptr) continue;
    if (!conn->hiredis_done &&
        redisAsyncCommand(conn->ac, &Loop::OnWaitCb, group, "WAIT %d %lld",
                          options().durable_replicas, timeout_ms) == REDIS_OK) {
      // relaxed: statistics.
      client_->counters_.durability_waits.fetch_add(1,
                                                    std::memory_order_relaxed);
      continue;
    }
    // The connection closes: its members fail with it (their NULL replies)
    // or, already replied, here.
    OnWait(group, nullptr);
  }
}

void RedisClient::Loop::OnWaitCb(redisAsyncContext*, void* r, void* privdata) {
  auto* group = static_cast<WaitGroup*>(privdata);
  group->loop->OnWait(group, static_cast<redisReply*>(r));
}

void RedisClient::Loop::OnWait(WaitGroup* group, redisReply* r) {
  const int wanted = options().durable_replicas;
  const bool durable =
      r != nullptr && r->type == REDIS_REPLY_INTEGER && r->integer >= wanted;
  const std::string why =
      r == nullptr ? "the connection closed before WAIT answered"
      : r->type == REDIS_REPLY_INTEGER
          ? absl::StrCat(r->integer, " of ", wanted,
                         " replicas acknowledged within ",
                         absl::FormatDuration(options().durable_timeout))
          : absl::StrCat("WAIT failed: ", CopyReply(r).DebugString());
  // By index: finishing a member clears its own entry (LeaveGroup).
  for (size_t i = 0; i < group->members.size(); ++i) {
    Command* cmd = group->members[i];
    if (cmd == nullptr) continue;
    group->members[i] = nullptr;
    cmd->group = nullptr;
    if (!cmd->held) continue;  // still in hiredis: its own reply decides
    cmd->held = false;
    if (durable) {
      Finish(cmd, std::move(cmd->held_reply));
    } else {
      // relaxed: statistics.
      client_->counters_.not_durable.fetch_add(1, std::memory_order_relaxed);
      Fail(cmd, absl::UnavailableError(absl::StrCat(
                    "the write is not durable: ", why,
                    " (RedisOptions::durable_replicas); its grant is not "
                    "used")));
    }
  }
  delete group;
}

}  // namespace tokenlease::internal
