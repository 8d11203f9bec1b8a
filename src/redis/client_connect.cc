// The client thread's connections: connect and log in (AUTH, SELECT, ROLE
// for a sentinel's primary, PING, the data-loss marker), teardown out of
// hiredis frames, reconnect with backoff, and asking the sentinels which
// server is the primary.
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "redis/client_loop.h"
#include "redis/client_time.h"
#include "redis/scripts.h"
#include "redis/tls.h"

namespace tokenlease::internal {
void RedisClient::Loop::StartConnect(Node* node) {
  if (stopped_) return;
  if (sentinel() && !node->located) {
    AskSentinel(node);
    return;
  }
  auto owned = std::make_unique<Connection>();
  Connection* conn = owned.get();
  conn->loop = this;
  conn->node = node;
  redisAsyncContext* ac =
      node->unix_socket ? redisAsyncConnectUnix(node->host.c_str())
                        : redisAsyncConnect(node->host.c_str(), node->port);
  auto failed = [&](std::string why) {
    node->last_error = std::move(why);
    if (ac) redisAsyncFree(ac);
    client_->counters_.connect_failures.fetch_add(1, std::memory_order_relaxed);
    node->located = false;
    ScheduleReconnect(node);
    RequestRefresh();
  };
  if (ac == nullptr || ac->err) {
    failed(ac ? ac->errstr : "out of memory");
    return;
  }
  if (client_->tls_ != nullptr) {
    // Right after the connect starts, before the event adapter (hiredis
    // #1002); the handshake then runs within the connect timer below.
    absl::StatusOr<ssl_st*> ssl = client_->tls_->Attach(&ac->c, node->tls_name);
    if (!ssl.ok()) {
      failed(std::string(ssl.status().message()));
      return;
    }
    conn->ssl = *ssl;
  }
  if (redisLibeventAttach(ac, base_) != REDIS_OK) {
    // Only fails if the context already has an event adapter (a hiredis
    // misuse): give up this attempt, retry after the backoff.
    failed("cannot attach the connection to the event loop");
    return;
  }
  conn->ac = ac;
  ac->data = conn;
  // A corrupt array header must not allocate gigabytes (reply.h).
  LimitReplyArrays(ac->c.reader);
  redisAsyncSetConnectCallback(ac, &Loop::OnConnectCb);
  redisAsyncSetDisconnectCallback(ac, &Loop::OnDisconnectCb);
  conn->connect_timer = evtimer_new(base_, &Loop::OnConnectTimerCb, conn);
  conn->close_event = event_new(base_, -1, 0, &Loop::OnCloseEventCb, conn);
  const timeval tv =
      ToTimeval(absl::ToInt64Nanoseconds(options().connect_timeout));
  evtimer_add(conn->connect_timer, &tv);
  const RedisEndpoint& ep = endpoint();
  // AUTH and SELECT are buffered by hiredis and written once connected.
  if (!ep.password.empty()) {
    ++conn->handshake_left;
    if (ep.user.empty()) {
      redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "AUTH %b",
                        ep.password.data(), ep.password.size());
    } else {
      redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "AUTH %b %b",
                        ep.user.data(), ep.user.size(), ep.password.data(),
                        ep.password.size());
    }
  }
  if (ep.db != 0) {
    ++conn->handshake_left;
    redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "SELECT %d", ep.db);
  }
  if (sentinel()) {
    // The sentinels' answer may be stale (a failover in progress): only a
    // server that says it is the primary takes commands.
    ++conn->handshake_left;
    redisAsyncCommand(ac, &Loop::OnRoleCb, conn, "ROLE");
  }
  // A TCP accept (a frozen server's kernel accepts too) is not a working
  // Redis; its answer to PING is.
  ++conn->handshake_left;
  redisAsyncCommand(ac, &Loop::OnHandshakeCb, conn, "PING");
  if (!client_->cluster_) {
    // The data-loss marker (since.lua), before any call of this
    // connection: its calls carry the time it gives (append_since). Not
    // in a cluster: its one key lives on one node (docs/operations.md).
    ++conn->handshake_left;
    redisAsyncCommand(ac, &Loop::OnSinceCb, conn, "EVAL %b 1 %s 1",
                      kSinceScript.body.data(), kSinceScript.body.size(),
                      kSinceKey);
  }
  node->current = conn;
  conns_.push_back(std::move(owned));
}

void RedisClient::Loop::OnConnectCb(const redisAsyncContext* ac, int status) {
  auto* conn = static_cast<Connection*>(ac->data);
  conn->loop->OnConnect(conn, ac, status);
}

void RedisClient::Loop::OnConnect(Connection* conn, const redisAsyncContext* ac,
                                  int status) {
  if (status == REDIS_OK) return;
  // hiredis frees the context right after this callback and calls no
  // disconnect callback.
  Node* node = conn->node;
  // The TCP connect; a TLS handshake's failures end in the disconnect
  // callback, but a reset that comes before the connect is seen (a TLS
  // server refusing us at once) lands here.
  node->last_error = conn->ssl != nullptr && PeerReset(&ac->c)
                         ? LoginFailure(conn, ac, "connect failed")
                         : ErrorText(ac, "connect failed");
  MarkClosed(conn);
  conn->ac = nullptr;
  client_->counters_.connect_failures.fetch_add(1, std::memory_order_relaxed);
  ScheduleReconnect(node);
  RequestRefresh();
}

// Why `conn` ended before its login finished: TLS's precise reason when
// it has one; else hiredis's text, with a hint when a plaintext login met
// a server that closed or reset it at once (a TLS port does).
std::string RedisClient::Loop::LoginFailure(const Connection* conn,
                                            const redisAsyncContext* ac,
                                            const char* fallback) const {
  const std::string text = ErrorText(ac, fallback);
  if (conn->ssl != nullptr) {
    return client_->tls_->HandshakeFailure(conn->ssl, text, PeerReset(&ac->c));
  }
  // TCP connected, then closed or reset before any login reply: what a
  // TLS port does with a plaintext client.
  if (conn->state == Connection::State::kConnecting && conn->node->port != 0 &&
      (ac->c.flags & REDIS_CONNECTED) != 0 &&
      (ac->c.err == REDIS_ERR_EOF || ac->c.err == REDIS_ERR_IO)) {
    return absl::StrCat(text,
                        " before answering the login (if this port speaks "
                        "TLS, use rediss://)");
  }
  return text;
}

void RedisClient::Loop::OnHandshakeCb(redisAsyncContext*, void* r,
                                      void* privdata) {
  auto* conn = static_cast<Connection*>(privdata);
  conn->loop->OnHandshake(conn, static_cast<redisReply*>(r));
}

void RedisClient::Loop::OnHandshake(Connection* conn, redisReply* r) {
  if (conn->hiredis_done || r == nullptr) return;  // being torn down
  // A teardown is already asked for: AUTH's WRONGPASS is the reason, not
  // the NOAUTH of the PING that came in the same read.
  if (!conn->close_reason.empty()) return;
  if (r->type == REDIS_REPLY_ERROR) {
    conn->node->last_error =
        absl::StrCat("login failed: ", std::string(r->str, r->len));
    client_->counters_.connect_failures.fetch_add(1, std::memory_order_relaxed);
    RequestTeardown(conn, conn->node->last_error);
    return;
  }
  if (--conn->handshake_left == 0) MarkReady(conn);
}

void RedisClient::Loop::OnRoleCb(redisAsyncContext*, void* r, void* privdata) {
  auto* conn = static_cast<Connection*>(privdata);
  conn->loop->OnRole(conn, static_cast<redisReply*>(r));
}

// ROLE's first element is "master" on a primary; anything else (a replica
// the sentinels have not yet replaced, an error) refuses the server.
void RedisClient::Loop::OnRole(Connection* conn, redisReply* r) {
  if (conn->hiredis_done || r == nullptr) return;
  if (!conn->close_reason.empty()) return;
  if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
      r->element[0]->type == REDIS_REPLY_STRING &&
      std::string(r->element[0]->str, r->element[0]->len) == "master") {
    if (--conn->handshake_left == 0) MarkReady(conn);
    return;
  }
  std::string role = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                             r->element[0]->type == REDIS_REPLY_STRING
                         ? std::string(r->element[0]->str, r->element[0]->len)
                     : r->type == REDIS_REPLY_ERROR
                         ? std::string(r->str, r->len)
                         : "an unexpected reply";
  client_->counters_.role_refusals.fetch_add(1, std::memory_order_relaxed);
  conn->node->last_error =
      absl::StrCat("the sentinels named ", conn->node->label,
                   " as the primary, but its ROLE is ", role);
  RequestTeardown(conn, conn->node->last_error);
}

void RedisClient::Loop::OnSinceCb(redisAsyncContext*, void* r, void* privdata) {
  auto* conn = static_cast<Connection*>(privdata);
  conn->loop->OnSince(conn, static_cast<redisReply*>(r));
}

// The marker's reply. An error (a read-only replica, OOM, a marker of
// another type) does not fail the login: the time is then unknown (-1),
// and a limit that starts empty after a data loss cannot here.
void RedisClient::Loop::OnSince(Connection* conn, redisReply* r) {
  if (conn->hiredis_done || r == nullptr) return;  // being torn down
  if (!conn->close_reason.empty()) return;
  Node* node = conn->node;
  int64_t since = -1;
  if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
    since = r->integer;
  } else if (r->type == REDIS_REPLY_ERROR) {
    Log(node, absl::StrCat("the data-loss marker '", kSinceKey,
                           "' cannot be read: ", std::string(r->str, r->len)));
  }
  if (since >= 0 && known_since_us_ >= 0 && since != known_since_us_) {
    // relaxed: statistics.
    client_->counters_.data_losses.fetch_add(1, std::memory_order_relaxed);
    Log(node,
        absl::StrCat(
            "Redis lost its data: its tokenlease state began again at ",
            absl::FormatTime(absl::FromUnixMicros(since), absl::UTCTimeZone()),
            " (it began at ",
            absl::FormatTime(absl::FromUnixMicros(known_since_us_),
                             absl::UTCTimeZone()),
            ")"));
  }
  node->since_us = since;
  if (since >= 0) known_since_us_ = since;
  // relaxed: a value on its own (stats()).
  client_->state_since_us_.store(since, std::memory_order_relaxed);
  if (--conn->handshake_left == 0) MarkReady(conn);
}

void RedisClient::Loop::MarkReady(Connection* conn) {
  Node* node = conn->node;
  conn->state = Connection::State::kReady;
  FreeTimer(&conn->connect_timer);
  node->backoff_attempt = 0;
  node->last_error.clear();
  node->logged_error.clear();
  {
    std::lock_guard<std::mutex> lock(client_->connect_error_mu_);
    client_->connect_error_.clear();
  }
  // relaxed: monitoring.
  client_->connected_.store(true, std::memory_order_relaxed);
  client_->counters_.connects.fetch_add(1, std::memory_order_relaxed);
  node->health.OnReady(SteadyNowNs());
  // Everything that waited goes out in one pipelined write.
  const uint64_t sent_before = sent_;
  while (!node->waiting.empty() && conn == node->current) {
    Command* cmd = node->waiting.front();
    node->waiting.pop_front();
    // A map read meanwhile may have moved its slot elsewhere.
    if (Route(cmd) != node) {
      Dispatch(cmd);
      continue;
    }
    if (!Send(conn, cmd)) {
      node->waiting.push_front(cmd);
      cmd->waiting_it = node->waiting.begin();
      break;
    }
  }
  if (sent_ != sent_before) CountFlush();
  UpdateHealth(node, SteadyNowNs());
  if (client_->cluster_ && refresh_wanted_) RequestRefresh();
}

void RedisClient::Loop::OnConnectTimerCb(evutil_socket_t, short, void* arg) {
  auto* conn = static_cast<Connection*>(arg);
  Loop* loop = conn->loop;
  const std::string limit =
      absl::FormatDuration(loop->options().connect_timeout);
  conn->node->last_error =
      conn->ssl != nullptr && !TlsContext::HandshakeDone(conn->ssl)
          ? absl::StrCat("the TLS handshake did not finish within ", limit,
                         " (a server that is not speaking TLS, or a frozen "
                         "one)")
          : absl::StrCat("connect and login did not finish within ", limit);
  loop->client_->counters_.connect_failures.fetch_add(
      1, std::memory_order_relaxed);
  loop->Teardown(conn, conn->node->last_error);
  loop->RequestRefresh();
}

void RedisClient::Loop::OnCloseEventCb(evutil_socket_t, short, void* arg) {
  auto* conn = static_cast<Connection*>(arg);
  conn->loop->Teardown(conn, conn->close_reason);
}

// From inside a hiredis callback: tear down on the next loop iteration.
void RedisClient::Loop::RequestTeardown(Connection* conn, std::string reason) {
  if (conn->hiredis_done) return;
  if (conn->close_reason.empty()) conn->close_reason = std::move(reason);
  event_active(conn->close_event, 0, 0);
}

void RedisClient::Loop::OnDisconnectCb(const redisAsyncContext* ac, int) {
  auto* conn = static_cast<Connection*>(ac->data);
  Loop* loop = conn->loop;
  if (!conn->hiredis_done) {  // lost, not closed by us
    if (conn->state == Connection::State::kReady) {
      conn->node->last_error = ErrorText(ac, "server closed the connection");
    } else {
      // During the TLS handshake or the login: a failed connect.
      conn->node->last_error =
          loop->LoginFailure(conn, ac, "server closed the connection");
      loop->client_->counters_.connect_failures.fetch_add(
          1, std::memory_order_relaxed);
    }
    loop->MarkClosed(conn);
    loop->ScheduleReconnect(conn->node);
    loop->RequestRefresh();
  }
  conn->ac = nullptr;
}

// hiredis is done with (or is freeing) conn's context.
void RedisClient::Loop::MarkClosed(Connection* conn) {
  conn->hiredis_done = true;
  conn->ssl = nullptr;  // freed with the context
  conn->state = Connection::State::kClosed;
  FreeTimer(&conn->connect_timer);
  Node* node = conn->node;
  if (node->current != conn) return;
  node->current = nullptr;
  // A sentinel's primary is asked for again before the next connect.
  node->located = false;
  bool any_ready = false;
  for (const auto& n : nodes_) {
    any_ready |=
        n->current != nullptr && n->current->state == Connection::State::kReady;
  }
  // relaxed: monitoring.
  client_->connected_.store(any_ready, std::memory_order_relaxed);
  node->health.OnClosed(!conn->close_reason.empty() ? conn->close_reason
                        : !node->last_error.empty() ? node->last_error
                                                    : "connection closed");
  // From a hiredis callback too: publishing only stores atomics and calls
  // the user's quick callback; a reset happens only from our own events
  // (the connection is gone here anyway).
  UpdateHealth(node, SteadyNowNs());
}

// Frees conn's context from one of our own event callbacks (never from a
// hiredis callback). hiredis answers every pending command with NULL (they
// fail with Unavailable), then calls the disconnect callback.
void RedisClient::Loop::Teardown(Connection* conn, const std::string& reason) {
  if (conn->hiredis_done) return;
  if (conn->close_reason.empty()) conn->close_reason = reason;
  redisAsyncContext* ac = conn->ac;
  MarkClosed(conn);
  redisAsyncFree(ac);
  conn->ac = nullptr;
  ScheduleReconnect(conn->node);
}

void RedisClient::Loop::ScheduleReconnect(Node* node) {
  if (stopped_ || !node->serving) return;
  // Why the server cannot be used, once per reason (a refused AUTH after a
  // password change must reach the operator; an outage must not flood the
  // log with one line per attempt).
  if (!node->last_error.empty() && node->last_error != node->logged_error) {
    Log(node, absl::StrCat("no connection: ", node->last_error,
                           " (retrying with backoff)"));
    node->logged_error = node->last_error;
    std::lock_guard<std::mutex> lock(client_->connect_error_mu_);
    client_->connect_error_ = absl::StrCat(Where(node), ": ", node->last_error);
  }
  if (evtimer_pending(node->reconnect_timer, nullptr)) return;
  const int64_t min_ns =
      absl::ToInt64Nanoseconds(options().reconnect_min_backoff);
  const int64_t max_ns =
      absl::ToInt64Nanoseconds(options().reconnect_max_backoff);
  int64_t delay = min_ns;
  for (int i = 0; i < node->backoff_attempt && delay < max_ns; ++i) {
    delay *= 2;
  }
  delay = std::min(delay, max_ns);
  ++node->backoff_attempt;
  // Jitter: uniform in [delay/2, delay], so instances that lost the same
  // server do not reconnect in lockstep.
  std::uniform_int_distribution<int64_t> dist(delay / 2, delay);
  const timeval tv = ToTimeval(dist(rng_));
  evtimer_add(node->reconnect_timer, &tv);
}

void RedisClient::Loop::OnReconnectCb(evutil_socket_t, short, void* arg) {
  auto* node = static_cast<Node*>(arg);
  Loop* loop = node->loop;
  loop->Purge();
  if (node->current == nullptr && node->serving) loop->StartConnect(node);
}

void RedisClient::Loop::FreeTimer(event** ev) {
  if (*ev != nullptr) {
    event_free(*ev);
    *ev = nullptr;
  }
}

void RedisClient::Loop::FreeConnectionEvents(Connection* conn) {
  FreeTimer(&conn->connect_timer);
  FreeTimer(&conn->close_event);
}

// Deletes connections and sentinel queries hiredis is done with. Runs only
// from our own event callbacks, so no hiredis frame still references them.
void RedisClient::Loop::Purge() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    // One with an open group is in waits_due_ until SendWaits runs.
    if ((*it)->hiredis_done && (*it)->ac == nullptr &&
        (*it)->open_group == nullptr) {
      FreeConnectionEvents(it->get());
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = queries_.begin(); it != queries_.end();) {
    if ((*it)->hiredis_done && (*it)->ac == nullptr) {
      FreeTimer(&(*it)->timer);
      it = queries_.erase(it);
    } else {
      ++it;
    }
  }
}

// --- Sentinel
// -----------------------------------------------------------------

// Connects to the next sentinel (round robin) and logs in: a query for
// `node`'s primary, or (`watch`) the +switch-master subscription. nullptr
// if the connect could not even start (the caller retries later).
RedisClient::SentinelQuery* RedisClient::Loop::OpenSentinel(Node* node,
                                                            bool watch,
                                                            std::string* why) {
  const RedisEndpoint& ep = endpoint();
  const HostPort& s = ep.seeds[next_sentinel_++ % ep.seeds.size()];
  auto owned = std::make_unique<SentinelQuery>();
  SentinelQuery* q = owned.get();
  q->loop = this;
  q->node = node;
  q->watch = watch;
  q->sentinel = absl::StrCat(s.host, ":", s.port);
  redisAsyncContext* ac = redisAsyncConnect(s.address.c_str(), s.port);
  if (ac != nullptr && !ac->err && client_->tls_ != nullptr) {
    absl::StatusOr<ssl_st*> ssl = client_->tls_->Attach(&ac->c, s.host);
    if (!ssl.ok()) {
      *why =
          absl::StrCat("sentinel ", q->sentinel, ": ", ssl.status().message());
      redisAsyncFree(ac);
      return nullptr;
    }
    q->ssl = *ssl;
  }
  if (ac == nullptr || ac->err || redisLibeventAttach(ac, base_) != REDIS_OK) {
    *why = absl::StrCat("sentinel ", q->sentinel, ": ",
                        ac ? ac->errstr : "out of memory");
    if (ac) redisAsyncFree(ac);
    return nullptr;
  }
  q->ac = ac;
  ac->data = q;
  redisAsyncSetConnectCallback(ac, &Loop::OnSentinelConnectCb);
  redisAsyncSetDisconnectCallback(ac, &Loop::OnSentinelDisconnectCb);
  q->timer = evtimer_new(base_, &Loop::OnSentinelTimerCb, q);
  const timeval tv =
      ToTimeval(absl::ToInt64Nanoseconds(options().connect_timeout));
  evtimer_add(q->timer, &tv);
  const std::string& user = options().sentinel_user;
  const std::string& password = options().sentinel_password;
  if (!password.empty()) {
    ++q->handshake_left;
    if (user.empty()) {
      redisAsyncCommand(ac, &Loop::OnSentinelAuthCb, q, "AUTH %b",
                        password.data(), password.size());
    } else {
      redisAsyncCommand(ac, &Loop::OnSentinelAuthCb, q, "AUTH %b %b",
                        user.data(), user.size(), password.data(),
                        password.size());
    }
  }
  queries_.push_back(std::move(owned));
  return q;
}

// Asks the next sentinel for the primary's address; its answer starts the
// connect (SentinelAnswered), its failure the backoff.
void RedisClient::Loop::AskSentinel(Node* node) {
  client_->counters_.sentinel_queries.fetch_add(1, std::memory_order_relaxed);
  std::string why;
  SentinelQuery* q = OpenSentinel(node, /*watch=*/false, &why);
  if (q == nullptr) {
    node->last_error = why;
    ScheduleReconnect(node);
    return;
  }
  const RedisEndpoint& ep = endpoint();
  redisAsyncCommand(q->ac, &Loop::OnSentinelReplyCb, q,
                    "SENTINEL get-master-addr-by-name %b", ep.service.data(),
                    ep.service.size());
}

void RedisClient::Loop::OnSentinelConnectCb(const redisAsyncContext* ac,
                                            int status) {
  auto* q = static_cast<SentinelQuery*>(ac->data);
  if (status == REDIS_OK) return;
  // hiredis frees the context after this callback (pending callbacks get
  // NULL first), without the disconnect callback.
  q->loop->SentinelFailed(q, ErrorText(ac, "connect failed"));
  q->hiredis_done = true;
  q->ac = nullptr;
}

void RedisClient::Loop::OnSentinelDisconnectCb(const redisAsyncContext* ac,
                                               int) {
  auto* q = static_cast<SentinelQuery*>(ac->data);
  q->loop->SentinelFailed(
      q, q->loop->SentinelFailure(q, ac, "the sentinel closed the connection"));
  q->hiredis_done = true;
  q->ac = nullptr;
  if (q->watch && !q->loop->stopped_) q->loop->ScheduleWatch();
}

// As LoginFailure, for a sentinel's connection.
std::string RedisClient::Loop::SentinelFailure(const SentinelQuery* q,
                                               const redisAsyncContext* ac,
                                               const char* fallback) const {
  const std::string text = ErrorText(ac, fallback);
  if (q->ssl != nullptr && !q->answered) {
    return client_->tls_->HandshakeFailure(q->ssl, text, PeerReset(&ac->c));
  }
  return text;
}

void RedisClient::Loop::OnSentinelAuthCb(redisAsyncContext*, void* r,
                                         void* privdata) {
  auto* q = static_cast<SentinelQuery*>(privdata);
  auto* reply = static_cast<redisReply*>(r);
  if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
    q->loop->SentinelFailed(
        q, absl::StrCat("login failed: ", std::string(reply->str, reply->len),
                        " (RedisOptions::sentinel_password)"));
  }
}

void RedisClient::Loop::OnSentinelReplyCb(redisAsyncContext* ac, void* r,
                                          void* privdata) {
  auto* q = static_cast<SentinelQuery*>(privdata);
  if (r == nullptr) {
    q->loop->SentinelFailed(q, ErrorText(ac, "no reply"));
    return;
  }
  q->loop->SentinelAnswered(q, static_cast<redisReply*>(r));
  // Done with this sentinel: inside its callback, hiredis frees the
  // context once the callback returns (then the disconnect callback).
  if (!q->hiredis_done) redisAsyncFree(ac);
}

void RedisClient::Loop::OnSentinelTimerCb(evutil_socket_t, short, void* arg) {
  auto* q = static_cast<SentinelQuery*>(arg);
  Loop* loop = q->loop;
  loop->SentinelFailed(
      q, absl::StrCat("no answer within ",
                      absl::FormatDuration(loop->options().connect_timeout)));
  if (!q->hiredis_done && q->ac != nullptr) {
    redisAsyncContext* ac = q->ac;
    q->hiredis_done = true;
    q->ac = nullptr;
    redisAsyncFree(ac);
  }
}

void RedisClient::Loop::SentinelAnswered(SentinelQuery* q,
                                         const redisReply* r) {
  if (q->answered) return;
  // ["host", "port"]; nil when the sentinel monitors no such name.
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING) {
    SentinelFailed(q, r->type == REDIS_REPLY_ERROR
                          ? std::string(r->str, r->len)
                          : absl::StrCat("it monitors no primary named \"",
                                         endpoint().service, "\""));
    return;
  }
  q->answered = true;
  FreeTimer(&q->timer);
  Node* node = q->node;
  const std::string host(r->element[0]->str, r->element[0]->len);
  int port = 0;
  if (!absl::SimpleAtoi(std::string(r->element[1]->str, r->element[1]->len),
                        &port)) {
    port = 0;
  }
  const std::string label = absl::StrCat(host, ":", port);
  if (node->host != host || node->port != port) {
    if (!node->host.empty()) {
      Log(node, absl::StrCat("the sentinels name a new primary: ", label,
                             " (was ", node->host, ":", node->port, ")"));
    }
    node->host = host;
    node->port = port;
  }
  // The address the sentinels announce is the name its certificate must
  // hold (or RedisTlsOptions::server_name).
  node->tls_name = host;
  node->located = true;
  if (node->current == nullptr && !stopped_) StartConnect(node);
}

void RedisClient::Loop::SentinelFailed(SentinelQuery* q,
                                       const std::string& why) {
  if (q->answered) return;
  q->answered = true;
  FreeTimer(&q->timer);
  if (q->watch) {
    // Only the subscription is lost (the connect's own query is
    // separate); its disconnect, or this, starts another.
    ScheduleWatch();
    return;
  }
  Node* node = q->node;
  node->last_error = absl::StrCat("sentinel ", q->sentinel, ": ", why);
  client_->counters_.connect_failures.fetch_add(1, std::memory_order_relaxed);
  ScheduleReconnect(node);
}

}  // namespace tokenlease::internal
