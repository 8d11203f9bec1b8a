// The client thread: intake from the submit queue, routing to a node,
// sending, replies (NOSCRIPT, redirects), deadlines and shutdown.
#include "redis/client_loop.h"

#include <event2/thread.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "redis/client_time.h"
#include "redis/script_call.h"
#include "redis/scripts.h"
#include "redis/tls.h"

namespace tokenlease::internal {
namespace {

// Redirects (MOVED, ASK) and role refusals one command may follow: a
// resharding moves a slot once, a failover once; more is a loop.
constexpr int kMaxRedirects = 5;

void EnableLibeventThreads() {
  // Lets other threads event_active() the loop's wake event.
  static std::once_flag once;
  std::call_once(once, [] { evthread_use_pthreads(); });
}

}  // namespace

RedisClient::Loop::Loop(RedisClient* client)
    : client_(client), rng_(SteadyNowNs()) {
  EnableLibeventThreads();
  base_ = event_base_new();
  wake_ = event_new(base_, -1, 0, &Loop::OnWakeCb, this);
  health_timer_ =
      event_new(base_, -1, EV_PERSIST, &Loop::OnHealthTimerCb, this);
  grace_timer_ = evtimer_new(base_, &Loop::OnGraceCb, this);
  finish_ = event_new(base_, -1, 0, &Loop::OnFinishCb, this);
  refresh_timer_ = evtimer_new(base_, &Loop::OnRefreshTimerCb, this);
  apply_map_ = event_new(base_, -1, 0, &Loop::OnApplyMapCb, this);
  waits_due_event_ = event_new(base_, -1, 0, &Loop::OnWaitsDueCb, this);
  watch_timer_ = evtimer_new(base_, &Loop::OnWatchTimerCb, this);
  const RedisEndpoint& ep = endpoint();
  switch (ep.topology) {
    case RedisEndpoint::Topology::kSingle:
      if (ep.socket_path.empty()) {
        Node* node = AddNode(ep.address, ep.port, false);
        node->label = ep.Describe();
        node->tls_name = ep.host;
      } else {
        AddNode(ep.socket_path, 0, true)->label = ep.Describe();
      }
      break;
    case RedisEndpoint::Topology::kSentinel:
      // The primary's address comes from the sentinels (AskSentinel).
      AddNode("", 0, false)->label = ep.Describe();
      break;
    case RedisEndpoint::Topology::kCluster:
      slots_.assign(kClusterSlots, nullptr);
      for (const HostPort& seed : ep.seeds) {
        FindOrAddNode(seed.address, seed.port)->tls_name = seed.host;
      }
      break;
  }
}

RedisClient::Loop::~Loop() {
  for (auto& c : conns_) {
    FreeConnectionEvents(c.get());
    // Never sent (the loop stopped first); its members are gone already.
    delete c->open_group;
  }
  for (auto& q : queries_) FreeTimer(&q->timer);
  for (auto& n : nodes_) FreeTimer(&n->reconnect_timer);
  for (event* e : {wake_, health_timer_, grace_timer_, finish_, refresh_timer_,
                   apply_map_, waits_due_event_, watch_timer_}) {
    if (e != nullptr) event_free(e);
  }
  if (base_ != nullptr) event_base_free(base_);
}

bool RedisClient::Loop::ok() const {
  bool nodes_ok = true;
  for (const auto& n : nodes_) nodes_ok &= n->reconnect_timer != nullptr;
  return base_ && wake_ && health_timer_ && grace_timer_ && finish_ &&
         refresh_timer_ && apply_map_ && waits_due_event_ && watch_timer_ &&
         nodes_ok;
}

void RedisClient::Loop::Run() {
  // A write to a socket the server closed raises SIGPIPE, which kills the
  // process unless handled: hiredis's send() and OpenSSL's write() do not
  // ask the kernel not to. Blocked on this thread, the write fails with
  // EPIPE instead, and the connection closes as any broken one does.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  if (client_->tls_ != nullptr && !client_->tls_->verify_peer()) {
    Log(nodes_.front().get(),
        "TLS certificate verification is off (RedisOptions::tls.verify_peer "
        "= false): any server, or anyone on the path, is trusted");
  }
  // A quarter of down_after (1 to 50 ms): a stall is noticed within
  // 1.25 x down_after.
  const int64_t period =
      std::clamp<int64_t>(absl::ToInt64Nanoseconds(options().down_after) / 4,
                          1'000'000, 50'000'000);
  const timeval tv = ToTimeval(period);
  evtimer_add(health_timer_, &tv);
  // A cluster's map is read as soon as a seed answers (MarkReady).
  refresh_wanted_ = client_->cluster_;
  for (size_t i = 0; i < nodes_.size(); ++i) StartConnect(nodes_[i].get());
  if (sentinel()) StartWatch();
  event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
}

std::string RedisClient::Loop::Where(const Node* node) const {
  return node->label;
}

// --- Intake -----------------------------------------------------------------

void RedisClient::Loop::OnWakeCb(evutil_socket_t, short, void* arg) {
  static_cast<Loop*>(arg)->OnWake();
}

void RedisClient::Loop::OnWake() {
  // acq_rel: a producer whose exchange(true) this reads published its push
  // before it; clearing first means a later push wakes us again.
  client_->wake_pending_.exchange(false, std::memory_order_acq_rel);
  Purge();
  // relaxed: AskForSlotMap's flag (the exchange above ordered it).
  if (client_->map_wanted_.exchange(false, std::memory_order_relaxed)) {
    RequestRefresh();
  }
  const uint64_t sent_before = sent_;
  while (Command* cmd = client_->queue_.TryPop()) Accept(cmd);
  // Everything sent in this turn leaves in one write per connection.
  if (sent_ != sent_before) CountFlush();
  // acquire: pairs with the destructor's release store.
  if (client_->stopping_.load(std::memory_order_acquire) && !draining_) {
    draining_ = true;
    const timeval tv =
        ToTimeval(absl::ToInt64Nanoseconds(options().shutdown_grace));
    evtimer_add(grace_timer_, &tv);
  }
  if (draining_) CheckDrained();
}

void RedisClient::Loop::Accept(Command* cmd) {
  ++outstanding_;
  const int64_t left = cmd->deadline_ns - SteadyNowNs();
  if (left <= 0) {
    Fail(cmd, absl::DeadlineExceededError(absl::StrCat(
                  "redis command not sent: its ", cmd->timeout_ns / 1000000,
                  " ms deadline passed in the submit queue")));
    return;
  }
  cmd->loop = this;
  cmd->timer = evtimer_new(base_, &Loop::OnCommandTimerCb, cmd);
  const timeval tv = ToTimeval(left);
  evtimer_add(cmd->timer, &tv);
  if (client_->cluster_ && cmd->slot < 0 && cmd->is_script &&
      !cmd->argv.empty() && cmd->argv[0] != "0" && cmd->argv.size() > 1) {
    // EVALSHA's arguments: numkeys, then the keys; the first key routes.
    cmd->slot = HashSlot(cmd->argv[1]);
  }
  Dispatch(cmd);
}

// --- Routing ----------------------------------------------------------------

RedisClient::Node* RedisClient::Loop::Route(const Command* cmd) {
  if (!client_->cluster_) return nodes_[0].get();
  if (cmd->ask_node != nullptr) return cmd->ask_node;
  if (cmd->slot >= 0 && slots_[cmd->slot] != nullptr) return slots_[cmd->slot];
  // No key, or a slot the map does not cover yet: any ready node (a wrong
  // one answers MOVED), else the first node still serving.
  Node* fallback = nullptr;
  for (const auto& n : nodes_) {
    if (!n->serving) continue;
    if (n->current != nullptr &&
        n->current->state == Connection::State::kReady) {
      return n.get();
    }
    if (fallback == nullptr) fallback = n.get();
  }
  return fallback != nullptr ? fallback : nodes_[0].get();
}

void RedisClient::Loop::Dispatch(Command* cmd) {
  Node* node = Route(cmd);
  Connection* conn = node->current;
  if (conn != nullptr && conn->state == Connection::State::kReady &&
      Send(conn, cmd)) {
    return;
  }
  Park(node, cmd);
}

// Waits for `node`'s connection (MarkReady sends the waiting commands); a
// node without a connection or a pending reconnect starts connecting.
void RedisClient::Loop::Park(Node* node, Command* cmd) {
  cmd->state = Command::State::kWaiting;
  cmd->conn = nullptr;
  cmd->node = node;
  node->waiting.push_back(cmd);
  cmd->waiting_it = std::prev(node->waiting.end());
  if (!stopped_ && node->current == nullptr &&
      !evtimer_pending(node->reconnect_timer, nullptr)) {
    node->serving = true;
    StartConnect(node);
  }
}

RedisClient::Node* RedisClient::Loop::FindOrAddNode(const std::string& host,
                                                    int port) {
  for (const auto& n : nodes_) {
    if (n->port == port && n->host == host) return n.get();
  }
  Node* node = AddNode(host, port, false);
  const bool v6 = host.find(':') != std::string::npos;
  node->label = absl::StrCat(v6 ? "[" : "", host, v6 ? "]" : "", ":", port);
  return node;
}

int16_t RedisClient::Loop::NodeIndex(const Node* node) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].get() == node) return static_cast<int16_t>(i);
  }
  return -1;
}

RedisClient::Node* RedisClient::Loop::AddNode(const std::string& host, int port,
                                              bool unix_socket) {
  auto node = std::make_unique<Node>(options());
  node->host = host;
  node->tls_name = host;
  node->port = port;
  node->unix_socket = unix_socket;
  node->loop = this;
  node->reconnect_timer = evtimer_new(base_, &Loop::OnReconnectCb, node.get());
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

// --- Sending and replies
// ------------------------------------------------------

bool RedisClient::Loop::Send(Connection* conn, Command* cmd) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(cmd->argv.size() + 3);
  lens.reserve(cmd->argv.size() + 3);
  if (cmd->is_script) {
    if (cmd->sent_as_eval) {
      argv.push_back("EVAL");
      lens.push_back(4);
      argv.push_back(cmd->script.body.data());
      lens.push_back(cmd->script.body.size());
    } else {
      argv.push_back("EVALSHA");
      lens.push_back(7);
      argv.push_back(cmd->script.sha1.data());
      lens.push_back(cmd->script.sha1.size());
    }
  }
  for (const auto& a : cmd->argv) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  // The time of the server this is written to (read in its handshake).
  const std::string since =
      cmd->append_since ? absl::StrCat(conn->node->since_us) : std::string();
  if (cmd->append_since) {
    argv.push_back(since.data());
    lens.push_back(since.size());
  }
  // ASK: the importing node takes the command only right after ASKING (its
  // reply is of no use: a failed ASKING makes the command answer MOVED).
  if (cmd->ask_node != nullptr &&
      redisAsyncCommand(conn->ac, nullptr, nullptr, "ASKING") != REDIS_OK) {
    return false;
  }
  if (redisAsyncCommandArgv(conn->ac, &Loop::OnReplyCb, cmd,
                            static_cast<int>(argv.size()), argv.data(),
                            lens.data()) != REDIS_OK) {
    return false;  // the context is closing; the caller keeps the command
  }
  cmd->state = Command::State::kInFlight;
  cmd->conn = conn;
  cmd->node = nullptr;
  cmd->sent_ns = SteadyNowNs();
  if (conn == conn->node->current) conn->node->health.OnSent(cmd->sent_ns);
  ++sent_;
  // relaxed: statistics.
  client_->counters_.commands_sent.fetch_add(1, std::memory_order_relaxed);
  if (cmd->is_script && options().durable_replicas > 0) JoinGroup(conn, cmd);
  return true;
}

void RedisClient::Loop::OnReplyCb(redisAsyncContext* ac, void* r,
                                  void* privdata) {
  auto* conn = static_cast<Connection*>(ac->data);
  conn->loop->OnReply(conn, ac, static_cast<redisReply*>(r),
                      static_cast<Command*>(privdata));
}

void RedisClient::Loop::OnReply(Connection* conn, redisAsyncContext* ac,
                                redisReply* r, Command* cmd) {
  if (cmd->completed) {  // timed out earlier; hiredis is done with it now
    if (r != nullptr) {
      // relaxed: statistics.
      client_->counters_.late_replies.fetch_add(1, std::memory_order_relaxed);
      NoteReply(conn, cmd, RecordRoundTrip(cmd));
    }
    delete cmd;
    return;
  }
  if (r == nullptr) {
    const std::string why = !conn->close_reason.empty()
                                ? conn->close_reason
                                : ErrorText(ac, "connection closed");
    Fail(cmd,
         absl::UnavailableError(absl::StrCat(
             "connection to ", Where(conn->node), " lost before the reply (",
             why, "); the command may or may not have run")));
    return;
  }
  client_->counters_.replies.fetch_add(1, std::memory_order_relaxed);
  NoteReply(conn, cmd, RecordRoundTrip(cmd));
  RedisReply reply = CopyReply(r);
  if (cmd->is_script && !cmd->sent_as_eval &&
      reply.ErrorStartsWith("NOSCRIPT") && !conn->hiredis_done) {
    // NOSCRIPT: the script did not run, so sending its body is safe. Each
    // node (a promoted replica too) loads it on its first EVAL.
    cmd->sent_as_eval = true;
    client_->counters_.script_reloads.fetch_add(1, std::memory_order_relaxed);
    if (Send(conn, cmd)) {
      CountFlush();
      return;
    }
  }
  if (reply.is_error() && Redirected(conn, cmd, reply)) return;
  if (cmd->group != nullptr && !reply.is_error()) {
    // A write: used once its WAIT confirms it (OnWait). An error reply
    // wrote nothing (the scripts are all or none) and is answered now.
    cmd->held = true;
    cmd->held_reply = std::move(reply);
    return;
  }
  Finish(cmd, std::move(reply));
}

// An error reply that says the command did not run where it was sent:
// follows it (true), or leaves it to the caller (false).
bool RedisClient::Loop::Redirected(Connection* conn, Command* cmd,
                                   const RedisReply& reply) {
  if (client_->cluster_) {
    std::optional<Redirect> to = ParseRedirect(reply.str, conn->node->host);
    if (!to.has_value()) {
      // The cluster is reconfiguring: the map is read again; the command
      // fails (it did not run) and its caller decides.
      if (reply.ErrorStartsWith("CLUSTERDOWN") ||
          reply.ErrorStartsWith("TRYAGAIN")) {
        RequestRefresh();
      }
      return false;
    }
    if (cmd->redirects >= kMaxRedirects) return false;
    ++cmd->redirects;
    Node* target = FindOrAddNode(to->host, to->port);
    if (to->kind == Redirect::Kind::kMoved) {
      // relaxed: statistics.
      client_->counters_.moved.fetch_add(1, std::memory_order_relaxed);
      cmd->ask_node = nullptr;
      if (slots_[to->slot] != target) {
        slots_[to->slot] = target;
        target->serving = true;
        // relaxed: hints (HealthOfSlot, NodeOfSlot).
        client_->slot_health_[to->slot].store(
            static_cast<uint8_t>(target->published), std::memory_order_relaxed);
        client_->slot_node_[to->slot].store(NodeIndex(target),
                                            std::memory_order_relaxed);
      }
      RequestRefresh();
    } else {
      client_->counters_.asked.fetch_add(1, std::memory_order_relaxed);
      cmd->ask_node = target;
    }
    Dispatch(cmd);
    return true;
  }
  if (sentinel() &&
      (reply.ErrorStartsWith("READONLY") || reply.ErrorStartsWith("LOADING"))) {
    // The server is no longer (or not yet) a usable primary: a failover
    // demoted it, or it loads its data. The command did not run; it waits
    // for the primary the sentinels name on the reconnect.
    client_->counters_.role_refusals.fetch_add(1, std::memory_order_relaxed);
    RequestTeardown(conn, absl::StrCat("the server answered ", reply.str));
    if (cmd->redirects >= kMaxRedirects) return false;
    ++cmd->redirects;
    Park(conn->node, cmd);
    return true;
  }
  return false;
}

// A sign of life (`now`: when the reply came): feeds the node's health
// monitor, and publishes a recovery at once (limiters resume leasing
// without waiting for the periodic check).
void RedisClient::Loop::NoteReply(Connection* conn, Command* cmd, int64_t now) {
  Node* node = conn->node;
  if (conn != node->current) return;
  node->health.OnReply(now, now - cmd->sent_ns);
  if (node->published != RedisHealth::kHealthy) UpdateHealth(node, now);
}

// Adds the round trip of `cmd`, whose reply came now, to the histogram
// (RedisStats::round_trip); returns now.
int64_t RedisClient::Loop::RecordRoundTrip(const Command* cmd) {
  const int64_t now = SteadyNowNs();
  const int64_t ns = std::max<int64_t>(0, now - cmd->sent_ns);
  RoundTripCounters& h = client_->round_trip_;
  // Relaxed load and store, not fetch_add: only this thread writes the
  // histogram (a single writer needs no locked instruction), and stats()
  // reads each cell with a relaxed load (a statistic publishes nothing).
  std::atomic<uint64_t>& bucket = h.buckets[LatencyHistogram::BucketOf(ns)];
  bucket.store(bucket.load(std::memory_order_relaxed) + 1,
               std::memory_order_relaxed);
  h.sum_ns.store(
      h.sum_ns.load(std::memory_order_relaxed) + static_cast<uint64_t>(ns),
      std::memory_order_relaxed);
  return now;
}

void RedisClient::Loop::CountFlush() {
  // relaxed: statistics.
  client_->counters_.flushes.fetch_add(1, std::memory_order_relaxed);
}

// --- Completion
// ---------------------------------------------------------------

void RedisClient::Loop::ReleaseTimer(Command* cmd) {
  if (cmd->timer != nullptr) {
    event_free(cmd->timer);
    cmd->timer = nullptr;
  }
}

void RedisClient::Loop::Complete(Command* cmd,
                                 absl::StatusOr<RedisReply> result) {
  ReleaseTimer(cmd);
  cmd->completed = true;
  --outstanding_;
  ReplyCallback done = std::move(cmd->done);
  done(std::move(result));
  if (draining_) CheckDrained();
}

// Completes a command hiredis no longer holds, and frees it.
void RedisClient::Loop::Finish(Command* cmd,
                               absl::StatusOr<RedisReply> result) {
  LeaveGroup(cmd);
  Complete(cmd, std::move(result));
  delete cmd;
}

void RedisClient::Loop::Fail(Command* cmd, absl::Status status) {
  Finish(cmd, std::move(status));
}

void RedisClient::Loop::OnCommandTimerCb(evutil_socket_t, short, void* arg) {
  auto* cmd = static_cast<Command*>(arg);
  cmd->loop->OnCommandTimer(cmd);
}

void RedisClient::Loop::OnCommandTimer(Command* cmd) {
  client_->counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
  const std::string ms = absl::StrCat(cmd->timeout_ns / 1000000, " ms");
  if (cmd->held) {
    // Replied, but its WAIT has not answered (hiredis is done with it).
    client_->counters_.not_durable.fetch_add(1, std::memory_order_relaxed);
    Fail(cmd, absl::DeadlineExceededError(absl::StrCat(
                  "no replica confirmed the write within ", ms,
                  " (RedisOptions::durable_replicas); its grant is not used")));
    return;
  }
  if (cmd->state == Command::State::kWaiting) {
    Node* node = cmd->node;
    node->waiting.erase(cmd->waiting_it);
    Fail(cmd, absl::DeadlineExceededError(absl::StrCat(
                  "redis command not sent within ", ms, ": no connection to ",
                  Where(node), node->last_error.empty() ? "" : " (last error: ",
                  node->last_error, node->last_error.empty() ? "" : ")")));
    RequestRefresh();
    return;
  }
  // In flight: the caller is answered now; hiredis keeps the command until
  // its late reply (discarded) or the connection's end. The connection
  // stays: a slow Redis is not helped by a reconnect, and a dead one is
  // reset by the health check (dead_after).
  const int64_t now = SteadyNowNs();
  Node* node = cmd->conn->node;
  if (cmd->conn == node->current) node->health.OnTimeout(now);
  Complete(cmd, absl::DeadlineExceededError(absl::StrCat(
                    "no reply from ", Where(node), " within ", ms,
                    "; the command may still run (its late reply is "
                    "discarded)")));
  UpdateHealth(node, now, /*may_reset=*/true);
  RequestRefresh();
}

// --- Shutdown
// -----------------------------------------------------------------

void RedisClient::Loop::CheckDrained() {
  if (outstanding_ > 0) return;
  for (const auto& n : nodes_) {
    if (!n->waiting.empty()) return;
  }
  event_active(finish_, 0, 0);
}

void RedisClient::Loop::OnGraceCb(evutil_socket_t, short, void* arg) {
  static_cast<Loop*>(arg)->Stop();
}

void RedisClient::Loop::OnFinishCb(evutil_socket_t, short, void* arg) {
  static_cast<Loop*>(arg)->Stop();
}

void RedisClient::Loop::Stop() {
  if (stopped_) return;
  stopped_ = true;
  const char* kShutDown = "redis client shut down before the command was sent";
  while (Command* cmd = client_->queue_.TryPop()) {
    ++outstanding_;
    Fail(cmd, absl::CancelledError(kShutDown));
  }
  for (auto& n : nodes_) {
    while (!n->waiting.empty()) {
      Command* cmd = n->waiting.front();
      n->waiting.pop_front();
      Fail(cmd, absl::CancelledError(kShutDown));
    }
    event_del(n->reconnect_timer);
  }
  for (auto& c : conns_) Teardown(c.get(), "the redis client shut down");
  for (auto& q : queries_) {
    if (!q->hiredis_done && q->ac != nullptr) {
      redisAsyncContext* ac = q->ac;
      q->hiredis_done = true;
      q->ac = nullptr;
      redisAsyncFree(ac);
    }
  }
  event_del(grace_timer_);
  event_del(health_timer_);
  event_del(refresh_timer_);
  event_del(watch_timer_);
  event_base_loopbreak(base_);
}

}  // namespace tokenlease::internal
