// The client thread's side of RedisClient (redis_client.h says what it
// guarantees): the commands in flight, the servers (nodes) with their
// connections, and the loop that owns them. Only the client thread touches
// anything here, except Command objects while they sit in the submit queue.
#ifndef TOKENLEASE_SRC_REDIS_CLIENT_LOOP_H_
#define TOKENLEASE_SRC_REDIS_CLIENT_LOOP_H_

#include <event2/event.h>

#include <cstdint>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "redis/cluster_map.h"
#include "redis/health_monitor.h"
#include "redis/redis_client.h"

struct redisAsyncContext;
struct redisReply;
struct ssl_st;

namespace tokenlease::internal {

struct RedisClient::Command {
  enum class State : uint8_t { kQueued, kWaiting, kInFlight };
  std::vector<std::string> argv;
  LuaScript script;
  bool is_script = false;
  bool sent_as_eval = false;
  bool append_since = false;  // SubmitScript's append_since
  ReplyCallback done;
  int64_t timeout_ns = 0;
  int64_t deadline_ns = 0;  // steady clock
  int64_t sent_ns = 0;      // steady clock: last written to a connection
  State state = State::kQueued;
  // `done` has run (timed out or failed) but hiredis still holds the command
  // as privdata: it is freed when hiredis calls back (reply or NULL).
  bool completed = false;
  // Cluster routing: the hash slot of the first key (-1: no key, any node).
  int slot = -1;
  // An ASK redirect's node: the next send goes there, after ASKING.
  Node* ask_node = nullptr;
  // Redirects and role refusals followed; a command is answered with the
  // error after kMaxRedirects (a loop between nodes must end).
  int redirects = 0;
  // Durable grants (RedisOptions::durable_replicas): the WAIT that must
  // confirm this command's last write, and its reply held until then.
  WaitGroup* group = nullptr;
  bool held = false;
  RedisReply held_reply;
  event* timer = nullptr;
  Loop* loop = nullptr;
  Connection* conn = nullptr;  // kInFlight: where it was written
  Node* node = nullptr;        // kWaiting: whose list it is in
  std::list<Command*>::iterator waiting_it;
};

struct RedisClient::Connection {
  redisAsyncContext* ac = nullptr;
  enum class State : uint8_t {
    kConnecting,
    kReady,
    kClosed
  } state = State::kConnecting;
  int handshake_left = 0;
  // hiredis has freed the context or is about to: never touch `ac` again.
  bool hiredis_done = false;
  std::string close_reason;
  event* connect_timer = nullptr;
  event* close_event = nullptr;  // deferred teardown (out of hiredis frames)
  Loop* loop = nullptr;
  Node* node = nullptr;
  // Script commands written since this connection's last WAIT.
  WaitGroup* open_group = nullptr;
  // TLS: the session (hiredis frees it with `ac`); nullptr without TLS.
  ssl_st* ssl = nullptr;
};

// The script commands one WAIT confirms: those written to `conn` before
// it (RedisOptions::durable_replicas). Freed by the WAIT's callback (or
// when the WAIT could not be sent).
struct RedisClient::WaitGroup {
  Loop* loop = nullptr;
  Connection* conn = nullptr;
  std::vector<Command*> members;  // nullptr: left (resent, or finished)
};

// One server commands go to: the single server, the sentinels' primary, or
// one cluster primary. Its connection, the commands waiting for it, its
// backoff and its health.
struct RedisClient::Node {
  explicit Node(const RedisOptions& options) : health(options) {}
  std::string host;  // numeric address (or the unix socket's path)
  int port = 0;
  bool unix_socket = false;
  std::string label;  // "127.0.0.1:7000", for logs and messages
  // TLS: the name its certificate must hold (the host as the URL wrote
  // it, or the address a cluster or the sentinels announced).
  std::string tls_name;
  Loop* loop = nullptr;
  Connection* current = nullptr;
  std::list<Command*> waiting;
  HealthMonitor health;
  RedisHealth published = RedisHealth::kDegraded;
  int backoff_attempt = 0;
  event* reconnect_timer = nullptr;
  std::string last_error;
  std::string logged_error;  // the last last_error logged
  // The data-loss marker's time on this server (since.lua; -1: unknown).
  int64_t since_us = -1;
  // Cluster: in the current slot map (a node that left it, such as a
  // failed primary, gets no commands and no reconnects).
  bool serving = true;
  // Sentinel: host and port are the primary the sentinels named for the
  // connect in progress (asked again before every connect).
  bool located = false;
};

// A one-command side connection to a sentinel: connect, AUTH, SENTINEL
// get-master-addr-by-name, close. Freed by Loop::Purge once hiredis is
// done with it.
struct RedisClient::SentinelQuery {
  redisAsyncContext* ac = nullptr;
  Loop* loop = nullptr;
  Node* node = nullptr;
  std::string sentinel;   // "host:port", for messages
  ssl_st* ssl = nullptr;  // TLS session, as Connection::ssl
  int handshake_left = 0;
  bool answered = false;
  bool hiredis_done = false;
  // The subscription to +switch-master (one at a time), not a query: it
  // stays open, and its end starts another (ScheduleWatch).
  bool watch = false;
  event* timer = nullptr;
};

class RedisClient::Loop {
 public:
  explicit Loop(RedisClient* client);
  ~Loop();

  bool ok() const;
  event* wake_event() const { return wake_; }
  // For timers of other threads (Every): libevent's locking is on, so they
  // may add and delete events on it.
  event_base* base() const { return base_; }
  // Runs the loop until Stop.
  void Run();

 private:
  const RedisOptions& options() const { return client_->options_; }
  const RedisEndpoint& endpoint() const { return client_->endpoint_; }
  bool sentinel() const {
    return endpoint().topology == RedisEndpoint::Topology::kSentinel;
  }
  // How logs and messages name a node: the endpoint for a single server,
  // host:port in a cluster.
  std::string Where(const Node* node) const;

  // Intake (client_loop.cc).
  static void OnWakeCb(evutil_socket_t, short, void* arg);
  void OnWake();
  void Accept(Command* cmd);

  // Routing (client_loop.cc).
  Node* Route(const Command* cmd);
  void Dispatch(Command* cmd);
  void Park(Node* node, Command* cmd);
  Node* FindOrAddNode(const std::string& host, int port);
  Node* AddNode(const std::string& host, int port, bool unix_socket);
  // nodes_'s index of `node` (RedisClient::NodeOfSlot).
  int16_t NodeIndex(const Node* node) const;

  // Sending and replies (client_loop.cc).
  bool Send(Connection* conn, Command* cmd);
  static void OnReplyCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnReply(Connection* conn, redisAsyncContext* ac, redisReply* r,
               Command* cmd);
  bool Redirected(Connection* conn, Command* cmd, const RedisReply& reply);
  void NoteReply(Connection* conn, Command* cmd, int64_t now);
  int64_t RecordRoundTrip(const Command* cmd);
  void CountFlush();

  // Durable grants (client_durable.cc).
  void JoinGroup(Connection* conn, Command* cmd);
  void LeaveGroup(Command* cmd);
  static void OnWaitsDueCb(evutil_socket_t, short, void* arg);
  void SendWaits();
  static void OnWaitCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnWait(WaitGroup* group, redisReply* r);

  // Completion (client_loop.cc).
  void ReleaseTimer(Command* cmd);
  void Complete(Command* cmd, absl::StatusOr<RedisReply> result);
  void Finish(Command* cmd, absl::StatusOr<RedisReply> result);
  void Fail(Command* cmd, absl::Status status);
  static void OnCommandTimerCb(evutil_socket_t, short, void* arg);
  void OnCommandTimer(Command* cmd);

  // Health (client_health.cc).
  static void OnHealthTimerCb(evutil_socket_t, short, void* arg);
  void OnHealthTimer();
  void UpdateHealth(Node* node, int64_t now, bool may_reset = false);
  void PublishHealth(const std::string& why);
  void PublishSlots();
  void Log(const Node* node, const std::string& line);

  // Connections (client_connect.cc).
  void StartConnect(Node* node);
  static void OnConnectCb(const redisAsyncContext* ac, int status);
  void OnConnect(Connection* conn, const redisAsyncContext* ac, int status);
  static void OnHandshakeCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnHandshake(Connection* conn, redisReply* r);
  static void OnRoleCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnRole(Connection* conn, redisReply* r);
  static void OnSinceCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnSince(Connection* conn, redisReply* r);
  void MarkReady(Connection* conn);
  static void OnConnectTimerCb(evutil_socket_t, short, void* arg);
  static void OnCloseEventCb(evutil_socket_t, short, void* arg);
  void RequestTeardown(Connection* conn, std::string reason);
  static void OnDisconnectCb(const redisAsyncContext* ac, int);
  void MarkClosed(Connection* conn);
  void Teardown(Connection* conn, const std::string& reason);
  void ScheduleReconnect(Node* node);
  std::string LoginFailure(const Connection* conn, const redisAsyncContext* ac,
                           const char* fallback) const;
  std::string SentinelFailure(const SentinelQuery* q,
                              const redisAsyncContext* ac,
                              const char* fallback) const;
  static void OnReconnectCb(evutil_socket_t, short, void* arg);
  void FreeTimer(event** ev);
  void FreeConnectionEvents(Connection* conn);
  void Purge();

  // Sentinel (client_connect.cc): which server is the primary.
  SentinelQuery* OpenSentinel(Node* node, bool watch, std::string* why);
  void AskSentinel(Node* node);
  static void OnSentinelConnectCb(const redisAsyncContext* ac, int status);
  static void OnSentinelDisconnectCb(const redisAsyncContext* ac, int);
  static void OnSentinelAuthCb(redisAsyncContext* ac, void* r, void* privdata);
  static void OnSentinelReplyCb(redisAsyncContext* ac, void* r, void* privdata);
  static void OnSentinelTimerCb(evutil_socket_t, short, void* arg);
  void SentinelAnswered(SentinelQuery* q, const redisReply* r);
  void SentinelFailed(SentinelQuery* q, const std::string& why);
  // The +switch-master subscription (client_sentinel_watch.cc).
  void StartWatch();
  void ScheduleWatch();
  static void OnWatchTimerCb(evutil_socket_t, short, void* arg);
  static void OnSwitchCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnSwitch(SentinelQuery* q, const redisReply* r);

  // Cluster topology (client_cluster.cc).
  struct RefreshTag;
  void RequestRefresh();
  void StartRefresh();
  static void OnRefreshTimerCb(evutil_socket_t, short, void* arg);
  static void OnSlotsCb(redisAsyncContext* ac, void* r, void* privdata);
  void OnSlots(uint64_t generation, Node* asked, redisReply* r);
  static void OnApplyMapCb(evutil_socket_t, short, void* arg);
  void ApplyMap();
  bool ClusterNeedsRefresh() const;

  // Shutdown (client_loop.cc).
  void CheckDrained();
  static void OnGraceCb(evutil_socket_t, short, void* arg);
  static void OnFinishCb(evutil_socket_t, short, void* arg);
  void Stop();

  RedisClient* client_;
  event_base* base_ = nullptr;
  event* wake_ = nullptr;
  event* health_timer_ = nullptr;
  event* grace_timer_ = nullptr;
  event* finish_ = nullptr;
  event* refresh_timer_ = nullptr;
  event* apply_map_ = nullptr;
  event* waits_due_event_ = nullptr;
  std::vector<Connection*> waits_due_;  // connections with an open group
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::list<std::unique_ptr<SentinelQuery>> queries_;
  event* watch_timer_ = nullptr;  // the next StartWatch
  int next_sentinel_ = 0;
  // Cluster: the primary of each slot (nullptr: unknown), and the map read
  // last, waiting to be applied out of the hiredis callback that read it.
  std::vector<Node*> slots_;
  bool have_map_ = false;
  std::vector<SlotRange> pending_map_;
  std::string map_text_;  // the applied map, as logged
  bool refresh_wanted_ = false;
  bool refresh_in_flight_ = false;
  uint64_t refresh_generation_ = 0;
  int64_t last_refresh_ns_ = INT64_MIN / 2;
  size_t refresh_rotor_ = 0;
  std::string refresh_error_;  // the last failed read's reason, logged once
  int64_t outstanding_ = 0;    // accepted commands whose `done` has not run
  uint64_t sent_ = 0;
  int64_t known_since_us_ = -1;  // the last marker time read (data_losses)
  bool draining_ = false;
  bool stopped_ = false;
  std::mt19937_64 rng_;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_CLIENT_LOOP_H_
