// The connection to a shared Redis server: one background thread running an
// event loop that pipelines every caller's commands, and a few caller lanes
// (RedisOptions::caller_lanes) on which a blocking direct-mode call makes
// its round trip on its own thread.
#ifndef TOKENLEASE_REDIS_H_
#define TOKENLEASE_REDIS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tokenlease/metrics.h"

namespace tokenlease {

namespace internal {
class RedisClient;
struct RedisConnectionAccess;  // src/redis/redis_client.h
}  // namespace internal

// How well Redis answers, as one connection sees it. Judged on the client
// thread from replies, timeouts and the socket (docs/operations.md). For a
// Redis Cluster, per node: a key's limit follows the health of the primary
// of its hash slot, and RedisConnection::health() is kHealthy when every
// primary is, kDown when every primary is, kDegraded otherwise.
enum class RedisHealth : uint8_t {
  // Logged in, and every reply of the last `degraded_hold` came back within
  // `slow_reply` (no command timed out).
  kHealthy,
  // Answering, but a reply took longer than `slow_reply` or a command timed
  // out within the last `degraded_hold`; also the state of a new connection
  // until its first connect attempt ends. Limiters keep using Redis.
  kDegraded,
  // No connection whose login (and PING) was answered, or nothing answered
  // for `down_after` while commands waited. Limiters apply their failure
  // mode (SharedLimitOptions::failure_mode) until Redis answers again.
  kDown,
};

// Returns a stable lower-case name ("healthy", "degraded", "down").
const char* RedisHealthName(RedisHealth h);

// One health transition (RedisOptions::on_health_change).
struct RedisHealthEvent {
  RedisHealth from = RedisHealth::kDown;
  RedisHealth to = RedisHealth::kDown;
  // Why, for people: "no reply for 250ms while 12 commands waited",
  // "connection refused", "replies answered again". Never a credential.
  std::string reason;
};

// TLS for "rediss" endpoints (docs/operations.md "TLS"): the same settings
// for every connection of the endpoint (each cluster node, each sentinel).
// Files are PEM and are read when the connection is created
// (RedisConnection::Create fails with InvalidArgument naming the file and
// OpenSSL's reason if one cannot be used); key material and passwords are
// never logged. The handshake is part of connecting: it has
// `connect_timeout`, the health model, the backoff and the failure modes
// of a plain connect, and its failures are named ("the server's
// certificate is not trusted", "does not name 127.0.0.2", "has expired",
// "the server is not speaking TLS", ...).
struct RedisTlsOptions {
  // Trusted certificate authorities: a file of PEM certificates and/or a
  // directory of hashed ones (openssl rehash). Both empty: the system's
  // default trust store (/etc/ssl/certs), as managed Redis services need.
  std::string ca_file;
  std::string ca_dir;
  // A client certificate (with its chain) and its private key, for servers
  // that require one (tls-auth-clients yes: mutual TLS). Both or neither.
  // An encrypted key is not supported.
  std::string cert_file;
  std::string key_file;
  // The name sent in the handshake (SNI) and checked against the server's
  // certificate (its DNS or IP subject alternative names). Empty: the host
  // of the URL, and for a Redis Cluster the address each node announces;
  // set it when the certificates name a host the nodes are not reached by
  // (one name for every node). Only letters, digits, '.', '-', '_', ':'.
  std::string server_name;
  // Check the server's certificate chain and name (default). false:
  // accept any certificate, which an attacker on the path can forge; one
  // line says so in RedisOptions::log when the connection is created.
  bool verify_peer = true;
};

// How to reach Redis. Every field has a usable default; Validate() says
// which one is out of range.
struct RedisOptions {
  // Where Redis is (docs/operations.md "Endpoints"):
  //   "redis://[[user]:password@]host[:port][/db]", "unix:///path[?db=N]":
  //     one server;
  //   "redis+cluster://[[user]:password@]host:port[,host:port...]": a Redis
  //     Cluster, from any of its nodes (the seeds); commands go to the
  //     primary of their keys' hash slot;
  //   "redis+sentinel://[[user]:password@]host:port[,...]/name[/db]": the
  //     primary that the sentinels at host:port (default port 26379)
  //     monitor as `name`;
  //   "rediss://...", "rediss+cluster://...", "rediss+sentinel://...": the
  //     same over TLS (`tls`).
  // The credentials are the data nodes' (for sentinels: sentinel_user and
  // sentinel_password). Host names are resolved once, when the connection
  // is created; cluster nodes are reached at the addresses they announce.
  std::string url = "redis://127.0.0.1:6379";
  // TLS settings; used by "rediss" URLs only (any non-default field with a
  // "redis" URL fails Validate).
  RedisTlsOptions tls;
  // Sentinel endpoints: how to log in to the sentinels (AUTH), when they
  // require it; empty password: no AUTH. Ignored by other endpoints.
  std::string sentinel_user;
  std::string sentinel_password;
  // Redis Cluster: the least time between two reads of the slot map
  // (CLUSTER SLOTS). A map is read at start, after a MOVED reply, after a
  // node's connect failure or timeout, and while a node that owns slots is
  // down; never more often than this, never more than one at a time, and
  // never blocking the client thread. Smaller: a failover is followed
  // sooner; larger: less load on a cluster in trouble. 1 ms .. 1 min.
  absl::Duration topology_refresh_interval = absl::Milliseconds(100);
  // Durable grants (docs/operations.md "Failover"). Redis replicates
  // asynchronously: a primary that fails may not have passed its last
  // writes on, and the replica that replaces it then lacks grants already
  // used, which the limit hands out again. With durable_replicas > 0,
  // every write of the scripts (a lease, charge, release or direct
  // decision) is followed on its connection by WAIT durable_replicas
  // durable_timeout (one WAIT per pipelined write), and its reply is used
  // only once that many replicas hold it; a write they did not confirm in
  // time fails with Unavailable ("not durable"), and the limit's failure
  // mode decides instead (its tokens stay spent: nothing is admitted
  // twice). Costs a replication round trip per write and one WAIT command
  // per write; docs/benchmarks.md "Failover" measures it. 0 (default):
  // replies are used at once. 0 .. 16; 1 ms <= durable_timeout <
  // command_timeout.
  int durable_replicas = 0;
  absl::Duration durable_timeout = absl::Milliseconds(100);
  // Connect plus AUTH and SELECT must finish within this, else the attempt
  // is abandoned and retried after a backoff. 1 ms .. 1 min.
  absl::Duration connect_timeout = absl::Seconds(1);
  // Default deadline of a command, from submission to reply. A command that
  // misses it fails with DeadlineExceeded; the connection is kept (a slow
  // Redis is not made slower by reconnects) and the late reply is
  // discarded. 1 ms .. 1 min.
  absl::Duration command_timeout = absl::Milliseconds(500);
  // Health (RedisHealth). A reply slower than `slow_reply`, or a timeout,
  // makes the connection kDegraded for `degraded_hold`. Nothing answered
  // for `down_after` while commands wait makes it kDown (limiters then
  // apply their failure mode; smaller: a frozen Redis is noticed sooner,
  // larger: a Redis pausing for a big command is not called down). Nothing
  // answered for `dead_after` resets the connection (the only reset
  // besides a closed socket: a server that froze for good, or a network
  // that lost the peer). 1 ms <= slow_reply <= 1 min; 1 ms <= down_after
  // <= dead_after <= 10 min; 0 <= degraded_hold <= 1 min.
  absl::Duration slow_reply = absl::Milliseconds(100);
  absl::Duration degraded_hold = absl::Seconds(1);
  absl::Duration down_after = absl::Milliseconds(250);
  absl::Duration dead_after = absl::Seconds(5);
  // Reconnect backoff: doubles from min to max, with jitter (each wait is
  // uniform in [d/2, d]). Each attempt connects, logs in and sends PING;
  // only the PING's reply makes the connection usable. The maximum bounds
  // how long after Redis is back leasing resumes. 1 ms <= min <= max <=
  // 1 min.
  absl::Duration reconnect_min_backoff = absl::Milliseconds(10);
  absl::Duration reconnect_max_backoff = absl::Milliseconds(200);
  // Commands submitted but not yet picked up by the client thread; a submit
  // beyond it fails with ResourceExhausted. 2 .. 2^24 (rounded up to a
  // power of two).
  size_t max_pending = 1 << 16;
  // Caller lanes: synchronous connections a blocking DirectLimiter call
  // (TryAcquire, Reserve) uses on its own thread when one is idle, so that
  // a decision costs one round trip instead of a hand-off to the client
  // thread and back (about half the latency of one blocking caller; see
  // docs/benchmarks.md "Direct mode"). A call that finds no idle lane, or
  // lanes paused after an error, or Redis not kHealthy, takes the client
  // thread's pipelined path, so many callers in flight still pipeline. A
  // lane connects on first use (on the caller's thread, within
  // connect_timeout); an error closes it, the call is decided by the failure
  // mode as any failed call, and lanes pause for the reconnect backoff.
  // Used with single-server endpoints (redis://, rediss://, unix://) and
  // durable_replicas == 0 only: a cluster's routing, a sentinel's primary
  // (asked before every connect, checked with ROLE) and the WAIT of durable
  // grants live on the client thread. More lanes: more blocking callers
  // skip the hand-off, at one Redis connection each and one unpipelined
  // round trip each (Redis then spends more CPU per call). 0 disables.
  // 0 .. 64; default 2.
  int caller_lanes = 2;
  // On destruction, how long commands already submitted may still finish
  // before they are failed with Cancelled. 0 .. 1 min.
  absl::Duration shutdown_grace = absl::Seconds(1);
  // Called on the client thread at every health transition (also the first,
  // kDegraded to kHealthy or kDown). Must be quick and must not block. Empty:
  // none.
  std::function<void(const RedisHealthEvent&)> on_health_change;
  // Receives one line per health transition (with its reason, such as the
  // last connect error), per connection reset, and per new reason a
  // connection cannot be made or was lost (a refused AUTH, a refused
  // connect; repeated attempts for the same reason log once), on the client
  // thread; never carries a credential. Empty: none.
  std::function<void(std::string_view line)> log;

  // OK, or InvalidArgument naming the field, its value and the accepted
  // range (including a malformed url).
  absl::Status Validate() const;
};

// Counters of one connection since creation. Approximate while traffic runs.
struct RedisStats {
  uint64_t commands_sent = 0;  // written to a connection (incl. resends)
  uint64_t replies = 0;        // replies received (incl. error replies)
  uint64_t timeouts = 0;       // commands failed with DeadlineExceeded
  uint64_t late_replies = 0;   // replies that came after their timeout
  // Connects whose login and PING were answered (a TCP accept by a frozen
  // server is not one).
  uint64_t connects = 0;
  uint64_t connect_failures = 0;
  uint64_t script_reloads = 0;  // NOSCRIPT answered by resending as EVAL
  // Pipelined writes: loop turns that sent at least one command (all the
  // commands of one turn leave in one write). commands_sent / flushes is the
  // mean pipeline depth.
  uint64_t flushes = 0;
  uint64_t resets = 0;  // connections reset: nothing answered dead_after
  // Health transitions, by the state entered (the initial kDegraded is not
  // one): with `health`, the state and transitions of docs/metrics.md.
  uint64_t healthy = 0;   // transitions into kHealthy
  uint64_t degraded = 0;  // transitions into kDegraded
  uint64_t down = 0;      // transitions into kDown
  // When this Redis's tokenlease state began (µs since the epoch, Redis's
  // clock): the data-loss marker every connection reads before its first
  // call (docs/lua-protocol.md, since.lua); -1 until read, or if it cannot
  // be (a read-only replica, OOM). A limit with start_empty counts keys
  // without state as drained at that time.
  int64_t state_since_us = -1;
  // Times the marker changed while this client ran: Redis lost its data (a
  // restart without persistence, FLUSHALL, a failover to an empty replica).
  uint64_t data_losses = 0;
  RedisHealth health = RedisHealth::kDegraded;  // now
  // Redis Cluster (0 elsewhere): redirects followed (MOVED: the slot lives
  // elsewhere now, the map is read again; ASK: one command goes to the
  // node importing its slot), slot map reads sent (CLUSTER SLOTS), and the
  // primaries the current map names, and how many of them are kDown.
  uint64_t moved = 0;
  uint64_t asked = 0;
  uint64_t topology_refreshes = 0;
  int nodes = 0;
  int nodes_down = 0;
  // Sentinel endpoints (0 elsewhere): times the sentinels were asked for
  // the primary, and times a server found was refused (not a primary, or
  // it answered READONLY or LOADING).
  uint64_t sentinel_queries = 0;
  uint64_t role_refusals = 0;
  // durable_replicas > 0: WAIT commands sent, and script replies refused
  // because fewer replicas than asked confirmed them in time.
  uint64_t durability_waits = 0;
  uint64_t not_durable = 0;
  // Caller lanes (RedisOptions::caller_lanes): calls written on a lane by
  // the calling thread (not in commands_sent, replies or round_trip), lane
  // logins completed, lane errors (a connect or login that failed, a call
  // that timed out or lost its connection; each closed its lane and paused
  // the lanes), and lanes connected now.
  uint64_t lane_calls = 0;
  uint64_t lane_connects = 0;
  uint64_t lane_errors = 0;
  int lanes_open = 0;
  // Round trips: from a command's write to its reply (late replies and
  // error replies included; a command that got no reply is in `timeouts`
  // or failed with its connection), measured on the client thread.
  LatencyHistogram round_trip;
};

// A shared handle to one Redis client thread. Limiters that take a
// connection share its thread and pipeline; destroying the last handle
// stops the thread (see RedisOptions::shutdown_grace). Thread-safe.
// Asynchronous callbacks run on that thread: they must not block, and must
// not drop the last reference to the connection (or to a limiter that owns
// it): the process aborts with a message if they do.
class RedisConnection {
 public:
  // Validates `options`, resolves the host, and starts the client thread.
  // Does not wait for the server: connecting happens in the background, and
  // commands submitted meanwhile wait (up to their deadline) for it.
  static absl::StatusOr<std::shared_ptr<RedisConnection>> Create(
      const RedisOptions& options);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // The endpoint, without credentials ("redis://127.0.0.1:6379/0").
  std::string endpoint() const;
  const RedisOptions& options() const { return options_; }
  RedisStats stats() const;
  // True while a connection is logged in and its PING was answered.
  bool connected() const;
  // The connection's health now (RedisHealth).
  RedisHealth health() const;

 private:
  friend struct internal::RedisConnectionAccess;
  RedisConnection(RedisOptions options,
                  std::unique_ptr<internal::RedisClient> client);
  RedisOptions options_;
  std::unique_ptr<internal::RedisClient> client_;
};

}  // namespace tokenlease

#endif  // TOKENLEASE_REDIS_H_
