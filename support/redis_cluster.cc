#include "support/redis_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "support/redis_info.h"

namespace tokenlease::support {
namespace {

using internal::RedisReply;

// How often the waits ask the servers again.
constexpr absl::Duration kPollEvery = absl::Milliseconds(20);
// A cluster node's bus listens on its port + this (Redis's default).
constexpr int kBusPortOffset = 10000;
// Where the launcher picks its ports: below the kernel's ephemeral range
// (32768-60999 by default), data port and bus port alike, so that no
// outgoing connection takes one between the check and the server's bind.
constexpr int kFirstPort = 10000;
constexpr int kLastPort = 22000;
constexpr int kPortCandidates = 200;
// Servers started on another port when theirs was taken meanwhile.
constexpr int kStartAttempts = 5;
// GETKEYSINSLOT batch, and the MIGRATE timeout (ms) of each batch; the
// connection waits a little longer than MIGRATE itself.
constexpr int kMigrateBatch = 100;
constexpr int kMigrateTimeoutMs = 5000;
constexpr absl::Duration kMigrateConnectionTimeout = absl::Seconds(10);
// Sentinel's ping period (SENTINEL_PING_PERIOD), and the shorter one while
// the sentinels start.
constexpr absl::Duration kSentinelPingPeriod = absl::Seconds(1);
constexpr absl::Duration kSentinelStartPingPeriod = absl::Milliseconds(100);

// The launchers' random numbers (ports, sentinel ids): random, not
// sequential, so that tests that run in parallel, each with its own
// topology, rarely pick the same port.
std::mt19937& Rng() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return rng;
}

// True if a bind to 127.0.0.1:`port` without SO_REUSEADDR succeeds: no
// listener and no connection in TIME_WAIT there (stricter than the
// server's own bind, which reuses such a port).
bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// A random port that is free now, and whose bus port (+ 10000) is free too
// when `with_bus`. Another process may take it before the server binds it:
// the callers start again on another.
absl::StatusOr<int> PickPort(bool with_bus) {
  std::uniform_int_distribution<int> dist(kFirstPort, kLastPort);
  for (int i = 0; i < kPortCandidates; ++i) {
    const int port = dist(Rng());
    if (PortFree(port) && (!with_bus || PortFree(port + kBusPortOffset))) {
      return port;
    }
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "no free port (", with_bus ? "with its bus port + 10000 " : "",
      "free too) among ", kPortCandidates, " tried in ", kFirstPort, "-",
      kLastPort, " on 127.0.0.1: stop leftover redis-server processes"));
}

// Starts a server with `options` on a port PickPort chose, on another if
// that one was taken meanwhile (the server then exits: Unavailable). With
// options.tls, its TLS port is picked too; the bus port (`with_bus`) is
// then the TLS port's (tls-cluster: the bus speaks TLS, on tls-port +
// 10000).
absl::StatusOr<std::unique_ptr<RedisServer>> StartOnPickedPort(
    RedisServerOptions options, bool with_bus) {
  absl::Status last;
  const bool tls = options.tls.has_value();
  for (int i = 0; i < kStartAttempts; ++i) {
    absl::StatusOr<int> port = PickPort(with_bus && !tls);
    if (!port.ok()) return port.status();
    options.port = *port;
    if (tls) {
      absl::StatusOr<int> tls_port;
      do {
        tls_port = PickPort(with_bus);
        if (!tls_port.ok()) return tls_port.status();
      } while (*tls_port == *port || *tls_port + kBusPortOffset == *port);
      options.tls->port = *tls_port;
    }
    auto server = StartRedisServer(options);
    if (server.ok() || !absl::IsUnavailable(server.status())) return server;
    last = server.status();
  }
  return last;
}

// Runs `args` on `server` over `*connection`, connecting first if there is
// none, and drops a connection that fails.
absl::StatusOr<RedisReply> RunCached(const RedisServer& server,
                                     std::optional<SyncRedis>& connection,
                                     const std::vector<std::string>& args) {
  if (!server.running()) {
    return absl::UnavailableError(
        absl::StrCat("127.0.0.1:", server.port(), " is not running"));
  }
  if (connection.has_value()) {
    const absl::Time sent = absl::Now();
    absl::StatusOr<RedisReply> reply = connection->Run(args);
    if (reply.ok()) return reply;
    connection.reset();
    // Failed at once: closed, the server restarted since (the command never
    // ran there); once more on a new connection. Not after a timeout: a
    // server that hangs would only make the caller wait twice as long.
    if (absl::Now() - sent >= kDefaultRedisTimeout / 2) return reply;
  }
  absl::StatusOr<SyncRedis> redis = server.Connect();
  if (!redis.ok()) return redis.status();
  connection.emplace(*std::move(redis));
  absl::StatusOr<RedisReply> reply = connection->Run(args);
  if (!reply.ok()) connection.reset();
  return reply;
}

// What a wait still lacks, and the server whose log may say why.
struct Missing {
  std::string what;
  const RedisServer* server = nullptr;
};

// Calls `check` every kPollEvery until it lacks nothing (nullopt) or
// `deadline` has passed: DeadlineExceeded saying what `goal` still lacked
// `bound` ("within 1s"), with the last log line of the server concerned.
absl::Status WaitUntil(absl::string_view goal, absl::Time deadline,
                       absl::string_view bound,
                       const std::function<std::optional<Missing>()>& check) {
  while (true) {
    std::optional<Missing> missing = check();
    if (!missing.has_value()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      std::string log;
      if (missing->server != nullptr) {
        log = absl::StrCat(
            " (last log line of 127.0.0.1:", missing->server->port(), ": ",
            missing->server->LastLogLine(), ")");
      }
      return absl::DeadlineExceededError(
          absl::StrCat(goal, " not reached ", bound, ": ", missing->what, log));
    }
    absl::SleepFor(kPollEvery);
  }
}

absl::Duration Remaining(absl::Time deadline) {
  return std::max(deadline - absl::Now(), absl::ZeroDuration());
}

// The bound of the waits of a start, which share `start_timeout`.
std::string StartBound(absl::Duration start_timeout) {
  return absl::StrCat("within the start_timeout of ",
                      absl::FormatDuration(start_timeout),
                      " (raise it on a slow or busy machine)");
}

// `s` about `what`; a server start that ran out of time also names the
// whole start's budget (the server had only what was left of it).
absl::Status StartFailed(absl::string_view what, const absl::Status& s,
                         absl::Duration start_timeout) {
  return absl::Status(
      s.code(),
      absl::StrCat(
          what, ": ", s.message(),
          absl::IsDeadlineExceeded(s)
              ? absl::StrCat(
                    "; the whole start may take ",
                    absl::FormatDuration(start_timeout),
                    " (start_timeout: raise it on a slow or busy machine)")
              : ""));
}

// The integer a reply element holds, as a number or as text.
int64_t AsInteger(const RedisReply& r) {
  int64_t v = -1;
  if (r.type == RedisReply::Type::kInteger) return r.integer;
  return absl::SimpleAtoi(r.str, &v) ? v : -1;
}

// The element after `key` in a flat [key, value, key, value, ...] array
// (the replies of CLUSTER SHARDS and the SENTINEL commands); nil if absent.
const RedisReply& FlatEntry(const RedisReply& flat, absl::string_view key) {
  static const RedisReply kNil;
  for (size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    if (flat.elements[i].str == key) return flat.elements[i + 1];
  }
  return kNil;
}

// FlatEntry's text; "" if absent.
std::string FlatField(const RedisReply& flat, absl::string_view key) {
  return FlatEntry(flat, key).str;
}

// The first word of ROLE's reply: "master", "slave", "sentinel"; "" if the
// reply is something else.
std::string RoleOf(const absl::StatusOr<RedisReply>& role) {
  if (!role.ok() || role->type != RedisReply::Type::kArray ||
      role->elements.empty()) {
    return "";
  }
  return role->elements[0].str;
}

// A status's message or an error reply's text, for what a wait lacks.
std::string Why(const absl::StatusOr<RedisReply>& reply) {
  return reply.ok() ? reply->DebugString()
                    : std::string(reply.status().message());
}

}  // namespace

// ---------------------------------------------------------------------------
// RedisCluster

// One line of CLUSTER NODES: "<id> <ip:port@cport[,hostname]> <flags>
// <master id or -> <ping sent> <pong received> <epoch> <link> <slot>...".
struct RedisCluster::NodeEntry {
  std::string id;
  int port = 0;
  std::vector<std::string> flags;  // "myself", "master", "slave", "fail?"...
  std::string master_id;           // "-" for a master
  std::vector<int> slots;          // served, not importing or migrating

  bool Has(absl::string_view flag) const {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  }
};

namespace {

absl::StatusOr<std::vector<std::vector<std::string>>> SplitNodes(
    absl::string_view text) {
  std::vector<std::vector<std::string>> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> fields = absl::StrSplit(
        absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
    if (fields.size() < 8) {
      return absl::InternalError(
          absl::StrCat("unexpected CLUSTER NODES line: ", line));
    }
    lines.push_back(std::move(fields));
  }
  return lines;
}

// The port of "ip:port@cport[,hostname]"; 0 if there is none.
int PortOfAddress(absl::string_view address) {
  address = address.substr(0, address.find('@'));
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return 0;
  }
  return port;
}

}  // namespace

RedisCluster::RedisCluster(RedisClusterOptions options)
    : options_(std::move(options)) {}

RedisCluster::~RedisCluster() {
  // SIGKILL, replicas first: the data is thrown away, and a primary stopped
  // with SIGTERM would wait (up to shutdown-timeout) for a lagging replica,
  // a paused one for instance.
  for (int i = size() - 1; i >= 0; --i) node(i).Kill();
}

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start(
    RedisClusterOptions options) {
  if (options.primaries < 1 || options.primaries > kClusterSlots ||
      options.replicas_per_primary < 0 ||
      options.primaries * (1 + options.replicas_per_primary) > 100) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a cluster of ", options.primaries, " primaries with ",
        options.replicas_per_primary,
        " replicas each: give at least 1 primary, 0 or more replicas, and "
        "at most 100 nodes in all"));
  }
  if (options.node_timeout < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node_timeout ", absl::FormatDuration(options.node_timeout),
        ": give at least 1ms"));
  }
  const absl::Time deadline = absl::Now() + options.start_timeout;
  std::unique_ptr<RedisCluster> cluster(new RedisCluster(std::move(options)));
  if (absl::Status s = cluster->StartNodes(deadline); !s.ok()) return s;
  if (absl::Status s = cluster->Join(deadline); !s.ok()) return s;
  return cluster;
}

absl::Status RedisCluster::StartNodes(absl::Time deadline) {
  const int total = options_.primaries * (1 + options_.replicas_per_primary);
  std::vector<std::string> lines = {
      "cluster-enabled yes",
      // In the node's own directory (RedisServer's `dir`): kept across
      // Restart, so a restarted node keeps its id and rejoins.
      "cluster-config-file nodes.conf",
      absl::StrCat("cluster-node-timeout ",
                   absl::ToInt64Milliseconds(options_.node_timeout)),
      // A replica's first synchronization, and a failover's, at once: no
      // RDB file, no 5 s wait for more replicas.
      "repl-diskless-sync yes",
      "repl-diskless-sync-delay 0",
      // The topology stays as started: no replica moves to a primary left
      // without one (ReplicaOf and the tests count on where they are).
      "cluster-allow-replica-migration no",
      // The defaults, spelled out since the tests depend on them: a slot
      // without a node fails the whole cluster, and a failing cluster
      // refuses reads too. (RedisServer itself keeps no RDB or AOF.)
      "cluster-require-full-coverage yes",
      "cluster-allow-reads-when-down no",
  };
  if (options_.tls.has_value()) {
    // The bus and the replication links speak TLS too: the nodes announce
    // their TLS ports to one another (and to clients on a TLS connection).
    lines.push_back("tls-cluster yes");
    lines.push_back("tls-replication yes");
  }
  lines.insert(lines.end(), options_.config_lines.begin(),
               options_.config_lines.end());
  for (int i = 0; i < total; ++i) {
    absl::StatusOr<std::unique_ptr<RedisServer>> node =
        StartOnPickedPort({.tls = options_.tls,
                           .config_lines = lines,
                           .name = absl::StrCat(options_.name, "-", i),
                           .start_timeout = Remaining(deadline)},
                          /*with_bus=*/true);
    if (!node.ok()) {
      return StartFailed(absl::StrCat("cluster node ", i), node.status(),
                         options_.start_timeout);
    }
    nodes_.push_back(*std::move(node));
    connections_.emplace_back();
    killed_slots_.emplace_back();
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::Join(absl::Time deadline) {
  const int total = size();
  // Ids, and distinct config epochs while no node knows another (the only
  // time SET-CONFIG-EPOCH is allowed): as redis-cli does, so that no two
  // primaries start with the same epoch and none has to be bumped first.
  for (int i = 0; i < total; ++i) {
    absl::StatusOr<RedisReply> id = RunOk(i, {"CLUSTER", "MYID"});
    if (!id.ok()) return id.status();
    ids_.push_back(id->str);
    absl::StatusOr<RedisReply> epoch =
        RunOk(i, {"CLUSTER", "SET-CONFIG-EPOCH", absl::StrCat(i + 1)});
    if (!epoch.ok()) return epoch.status();
  }
  // The slots, split as `redis-cli --cluster create` splits them.
  const double per_primary =
      static_cast<double>(kClusterSlots) / options_.primaries;
  double cursor = 0;
  int first = 0;
  for (int i = 0; i < options_.primaries; ++i) {
    int last = static_cast<int>(std::lround(cursor + per_primary - 1));
    if (last > kClusterSlots - 1 || i == options_.primaries - 1) {
      last = kClusterSlots - 1;
    }
    last = std::max(last, first);
    absl::StatusOr<RedisReply> added = RunOk(
        i,
        {"CLUSTER", "ADDSLOTSRANGE", absl::StrCat(first), absl::StrCat(last)});
    if (!added.ok()) {
      return absl::Status(
          added.status().code(),
          absl::StrCat(added.status().message(),
                       " (CLUSTER ADDSLOTSRANGE needs Redis 7.0 or later)"));
    }
    first = last + 1;
    cursor += per_primary;
  }
  // Every node meets every other: meeting only the first and leaving the
  // rest to gossip takes 1 to 2 s more (a node pings each other only every
  // node_timeout / 2).
  for (int i = 1; i < total; ++i) {
    for (int j = 0; j < i; ++j) {
      absl::StatusOr<RedisReply> met = RunOk(
          i, {"CLUSTER", "MEET", "127.0.0.1", absl::StrCat(AnnouncedPort(j))});
      if (!met.ok()) return met.status();
    }
  }
  absl::Status known = WaitUntil(
      "every cluster node knowing all " + absl::StrCat(total), deadline,
      StartBound(options_.start_timeout), [&]() -> std::optional<Missing> {
        for (int i = 0; i < total; ++i) {
          absl::StatusOr<RedisReply> info = Run(i, {"CLUSTER", "INFO"});
          const int64_t n =
              info.ok() ? InfoField(info->str, "cluster_known_nodes") : -1;
          if (n != total) {
            return Missing{
                absl::StrCat(Describe(i), " knows ", n, " (", Why(info), ")"),
                &node(i)};
          }
        }
        return std::nullopt;
      });
  if (!known.ok()) return known;
  const int replicas = options_.replicas_per_primary;
  for (int i = options_.primaries; i < total; ++i) {
    const int primary = (i - options_.primaries) / replicas;
    absl::StatusOr<RedisReply> attached =
        RunOk(i, {"CLUSTER", "REPLICATE", ids_[primary]});
    if (!attached.ok()) return attached.status();
  }
  absl::Status linked = WaitUntil(
      "replicas linked to their primaries", deadline,
      StartBound(options_.start_timeout), [&]() -> std::optional<Missing> {
        for (int i = options_.primaries; i < total; ++i) {
          absl::StatusOr<RedisReply> repl = Run(i, {"INFO", "replication"});
          if (!repl.ok() || InfoText(repl->str, "master_link_status") != "up") {
            return Missing{
                absl::StrCat(Describe(i), " has no master_link_status:up"),
                &node(i)};
          }
        }
        return std::nullopt;
      });
  if (!linked.ok()) return linked;
  // A new primary's replication offset stays 0 until something is
  // replicated (its PING to the replicas, every 10 s), and until then no
  // node lists a replica at offset 0 in CLUSTER SLOTS or as online in
  // CLUSTER SHARDS: clients would see primaries alone. FLUSHALL changes
  // nothing in a new cluster but is always replicated (since 7.0).
  if (replicas > 0) {
    for (int i = 0; i < options_.primaries; ++i) {
      if (absl::StatusOr<RedisReply> r = RunOk(i, {"FLUSHALL"}); !r.ok()) {
        return r.status();
      }
    }
  }
  // Ready for the tests: every node sees every other in its role, online
  // (a replica at an offset above 0, as gossip brings it), so that clients
  // see the whole topology wherever they ask, and the primaries (the
  // voters of a failover) know which primary each replica would replace.
  return WaitUntil(
      absl::StrCat("a ready cluster of ", total, " nodes"), deadline,
      StartBound(options_.start_timeout), [&]() -> std::optional<Missing> {
        for (int i = 0; i < total; ++i) {
          absl::StatusOr<RedisReply> info = Run(i, {"CLUSTER", "INFO"});
          if (!info.ok() || InfoText(info->str, "cluster_state") != "ok") {
            return Missing{
                absl::StrCat(Describe(i), " does not say cluster_state:ok (",
                             info.ok() ? InfoText(info->str, "cluster_state")
                                       : Why(info),
                             ")"),
                &node(i)};
          }
          absl::StatusOr<std::vector<NodeEntry>> view = View(i);
          if (!view.ok()) {
            return Missing{std::string(view.status().message()), &node(i)};
          }
          for (const NodeEntry& e : *view) {
            const int j = IndexOfPort(e.port);
            if (j < 0) continue;
            const bool replica = j >= options_.primaries;
            const bool in_role =
                replica ? e.Has("slave") &&
                              e.master_id ==
                                  ids_[(j - options_.primaries) / replicas]
                        : e.Has("master");
            if (!in_role || e.Has("fail?") || e.Has("fail") ||
                e.Has("handshake")) {
              return Missing{absl::StrCat(Describe(i), " sees ", Describe(j),
                                          " as ", absl::StrJoin(e.flags, ","),
                                          " of ", e.master_id),
                             &node(i)};
            }
          }
          // CLUSTER SHARDS: [["slots", [...], "nodes", [[field, value,
          // ...], ...]], ...].
          absl::StatusOr<RedisReply> shards = RunOk(i, {"CLUSTER", "SHARDS"});
          if (!shards.ok()) {
            return Missing{std::string(shards.status().message()), &node(i)};
          }
          int online = 0;
          for (const RedisReply& shard : shards->elements) {
            for (const RedisReply& n : FlatEntry(shard, "nodes").elements) {
              if (FlatField(n, "health") == "online") ++online;
            }
          }
          if (online != total) {
            return Missing{absl::StrCat(Describe(i), " sees ", online,
                                        " nodes online in CLUSTER SHARDS"),
                           &node(i)};
          }
        }
        return std::nullopt;
      });
}

std::string RedisCluster::url() const {
  std::vector<std::string> seeds;
  for (int i = 0; i < options_.primaries; ++i) {
    seeds.push_back(absl::StrCat("127.0.0.1:", node(i).port()));
  }
  return absl::StrCat("redis+cluster://", absl::StrJoin(seeds, ","));
}

std::string RedisCluster::tls_url() const {
  if (!options_.tls.has_value()) return "";
  std::vector<std::string> seeds;
  for (int i = 0; i < options_.primaries; ++i) {
    seeds.push_back(absl::StrCat("127.0.0.1:", node(i).tls_port()));
  }
  return absl::StrCat("rediss+cluster://", absl::StrJoin(seeds, ","));
}

int RedisCluster::AnnouncedPort(int i) const {
  return options_.tls.has_value() ? node(i).tls_port() : node(i).port();
}

std::string RedisCluster::Describe(int i) const {
  return absl::StrCat("node ", i, " (127.0.0.1:", node(i).port(), ")");
}

absl::Status RedisCluster::CheckIndex(int i, absl::string_view what) const {
  if (i >= 0 && i < size()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " ", i, " is not a node of this cluster (0 to ", size() - 1, ")"));
}

int RedisCluster::IndexOfPort(int port) const {
  for (int i = 0; i < size(); ++i) {
    if (node(i).port() == port ||
        (node(i).tls_port() != 0 && node(i).tls_port() == port)) {
      return i;
    }
  }
  return -1;
}

absl::StatusOr<RedisReply> RedisCluster::Run(
    int i, const std::vector<std::string>& args) {
  absl::StatusOr<RedisReply> reply = RunCached(node(i), connections_[i], args);
  if (!reply.ok()) {
    return absl::Status(
        reply.status().code(),
        absl::StrCat("cluster ", Describe(i), ": ", reply.status().message()));
  }
  return reply;
}

absl::StatusOr<RedisReply> RedisCluster::RunOk(
    int i, const std::vector<std::string>& args) {
  absl::StatusOr<RedisReply> reply = Run(i, args);
  if (reply.ok() && reply->is_error()) {
    const std::string command =
        args.size() > 1 ? absl::StrCat(args[0], " ", args[1]) : args[0];
    return absl::FailedPreconditionError(absl::StrCat(
        "cluster ", Describe(i), " refused ", command, ": ", reply->str));
  }
  return reply;
}

absl::StatusOr<std::vector<RedisCluster::NodeEntry>> RedisCluster::View(int i) {
  absl::StatusOr<RedisReply> reply = RunOk(i, {"CLUSTER", "NODES"});
  if (!reply.ok()) return reply.status();
  absl::StatusOr<std::vector<std::vector<std::string>>> lines =
      SplitNodes(reply->str);
  if (!lines.ok()) return lines.status();
  std::vector<NodeEntry> view;
  for (const std::vector<std::string>& f : *lines) {
    NodeEntry e;
    e.id = f[0];
    e.port = PortOfAddress(f[1]);
    // Our node's plaintext port, also where a node names a TLS port.
    if (const int j = IndexOfPort(e.port); j >= 0) e.port = node(j).port();
    e.flags = absl::StrSplit(f[2], ',');
    e.master_id = f[3];
    for (size_t k = 8; k < f.size(); ++k) {
      // "[slot->-id]" / "[slot-<-id]": a migration in progress, not owned.
      if (absl::StartsWith(f[k], "[")) continue;
      const std::pair<std::string, std::string> range =
          absl::StrSplit(f[k], absl::MaxSplits('-', 1));
      int lo = 0, hi = 0;
      if (!absl::SimpleAtoi(range.first, &lo)) continue;
      if (range.second.empty() || !absl::SimpleAtoi(range.second, &hi)) hi = lo;
      for (int s = std::max(lo, 0); s <= std::min(hi, kClusterSlots - 1); ++s) {
        e.slots.push_back(s);
      }
    }
    view.push_back(std::move(e));
  }
  return view;
}

absl::StatusOr<std::vector<RedisCluster::NodeEntry>> RedisCluster::AnyView() {
  absl::Status last = absl::UnavailableError("no cluster node is running");
  for (int i = 0; i < size(); ++i) {
    if (!node(i).running()) continue;
    absl::StatusOr<std::vector<NodeEntry>> view = View(i);
    if (view.ok()) return view;
    last = view.status();
  }
  return last;
}

namespace {

// The port of the node serving each slot in `view`; 0 for none.
template <typename Entry>
std::vector<int> SlotPorts(const std::vector<Entry>& view) {
  std::vector<int> ports(kClusterSlots, 0);
  for (const Entry& e : view) {
    if (!e.Has("master")) continue;
    for (int s : e.slots) ports[s] = e.port;
  }
  return ports;
}

}  // namespace

absl::StatusOr<int> RedisCluster::PrimaryOfSlot(int slot) {
  if (slot < 0 || slot >= kClusterSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("slot ", slot, " is not 0 to ", kClusterSlots - 1));
  }
  absl::StatusOr<std::vector<NodeEntry>> view = AnyView();
  if (!view.ok()) return view.status();
  const int port = SlotPorts(*view)[slot];
  if (port == 0) {
    return absl::NotFoundError(absl::StrCat("no node serves slot ", slot));
  }
  const int i = IndexOfPort(port);
  if (i < 0) {
    return absl::InternalError(absl::StrCat(
        "slot ", slot, " is served by 127.0.0.1:", port, ", not one of ours"));
  }
  return i;
}

absl::StatusOr<std::vector<int>> RedisCluster::Primaries() {
  absl::StatusOr<std::vector<NodeEntry>> view = AnyView();
  if (!view.ok()) return view.status();
  std::vector<int> primaries;
  for (const NodeEntry& e : *view) {
    const int i = IndexOfPort(e.port);
    if (e.Has("master") && !e.slots.empty() && i >= 0) primaries.push_back(i);
  }
  std::sort(primaries.begin(), primaries.end());
  return primaries;
}

absl::StatusOr<int> RedisCluster::ReplicaOf(int primary_index) {
  if (absl::Status s = CheckIndex(primary_index, "primary"); !s.ok()) return s;
  absl::StatusOr<std::vector<NodeEntry>> view =
      node(primary_index).running() ? View(primary_index) : AnyView();
  if (!view.ok()) return view.status();
  int replica = -1;
  for (const NodeEntry& e : *view) {
    const int i = IndexOfPort(e.port);
    if (i >= 0 && e.Has("slave") && !e.Has("fail") && !e.Has("fail?") &&
        e.master_id == ids_[primary_index] && (replica < 0 || i < replica)) {
      replica = i;
    }
  }
  if (replica < 0) {
    return absl::NotFoundError(
        absl::StrCat(Describe(primary_index), " has no replica"));
  }
  return replica;
}

absl::StatusOr<int64_t> RedisCluster::CountCommand(int i,
                                                   std::string_view command) {
  if (absl::Status s = CheckIndex(i, "node"); !s.ok()) return s;
  absl::StatusOr<RedisReply> info = RunOk(i, {"INFO", "commandstats"});
  if (!info.ok()) return info.status();
  return CommandCalls(info->str, absl::AsciiStrToLower(absl::string_view(
                                     command.data(), command.size())));
}

void RedisCluster::Kill(int i) {
  if (!CheckIndex(i, "node").ok() || !node(i).running()) return;
  // Its own view: what it serves at the moment of the kill.
  absl::StatusOr<std::vector<NodeEntry>> view = View(i);
  if (view.ok()) {
    for (const NodeEntry& e : *view) {
      if (e.Has("myself")) {
        killed_slots_[i] = e.Has("master") ? e.slots : std::vector<int>{};
      }
    }
  }
  node(i).Kill();
  connections_[i].reset();
}

absl::StatusOr<int> RedisCluster::WaitForFailover(int killed,
                                                  absl::Duration timeout) {
  if (absl::Status s = CheckIndex(killed, "killed node"); !s.ok()) return s;
  if (node(killed).running()) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(killed),
                     " still runs: Kill it before waiting for its "
                     "failover"));
  }
  std::vector<int> slots = killed_slots_[killed];
  if (slots.empty()) {
    // Killed some other way (node(i).Kill()): what the others still
    // think it serves, which is nothing once its failover is over.
    absl::StatusOr<std::vector<NodeEntry>> view = AnyView();
    if (!view.ok()) return view.status();
    const std::vector<int> ports = SlotPorts(*view);
    for (int s = 0; s < kClusterSlots; ++s) {
      if (ports[s] == node(killed).port()) slots.push_back(s);
    }
  }
  if (slots.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        Describe(killed),
        " served no slot when it was killed (a replica, "
        "or killed other than with RedisCluster::Kill after its failover): "
        "nothing fails over"));
  }
  int promoted = -1;
  absl::Status done = WaitUntil(
      absl::StrCat("the failover of ", Describe(killed)), absl::Now() + timeout,
      absl::StrCat("within ", absl::FormatDuration(timeout)),
      [&]() -> std::optional<Missing> {
        promoted = -1;
        for (int i = 0; i < size() && promoted < 0; ++i) {
          if (!node(i).running()) continue;
          absl::StatusOr<std::vector<NodeEntry>> view = View(i);
          if (!view.ok()) continue;
          const std::vector<int> ports = SlotPorts(*view);
          if (ports[slots.front()] != node(i).port()) continue;
          if (RoleOf(Run(i, {"ROLE"})) != "master") continue;
          promoted = i;
        }
        if (promoted < 0) {
          // The log of the replica it started with tells of the election.
          const RedisServer* replica =
              killed < options_.primaries && options_.replicas_per_primary > 0
                  ? &node(options_.primaries +
                          killed * options_.replicas_per_primary)
                  : nullptr;
          return Missing{absl::StrCat("no running node is a master serving "
                                      "slot ",
                                      slots.front(), " in its own view"),
                         replica};
        }
        for (int i = 0; i < size(); ++i) {
          if (!node(i).running()) continue;
          absl::StatusOr<std::vector<NodeEntry>> view = View(i);
          if (!view.ok()) {
            return Missing{std::string(view.status().message()), &node(i)};
          }
          const std::vector<int> ports = SlotPorts(*view);
          for (int s : slots) {
            if (ports[s] != node(promoted).port()) {
              return Missing{
                  absl::StrCat(Describe(i), " names 127.0.0.1:", ports[s],
                               " for slot ", s, ", not ", Describe(promoted)),
                  &node(i)};
            }
          }
          absl::StatusOr<RedisReply> info = Run(i, {"CLUSTER", "INFO"});
          if (!info.ok() || InfoText(info->str, "cluster_state") != "ok") {
            return Missing{
                absl::StrCat(Describe(i), " does not say cluster_state:ok"),
                &node(i)};
          }
        }
        return std::nullopt;
      });
  if (!done.ok()) return done;
  return promoted;
}

absl::Status RedisCluster::BeginSlotMigration(int slot, int from, int to) {
  if (absl::Status s = CheckIndex(from, "from"); !s.ok()) return s;
  if (absl::Status s = CheckIndex(to, "to"); !s.ok()) return s;
  const std::string slot_text = absl::StrCat(slot);
  // Importing first: `from` starts answering ASK as soon as it migrates,
  // and `to` must accept the redirected requests by then.
  absl::StatusOr<RedisReply> r =
      RunOk(to, {"CLUSTER", "SETSLOT", slot_text, "IMPORTING", ids_[from]});
  if (!r.ok()) return r.status();
  r = RunOk(from, {"CLUSTER", "SETSLOT", slot_text, "MIGRATING", ids_[to]});
  return r.status();
}

absl::Status RedisCluster::MigrateKeys(int slot, int from, int to) {
  if (absl::Status s = CheckIndex(from, "from"); !s.ok()) return s;
  if (absl::Status s = CheckIndex(to, "to"); !s.ok()) return s;
  // Its own connection: MIGRATE may wait longer than the cached ones do.
  absl::StatusOr<SyncRedis> redis =
      node(from).Connect(kMigrateConnectionTimeout);
  if (!redis.ok()) return redis.status();
  int64_t left = -1;
  while (true) {
    absl::StatusOr<RedisReply> keys =
        redis->Run({"CLUSTER", "GETKEYSINSLOT", absl::StrCat(slot),
                    absl::StrCat(kMigrateBatch)});
    if (!keys.ok()) return keys.status();
    if (keys->is_error()) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(from), " refused CLUSTER GETKEYSINSLOT: ", keys->str));
    }
    if (keys->elements.empty()) return absl::OkStatus();
    absl::StatusOr<RedisReply> count =
        redis->Run({"CLUSTER", "COUNTKEYSINSLOT", absl::StrCat(slot)});
    if (!count.ok()) return count.status();
    if (count->is_error()) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(from), " refused CLUSTER COUNTKEYSINSLOT: ", count->str));
    }
    // Each batch moves keys or fails: a batch that moved nothing would
    // repeat forever.
    if (left >= 0 && count->integer >= left) {
      return absl::InternalError(absl::StrCat(
          "MIGRATE from ", Describe(from), " to ", Describe(to),
          " moved no key of slot ", slot, "; ", count->integer, " left"));
    }
    left = count->integer;
    // With tls-cluster, MIGRATE speaks TLS: to the TLS port.
    std::vector<std::string> migrate = {
        "MIGRATE", "127.0.0.1", absl::StrCat(AnnouncedPort(to)),
        "",        "0",         absl::StrCat(kMigrateTimeoutMs),
        "KEYS"};
    for (const RedisReply& key : keys->elements) migrate.push_back(key.str);
    absl::StatusOr<RedisReply> moved = redis->Run(migrate);
    if (!moved.ok()) return moved.status();
    if (moved->is_error()) {
      return absl::FailedPreconditionError(
          absl::StrCat(Describe(from), " refused MIGRATE to ", Describe(to),
                       ": ", moved->str));
    }
  }
}

absl::Status RedisCluster::FinishSlotMigration(int slot, int to) {
  if (absl::Status s = CheckIndex(to, "to"); !s.ok()) return s;
  const std::vector<std::string> set = {"CLUSTER", "SETSLOT",
                                        absl::StrCat(slot), "NODE", ids_[to]};
  // The new owner first: it bumps its config epoch, so that its claim wins
  // over the old owner's wherever gossip brings both.
  if (absl::StatusOr<RedisReply> r = RunOk(to, set); !r.ok()) return r.status();
  for (int i = 0; i < size(); ++i) {
    if (i == to || !node(i).running() || RoleOf(Run(i, {"ROLE"})) != "master") {
      continue;
    }
    if (absl::StatusOr<RedisReply> r = RunOk(i, set); !r.ok()) {
      return r.status();
    }
  }
  return WaitUntil(
      absl::StrCat("every node naming ", Describe(to), " for slot ", slot),
      absl::Now() + options_.start_timeout,
      absl::StrCat("within the start_timeout of ",
                   absl::FormatDuration(options_.start_timeout)),
      [&]() -> std::optional<Missing> {
        for (int i = 0; i < size(); ++i) {
          if (!node(i).running()) continue;
          absl::StatusOr<std::vector<NodeEntry>> view = View(i);
          if (!view.ok()) {
            return Missing{std::string(view.status().message()), &node(i)};
          }
          const int port = SlotPorts(*view)[slot];
          if (port != node(to).port()) {
            return Missing{absl::StrCat(Describe(i), " names 127.0.0.1:", port),
                           &node(i)};
          }
        }
        return std::nullopt;
      });
}

// ---------------------------------------------------------------------------
// RedisSentinelSet

RedisSentinelSet::RedisSentinelSet(RedisSentinelOptions options)
    : options_(std::move(options)) {}

RedisSentinelSet::~RedisSentinelSet() {
  // SIGKILL, the sentinels first (else they would only log the data nodes'
  // failure meanwhile): nothing here is worth a graceful shutdown, and a
  // primary stopped with SIGTERM would wait for a lagging replica.
  for (std::unique_ptr<RedisServer>& s : sentinels_) {
    if (s != nullptr) s->Kill();
  }
  for (RedisServer* s : {replica_.get(), primary_.get()}) {
    if (s != nullptr) s->Kill();
  }
}

absl::StatusOr<std::unique_ptr<RedisSentinelSet>> RedisSentinelSet::Start(
    RedisSentinelOptions options) {
  const std::string& name = options.master_name;
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
               c == '_' || c == '-';
      })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "master name \"", name,
        "\": give letters, digits, '.', '_' and '-' only (it goes into "
        "sentinel.conf and the URL as is)"));
  }
  const absl::Time deadline = absl::Now() + options.start_timeout;
  std::unique_ptr<RedisSentinelSet> set(
      new RedisSentinelSet(std::move(options)));
  if (absl::Status s = set->StartDataNodes(deadline); !s.ok()) return s;
  if (absl::Status s = set->StartSentinels(deadline); !s.ok()) return s;
  return set;
}

absl::Status RedisSentinelSet::StartDataNodes(absl::Time deadline) {
  std::vector<std::string> lines = {
      // Both need it: after a failover the old primary comes back as the
      // replica of the new.
      "repl-diskless-sync yes",
      "repl-diskless-sync-delay 0",
  };
  if (!options_.password.empty()) {
    lines.push_back(absl::StrCat("masterauth ", ConfQuote(options_.password)));
  }
  // The replica's link speaks TLS, to the primary's TLS port, and the
  // replica announces its own TLS port (REPLCONF listening-port): the
  // sentinels learn TLS ports only.
  if (options_.tls.has_value()) lines.push_back("tls-replication yes");
  lines.insert(lines.end(), options_.config_lines.begin(),
               options_.config_lines.end());
  absl::StatusOr<std::unique_ptr<RedisServer>> primary =
      StartRedisServer({.password = options_.password,
                        .tls = options_.tls,
                        .config_lines = lines,
                        .name = options_.name + "-primary",
                        .start_timeout = Remaining(deadline)});
  if (!primary.ok()) {
    return StartFailed("the primary", primary.status(), options_.start_timeout);
  }
  primary_ = *std::move(primary);
  lines.push_back(
      absl::StrCat("replicaof 127.0.0.1 ", AnnouncedPort(*primary_)));
  absl::StatusOr<std::unique_ptr<RedisServer>> replica =
      StartRedisServer({.password = options_.password,
                        .tls = options_.tls,
                        .config_lines = lines,
                        .name = options_.name + "-replica",
                        .start_timeout = Remaining(deadline)});
  if (!replica.ok()) {
    return StartFailed("the replica", replica.status(), options_.start_timeout);
  }
  replica_ = *std::move(replica);
  // Before the sentinels start: their first INFO of the primary then lists
  // the replica, instead of the next one 10 s later.
  return WaitUntil(
      "the replica's link to the primary", deadline,
      StartBound(options_.start_timeout), [&]() -> std::optional<Missing> {
        absl::StatusOr<RedisReply> info =
            Run(*replica_, {"INFO", "replication"});
        if (info.ok() && InfoText(info->str, "master_link_status") == "up") {
          return std::nullopt;
        }
        return Missing{absl::StrCat("replica 127.0.0.1:", replica_->port(),
                                    " has no master_link_status:up"),
                       replica_.get()};
      });
}

absl::Status RedisSentinelSet::StartSentinels(absl::Time deadline) {
  const std::string& name = options_.master_name;
  const bool tls = options_.tls.has_value();
  // Each sentinel's file names the others by port and id, so the ports are
  // chosen before any starts; if one was taken meanwhile, all start again.
  // With TLS each has a TLS port too, the one its peers know it by.
  for (int attempt = 0;; ++attempt) {
    std::array<int, kSentinels> ports{};
    std::array<int, kSentinels> tls_ports{};
    std::array<std::string, kSentinels> ids;
    for (int i = 0; i < kSentinels; ++i) {
      for (int* port : {&ports[i], &tls_ports[i]}) {
        if (port == &tls_ports[i] && !tls) continue;
        absl::StatusOr<int> picked;
        do {
          picked = PickPort(/*with_bus=*/false);
          if (!picked.ok()) return picked.status();
        } while (std::find(ports.begin(), ports.end(), *picked) !=
                     ports.end() ||
                 std::find(tls_ports.begin(), tls_ports.end(), *picked) !=
                     tls_ports.end());
        *port = *picked;
      }
      constexpr char kHex[] = "0123456789abcdef";
      std::uniform_int_distribution<int> digit(0, 15);
      for (int k = 0; k < 40; ++k) ids[i] += kHex[digit(Rng())];
    }
    absl::Status started;
    for (int i = 0; i < kSentinels && started.ok(); ++i) {
      std::vector<std::string> lines = {
          absl::StrCat("sentinel myid ", ids[i]),
          absl::StrCat("sentinel monitor ", name, " 127.0.0.1 ",
                       AnnouncedPort(*primary_), " 2"),
          absl::StrCat("sentinel down-after-milliseconds ", name, " ",
                       absl::ToInt64Milliseconds(options_.down_after)),
          absl::StrCat("sentinel failover-timeout ", name, " ",
                       absl::ToInt64Milliseconds(options_.failover_timeout)),
          absl::StrCat("sentinel parallel-syncs ", name, " 1"),
          absl::StrCat("sentinel known-replica ", name, " 127.0.0.1 ",
                       AnnouncedPort(*replica_)),
      };
      // A sentinel speaks TLS to the data nodes and to the other sentinels
      // with tls-replication yes (and announces its TLS port in its hello
      // messages).
      if (tls) lines.push_back("tls-replication yes");
      for (int k = 0; k < kSentinels; ++k) {
        if (k == i) continue;
        lines.push_back(
            absl::StrCat("sentinel known-sentinel ", name, " 127.0.0.1 ",
                         tls ? tls_ports[k] : ports[k], " ", ids[k]));
      }
      if (!options_.password.empty()) {
        lines.push_back(absl::StrCat("sentinel auth-pass ", name, " ",
                                     ConfQuote(options_.password)));
      }
      if (!options_.sentinel_password.empty()) {
        lines.push_back(absl::StrCat("sentinel sentinel-pass ",
                                     ConfQuote(options_.sentinel_password)));
      }
      // The launcher's usual redis.conf (save "", appendonly no, DEBUG from
      // loopback) is one a sentinel accepts; it rewrites the file in its
      // own directory as it learns.
      std::optional<RedisTlsServerOptions> sentinel_tls = options_.tls;
      if (tls) sentinel_tls->port = tls_ports[i];
      absl::StatusOr<std::unique_ptr<RedisServer>> sentinel =
          StartRedisServer({.password = options_.sentinel_password,
                            .port = ports[i],
                            .tls = std::move(sentinel_tls),
                            .config_lines = std::move(lines),
                            .extra_args = {"--sentinel"},
                            .name = absl::StrCat(options_.name, "-", i),
                            .start_timeout = Remaining(deadline)});
      if (sentinel.ok()) {
        sentinels_[i] = *std::move(sentinel);
        connections_[2 + i].reset();
        // A sentinel retries a peer it could not reach once per ping
        // period (1 s): the first ones started before their peers listened.
        // Faster while starting (SENTINEL DEBUG, Redis >= 7.0; without it
        // the start is only slower); the default again once all are ready.
        (void)Run(*sentinels_[i], {"SENTINEL", "DEBUG", "ping-period",
                                   absl::StrCat(absl::ToInt64Milliseconds(
                                       kSentinelStartPingPeriod))});
      } else {
        started = StartFailed(absl::StrCat("sentinel ", i), sentinel.status(),
                              options_.start_timeout);
      }
    }
    if (started.ok()) break;
    for (std::unique_ptr<RedisServer>& s : sentinels_) s.reset();
    // Unavailable: it exited at start, its port probably taken.
    if (!absl::IsUnavailable(started) || attempt + 1 >= kStartAttempts) {
      return started;
    }
  }
  absl::Status ready = WaitUntil(
      "sentinels that see the primary, the replica and one another", deadline,
      StartBound(options_.start_timeout), [&]() -> std::optional<Missing> {
        for (int i = 0; i < kSentinels; ++i) {
          RedisServer& s = *sentinels_[i];
          const std::string who =
              absl::StrCat("sentinel ", i, " (127.0.0.1:", s.port(), ")");
          absl::StatusOr<RedisReply> master =
              Run(s, {"SENTINEL", "MASTER", name});
          if (!master.ok() || FlatField(*master, "flags") != "master") {
            return Missing{
                absl::StrCat(
                    who, " does not see the primary up: ",
                    master.ok() ? FlatField(*master, "flags") : Why(master)),
                &s};
          }
          absl::StatusOr<RedisReply> replicas =
              Run(s, {"SENTINEL", "REPLICAS", name});
          if (!replicas.ok() || replicas->elements.size() != 1 ||
              FlatField(replicas->elements[0], "flags") != "slave" ||
              FlatField(replicas->elements[0], "master-link-status") != "ok") {
            return Missing{absl::StrCat(who,
                                        " does not see the replica "
                                        "linked: ",
                                        Why(replicas)),
                           &s};
          }
          absl::StatusOr<RedisReply> others =
              Run(s, {"SENTINEL", "SENTINELS", name});
          int connected = 0;
          if (others.ok()) {
            for (const RedisReply& o : others->elements) {
              if (FlatField(o, "flags") == "sentinel") ++connected;
            }
          }
          if (connected != kSentinels - 1) {
            return Missing{absl::StrCat(who, " is connected to ", connected,
                                        " other sentinels: ", Why(others)),
                           &s};
          }
        }
        return std::nullopt;
      });
  if (!ready.ok()) return ready;
  for (std::unique_ptr<RedisServer>& s : sentinels_) {
    (void)Run(*s,
              {"SENTINEL", "DEBUG", "ping-period",
               absl::StrCat(absl::ToInt64Milliseconds(kSentinelPingPeriod))});
  }
  return absl::OkStatus();
}

std::string RedisSentinelSet::tls_url() const {
  if (!options_.tls.has_value()) return "";
  std::vector<std::string> hosts;
  for (const std::unique_ptr<RedisServer>& s : sentinels_) {
    hosts.push_back(absl::StrCat("127.0.0.1:", s->tls_port()));
  }
  return absl::StrCat("rediss+sentinel://", absl::StrJoin(hosts, ","), "/",
                      options_.master_name);
}

int RedisSentinelSet::AnnouncedPort(const RedisServer& server) const {
  return options_.tls.has_value() ? server.tls_port() : server.port();
}

std::string RedisSentinelSet::url() const {
  std::vector<std::string> hosts;
  for (const std::unique_ptr<RedisServer>& s : sentinels_) {
    hosts.push_back(absl::StrCat("127.0.0.1:", s->port()));
  }
  return absl::StrCat("redis+sentinel://", absl::StrJoin(hosts, ","), "/",
                      options_.master_name);
}

RedisServer* RedisSentinelSet::ServerOnPort(int port) {
  for (RedisServer* s : {primary_.get(), replica_.get()}) {
    if (s != nullptr && s->running() &&
        (s->port() == port || (s->tls_port() != 0 && s->tls_port() == port))) {
      return s;
    }
  }
  return nullptr;
}

absl::StatusOr<RedisReply> RedisSentinelSet::Run(
    RedisServer& server, const std::vector<std::string>& args) {
  size_t slot = 0;
  if (&server == replica_.get()) {
    slot = 1;
  } else if (&server != primary_.get()) {
    for (int i = 0; i < kSentinels; ++i) {
      if (&server == sentinels_[i].get()) slot = 2 + i;
    }
  }
  return RunCached(server, connections_[slot], args);
}

absl::StatusOr<int> RedisSentinelSet::CurrentPrimaryPort() {
  absl::Status last = absl::UnavailableError("no sentinel is running");
  for (std::unique_ptr<RedisServer>& s : sentinels_) {
    if (!s->running()) continue;
    absl::StatusOr<RedisReply> addr =
        Run(*s, {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name});
    if (addr.ok() && addr->elements.size() == 2) {
      return static_cast<int>(AsInteger(addr->elements[1]));
    }
    last = absl::UnavailableError(absl::StrCat("sentinel 127.0.0.1:", s->port(),
                                               " did not name the "
                                               "primary of ",
                                               options_.master_name, ": ",
                                               Why(addr)));
  }
  return last;
}

absl::StatusOr<int> RedisSentinelSet::WaitForFailover(int old_port,
                                                      absl::Duration timeout) {
  // A data node's plaintext port as the port the sentinels know it by.
  for (RedisServer* s : {primary_.get(), replica_.get()}) {
    if (s != nullptr && s->port() == old_port) old_port = AnnouncedPort(*s);
  }
  int port = 0;
  absl::Status done = WaitUntil(
      absl::StrCat("the failover from 127.0.0.1:", old_port),
      absl::Now() + timeout,
      absl::StrCat("within ", absl::FormatDuration(timeout)),
      [&]() -> std::optional<Missing> {
        port = 0;
        for (std::unique_ptr<RedisServer>& s : sentinels_) {
          if (!s->running()) continue;
          absl::StatusOr<RedisReply> addr = Run(
              *s,
              {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name});
          const int named = addr.ok() && addr->elements.size() == 2
                                ? static_cast<int>(AsInteger(addr->elements[1]))
                                : -1;
          if (named == old_port || named <= 0 || (port != 0 && named != port)) {
            return Missing{
                absl::StrCat("sentinel 127.0.0.1:", s->port(), " names ",
                             Why(addr),
                             port != 0 ? absl::StrCat(", another ", port) : ""),
                s.get()};
          }
          port = named;
        }
        if (port == 0) return Missing{"no sentinel is running", nullptr};
        RedisServer* promoted = ServerOnPort(port);
        if (promoted == nullptr) {
          return Missing{absl::StrCat("the sentinels name 127.0.0.1:", port,
                                      ", which is neither running data node"),
                         nullptr};
        }
        absl::StatusOr<RedisReply> role = Run(*promoted, {"ROLE"});
        if (RoleOf(role) != "master") {
          return Missing{
              absl::StrCat("127.0.0.1:", port, " says ROLE ", Why(role)),
              promoted};
        }
        return std::nullopt;
      });
  if (!done.ok()) return done;
  return port;
}

}  // namespace tokenlease::support
