// A sentinel endpoint's subscription to +switch-master: when the sentinels
// name a new primary, the connection to the old one is dropped at once, and
// the reconnect asks them where the primary is (client_connect.cc). Without
// it a failover would be followed only at the next reconnect or READONLY
// reply: a demoted primary that stays up keeps its clients, and a client
// that sends nothing is told nothing.
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "redis/client_loop.h"
#include "redis/client_time.h"

namespace tokenlease::internal {

void RedisClient::Loop::StartWatch() {
  if (stopped_) return;
  std::string why;
  SentinelQuery* q = OpenSentinel(nodes_[0].get(), /*watch=*/true, &why);
  if (q == nullptr) {
    ScheduleWatch();
    return;
  }
  // hiredis keeps the callback for every message of the channel.
  redisAsyncCommand(q->ac, &Loop::OnSwitchCb, q, "SUBSCRIBE +switch-master");
}

// Another subscription after reconnect_max_backoff (the sentinel went away,
// or refused the login).
void RedisClient::Loop::ScheduleWatch() {
  if (stopped_ || evtimer_pending(watch_timer_, nullptr)) return;
  const timeval tv =
      ToTimeval(absl::ToInt64Nanoseconds(options().reconnect_max_backoff));
  evtimer_add(watch_timer_, &tv);
}

void RedisClient::Loop::OnWatchTimerCb(evutil_socket_t, short, void* arg) {
  auto* loop = static_cast<Loop*>(arg);
  loop->Purge();
  loop->StartWatch();
}

void RedisClient::Loop::OnSwitchCb(redisAsyncContext*, void* r,
                                   void* privdata) {
  auto* q = static_cast<SentinelQuery*>(privdata);
  if (r == nullptr) return;  // the connection ends: its disconnect retries
  q->loop->OnSwitch(q, static_cast<redisReply*>(r));
}

// ["subscribe", channel, n] confirms the subscription; ["message", channel,
// "<name> <old ip> <old port> <new ip> <new port>"] is a switch.
void RedisClient::Loop::OnSwitch(SentinelQuery* q, const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
      r->element[0]->type != REDIS_REPLY_STRING) {
    return;
  }
  const std::string kind(r->element[0]->str, r->element[0]->len);
  if (kind == "subscribe") {
    q->answered = true;  // subscribed: the connect timer's work is done
    FreeTimer(&q->timer);
    return;
  }
  if (kind != "message" || r->element[2]->type != REDIS_REPLY_STRING) return;
  const std::vector<std::string> f =
      absl::StrSplit(std::string(r->element[2]->str, r->element[2]->len), ' ');
  int port = 0;
  if (f.size() != 5 || f[0] != endpoint().service ||
      !absl::SimpleAtoi(f[4], &port)) {
    return;
  }
  Node* node = nodes_[0].get();
  if (node->host == f[3] && node->port == port) return;  // already there
  Log(node, absl::StrCat("the sentinels switched the primary to ", f[3], ":",
                         port, " (+switch-master)"));
  node->located = false;
  if (node->current != nullptr) {
    RequestTeardown(node->current,
                    absl::StrCat("the sentinels switched the primary to ", f[3],
                                 ":", port));
  }
}

}  // namespace tokenlease::internal
