// Launchers of the multi-server test topologies, built from the one
// launcher of single servers (redis_server.h) and driven with the one
// synchronous client (sync_redis.h): a Redis Cluster of primaries and
// replicas (RedisCluster) and a primary with a replica watched by three
// sentinels (RedisSentinelSet). Their faults are the servers' own (Kill,
// Pause through node(i) / primary()); these classes add the waits that make
// a fault test deterministic (until the failover is over, as every node
// sees it) and the steps of a slot migration.
//
// Every server listens on 127.0.0.1 only, runs in a temporary directory of
// its own, keeps nothing on disk but the cluster's nodes.conf and the
// sentinels' rewritten configuration, and is killed with the thread that
// started it (PR_SET_PDEATHSIG): call Start from the thread that lives as
// long as the topology (the test's own thread). Every wait is bounded.
//
// With `tls` (support/tls_certs.h makes the certificates), every server
// also listens on a TLS port and the servers speak TLS to one another; the
// launchers keep driving them over the plaintext ports, and tls_url()
// names the TLS ports for the client under test.
//
//   absl::StatusOr<std::unique_ptr<RedisCluster>> cluster =
//       RedisCluster::Start({.primaries = 3, .replicas_per_primary = 1});
//   if (!cluster.ok()) return cluster.status();
//   std::string url = (*cluster)->url();  // redis+cluster://127.0.0.1:...
//   absl::StatusOr<int> primary = (*cluster)->PrimaryOfSlot(0);
//   (*cluster)->Kill(*primary);
//   absl::StatusOr<int> promoted =
//       (*cluster)->WaitForFailover(*primary, absl::Seconds(15));
#ifndef TOKENLEASE_SUPPORT_REDIS_CLUSTER_H_
#define TOKENLEASE_SUPPORT_REDIS_CLUSTER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "redis/cluster_map.h"
#include "redis/reply.h"
#include "support/redis_server.h"
#include "support/sync_redis.h"

namespace tokenlease::support {

// The hash slots of a Redis Cluster: 0 to kClusterSlots - 1 (the
// library's constant).
using internal::kClusterSlots;

// How to start a cluster. Designated initializers name what differs from
// the defaults: RedisCluster::Start({.replicas_per_primary = 0}).
struct RedisClusterOptions {
  // The primaries, which share the slots evenly (as `redis-cli --cluster
  // create` splits them); at least 1.
  int primaries = 3;
  // The replicas of each primary; 0 or more.
  int replicas_per_primary = 1;
  // cluster-node-timeout: how long a node may not answer before it is
  // failing; a killed primary's replica takes over about 2 to 3 times this
  // later.
  absl::Duration node_timeout = absl::Milliseconds(2000);
  // TLS (its `port` is ignored: each node's is picked): every node also
  // listens on a TLS port, with tls-cluster yes (the cluster bus speaks TLS,
  // on the TLS port + 10000) and tls-replication yes (so do the replicas'
  // links). The nodes then announce their TLS ports: a client on a TLS
  // connection is told TLS ports (CLUSTER SLOTS, CLUSTER NODES, MOVED,
  // ASK), one on a plaintext connection plaintext ports (Redis 7.0). The
  // launcher itself stays on the plaintext ports. nullopt: plaintext only.
  std::optional<RedisTlsServerOptions> tls{};
  // More redis.conf lines for every node, after the launcher's own (a later
  // directive wins).
  std::vector<std::string> config_lines{};
  // How long Start may take in all: the servers, the joining of the
  // cluster and the replicas' first synchronization.
  absl::Duration start_timeout = absl::Seconds(30);
  // The start of the nodes' temporary directories' names
  // ("<name>-<index>.XXXXXX").
  std::string name = "tokenlease-cluster";
};

// A running Redis Cluster on 127.0.0.1. Nodes 0 to primaries - 1 start as
// the primaries, in slot order; node primaries + j * replicas_per_primary +
// r starts as replica r of primary j. The indices stay the servers'
// through failovers (a promoted replica keeps its index).
//
// The launcher never sends CLUSTER SLOTS itself (it reads CLUSTER NODES):
// CountCommand(i, "cluster|slots") counts only its callers' requests.
// Not thread-safe; not copyable. The destructor stops every node and
// removes their directories.
class RedisCluster {
 public:
  // Starts the nodes, assigns the slots, joins them into one cluster and
  // attaches the replicas without any fixed sleep, then waits until every
  // node says cluster_state:ok and knows every other node in its role and
  // every replica's link to its primary is up. InvalidArgument for options
  // that make no cluster; NotFound if redis-server is not installed;
  // DeadlineExceeded after start_timeout, naming the node and what it
  // lacked, with that node's last log line; Unavailable if a node would not
  // start. Nothing is left running on failure.
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start(
      RedisClusterOptions options = {});

  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // The number of nodes: primaries * (1 + replicas_per_primary).
  int size() const { return static_cast<int>(nodes_.size()); }
  // Node `i` (0 <= i < size(); std::out_of_range otherwise): its port, its
  // log, and the faults Pause, Resume and Restart. Prefer Kill below to
  // node(i).Kill(): it remembers the slots the node served.
  RedisServer& node(int i) { return *nodes_.at(i); }
  const RedisServer& node(int i) const { return *nodes_.at(i); }
  // Node `i`'s cluster node id (CLUSTER MYID, kept across Restart).
  const std::string& node_id(int i) const { return ids_.at(i); }
  // The options it was started with.
  const RedisClusterOptions& options() const { return options_; }
  // "redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,...": the ports of the
  // nodes that started as primaries, as seeds (still valid seeds after a
  // failover while one of them runs). No credentials.
  std::string url() const;
  // "rediss+cluster://127.0.0.1:<t1>,127.0.0.1:<t2>,...": the TLS ports of
  // the same nodes; "" without `tls`.
  std::string tls_url() const;

  // The node serving `slot` now, as the first running node that answers
  // sees it (a killed primary until its failover is over). InvalidArgument
  // for a slot out of range; NotFound if no node serves it; Unavailable if
  // no node answers.
  absl::StatusOr<int> PrimaryOfSlot(int slot);
  // The nodes serving at least one slot, in index order, as the first
  // running node that answers sees them.
  absl::StatusOr<std::vector<int>> Primaries();
  // A replica of `primary_index` not flagged failing, as the primary sees
  // it (or, if it is not running, the first running node that answers): the
  // lowest index. NotFound if it has none.
  absl::StatusOr<int> ReplicaOf(int primary_index);
  // The calls of `command` in node `i`'s INFO commandstats since it
  // started: "get", "cluster|slots" (a subcommand after '|', lower case).
  // 0 if never called.
  absl::StatusOr<int64_t> CountCommand(int i, std::string_view command);

  // SIGKILL to node `i` (RedisServer::Kill), after noting the slots it
  // served for WaitForFailover. Nothing if it is not running (or not a
  // node).
  void Kill(int i);
  // Waits at most `timeout` until a running node says it is a master
  // (ROLE) serving every slot `killed` served when it was killed, every
  // running node names that node for those slots, and every running node
  // says cluster_state:ok; returns that node's index. FailedPrecondition if
  // `killed` still runs or served no slot (a replica); DeadlineExceeded
  // naming the node and what it lacked, with its last log line.
  absl::StatusOr<int> WaitForFailover(int killed, absl::Duration timeout);

  // A slot migration in the steps a resharding takes, for the tests of the
  // redirections in between (ASK, then MOVED): BeginSlotMigration, then
  // MigrateKeys, then FinishSlotMigration. The errors are
  // FailedPrecondition with the node's refusal (e.g. `from` does not serve
  // the slot).
  //
  // CLUSTER SETSLOT IMPORTING on `to`, then MIGRATING on `from`: `from`
  // answers ASK for the slot's keys it no longer has, `to` serves them
  // after ASKING.
  absl::Status BeginSlotMigration(int slot, int from, int to);
  // Moves every key of `slot` from `from` to `to` (CLUSTER GETKEYSINSLOT,
  // MIGRATE ... KEYS in batches of 100, each MIGRATE bounded by 5 s).
  // Internal if a batch moves nothing.
  absl::Status MigrateKeys(int slot, int from, int to);
  // CLUSTER SETSLOT NODE <to> on `to`, then on every other running master;
  // then waits (at most the options' start_timeout) until every running
  // node names `to` for the slot, so that PrimaryOfSlot agrees at once.
  absl::Status FinishSlotMigration(int slot, int to);

 private:
  struct NodeEntry;  // one line of CLUSTER NODES

  explicit RedisCluster(RedisClusterOptions options);
  absl::Status StartNodes(absl::Time deadline);
  absl::Status Join(absl::Time deadline);
  // Node `i`'s reply to `args` on its cached connection; an error reply is
  // a reply. Unavailable if it is not running or does not answer.
  absl::StatusOr<internal::RedisReply> Run(
      int i, const std::vector<std::string>& args);
  // The same, with an error reply as FailedPrecondition naming the node.
  absl::StatusOr<internal::RedisReply> RunOk(
      int i, const std::vector<std::string>& args);
  // Node `i`'s CLUSTER NODES, parsed.
  absl::StatusOr<std::vector<NodeEntry>> View(int i);
  // The view of the first running node that answers.
  absl::StatusOr<std::vector<NodeEntry>> AnyView();
  // The node listening on `port` (plaintext or TLS); -1 if none.
  int IndexOfPort(int port) const;
  // The port node `i` announces to the others: its TLS port with `tls`,
  // else its port. Its bus listens on this + 10000.
  int AnnouncedPort(int i) const;
  // "node 3 (127.0.0.1:12345)", for messages.
  std::string Describe(int i) const;
  absl::Status CheckIndex(int i, absl::string_view what) const;

  RedisClusterOptions options_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::string> ids_;
  // One connection per node, opened on first use, dropped when it fails.
  std::vector<std::optional<SyncRedis>> connections_;
  // The slots each node served when Kill killed it.
  std::vector<std::vector<int>> killed_slots_;
};

// How to start a sentinel set. Designated initializers name what differs
// from the defaults: RedisSentinelSet::Start({.password = "data"}).
struct RedisSentinelOptions {
  // The name the sentinels monitor the primary under: letters, digits,
  // '.', '_' and '-'.
  std::string master_name = "mymaster";
  // The data nodes' requirepass (also their masterauth, and the sentinels'
  // auth-pass); empty: none.
  std::string password{};
  // The sentinels' own requirepass (also their sentinel-pass, to talk to
  // one another); empty: none.
  std::string sentinel_password{};
  // sentinel down-after-milliseconds: how long the primary may not answer
  // before a sentinel thinks it down.
  absl::Duration down_after = absl::Milliseconds(1000);
  // sentinel failover-timeout: also how long a failed failover attempt
  // waits before the next (twice this).
  absl::Duration failover_timeout = absl::Milliseconds(5000);
  // TLS (its `port` is ignored: each server's is picked): the primary, the
  // replica and the sentinels also listen on TLS ports, all with
  // tls-replication yes, so the replica's link, the sentinels' links to
  // the data nodes and to one another speak TLS, and every port the
  // sentinels know and name (SENTINEL GET-MASTER-ADDR-BY-NAME, REPLICAS,
  // SENTINELS) is a TLS port. The launcher itself stays on the plaintext
  // ports. nullopt: plaintext only.
  std::optional<RedisTlsServerOptions> tls{};
  // More redis.conf lines for the two data nodes (not the sentinels).
  std::vector<std::string> config_lines{};
  // How long Start may take in all.
  absl::Duration start_timeout = absl::Seconds(30);
  // The start of the servers' temporary directories' names.
  std::string name = "tokenlease-sentinel";
};

// A primary, its replica and three sentinels monitoring them with quorum
// 2, on 127.0.0.1. The sentinels know one another from the start (their
// configuration names them), so none waits for the others' hello messages.
// Not thread-safe; not copyable. The destructor stops every server and
// removes their directories.
class RedisSentinelSet {
 public:
  // The number of sentinels.
  static constexpr int kSentinels = 3;

  // Starts the primary and the replica, waits until the replica's link is
  // up, starts the sentinels and waits until each sees the primary up, the
  // replica linked and the two other sentinels connected. InvalidArgument
  // for a bad master name; NotFound if redis-server is not installed;
  // DeadlineExceeded after start_timeout naming the server and what it
  // lacked, with its last log line. Nothing is left running on failure.
  static absl::StatusOr<std::unique_ptr<RedisSentinelSet>> Start(
      RedisSentinelOptions options = {});

  ~RedisSentinelSet();
  RedisSentinelSet(const RedisSentinelSet&) = delete;
  RedisSentinelSet& operator=(const RedisSentinelSet&) = delete;

  // "redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<name>",
  // without credentials (a URL's password is the data nodes').
  std::string url() const;
  // "rediss+sentinel://127.0.0.1:<t1>,127.0.0.1:<t2>,127.0.0.1:<t3>/<name>":
  // the sentinels' TLS ports; "" without `tls`.
  std::string tls_url() const;
  // The server started as the primary, and the one started as its replica:
  // the names stay after a failover (CurrentPrimaryPort says which serves).
  RedisServer& primary() { return *primary_; }
  RedisServer& replica() { return *replica_; }
  // Sentinel `i` (0 <= i < kSentinels; std::out_of_range otherwise).
  RedisServer& sentinel(int i) { return *sentinels_.at(i); }
  // The options it was started with.
  const RedisSentinelOptions& options() const { return options_; }

  // The primary's port as the first running sentinel that answers names it
  // (SENTINEL GET-MASTER-ADDR-BY-NAME): its TLS port with `tls`.
  // Unavailable if none answers.
  absl::StatusOr<int> CurrentPrimaryPort();
  // Waits at most `timeout` until every running sentinel names the same
  // port other than `old_port` (a data node's port or, with `tls`, TLS
  // port) and the server there says it is a master (ROLE); returns that
  // port as the sentinels name it (the TLS port with `tls`).
  // DeadlineExceeded naming what was missing.
  absl::StatusOr<int> WaitForFailover(int old_port, absl::Duration timeout);

 private:
  explicit RedisSentinelSet(RedisSentinelOptions options);
  absl::Status StartDataNodes(absl::Time deadline);
  absl::Status StartSentinels(absl::Time deadline);
  // The running data node listening on `port` (plaintext or TLS); nullptr
  // if none.
  RedisServer* ServerOnPort(int port);
  // The port the sentinels know `server` by: its TLS port with `tls`.
  int AnnouncedPort(const RedisServer& server) const;
  // `server`'s reply to `args` on its cached connection (an error reply is
  // a reply); Unavailable if it is not running or does not answer.
  absl::StatusOr<internal::RedisReply> Run(
      RedisServer& server, const std::vector<std::string>& args);

  RedisSentinelOptions options_;
  std::unique_ptr<RedisServer> primary_;
  std::unique_ptr<RedisServer> replica_;
  std::array<std::unique_ptr<RedisServer>, kSentinels> sentinels_;
  // One connection per server (primary, replica, the sentinels), opened on
  // first use, dropped when it fails.
  std::array<std::optional<SyncRedis>, 2 + kSentinels> connections_;
};

}  // namespace tokenlease::support

#endif  // TOKENLEASE_SUPPORT_REDIS_CLUSTER_H_
