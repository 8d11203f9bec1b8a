// The topology launchers (redis_cluster.h) against real redis-server
// processes: a cluster that covers every slot with linked replicas, its
// failover, a slot migration step by step, and a sentinel set's failover.
// Each test prints how long its topology took (RecordProperty too).
#include "support/redis_cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "redis/reply.h"
#include "support/redis_info.h"
#include "support/redis_server.h"
#include "support/sync_redis.h"
#include "support/tls_certs.h"

namespace tokenlease::support {
namespace {

using internal::RedisReply;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What a failover may take at most (a primary killed with
// cluster-node-timeout 2000 is replaced after about 4.5 s; the sentinels
// with down-after 1000 ms take about as long).
constexpr absl::Duration kFailoverBound = absl::Seconds(15);

// One command on a fresh connection to `server`; its reply as text.
std::string Command(const RedisServer& server,
                    const std::vector<std::string>& args) {
  absl::StatusOr<SyncRedis> redis = server.Connect();
  if (!redis.ok()) return std::string(redis.status().message());
  absl::StatusOr<RedisReply> r = redis->Run(args);
  return r.ok() ? r->DebugString() : std::string(r.status().message());
}

// One command over TLS to `tls_port`, presenting the client certificate
// and logging in with `password` if not empty; the reply, or the status's
// message.
RedisReply TlsCommand(int tls_port, const TlsFiles& f,
                      const std::vector<std::string>& args,
                      const std::string& password = "") {
  std::vector<std::vector<std::string>> commands;
  if (!password.empty()) commands.push_back({"AUTH", password});
  commands.push_back(args);
  absl::StatusOr<std::vector<RedisReply>> replies =
      TlsCommands(tls_port, commands,
                  {.ca_file = f.ca_file,
                   .cert_file = f.client_cert,
                   .key_file = f.client_key});
  if (!replies.ok()) {
    RedisReply failed;
    failed.type = RedisReply::Type::kError;
    failed.str = std::string(replies.status().message());
    return failed;
  }
  return replies->back();
}

// The ports CLUSTER SLOTS names, per slot range: {first slot, ports of
// its primary and replicas in order}.
std::vector<std::pair<int64_t, std::vector<int64_t>>> SlotsPorts(
    const RedisReply& slots) {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> out;
  for (const RedisReply& range : slots.elements) {
    std::vector<int64_t> ports;
    for (size_t k = 2; k < range.elements.size(); ++k) {
      if (range.elements[k].elements.size() >= 2) {
        ports.push_back(range.elements[k].elements[1].integer);
      }
    }
    out.emplace_back(range.elements.empty() ? -1 : range.elements[0].integer,
                     std::move(ports));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Waits (at most `timeout`) until `server` says it is a replica with its
// link up.
bool BecomesALinkedReplica(const RedisServer& server, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    absl::StatusOr<SyncRedis> redis = server.Connect();
    if (redis.ok()) {
      absl::StatusOr<std::string> info = redis->Info("replication");
      if (info.ok() && InfoText(*info, "role") == "slave" &&
          InfoText(*info, "master_link_status") == "up") {
        return true;
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

// Prints and records how long `what` took.
void Report(const char* what, absl::Duration d) {
  std::printf(
      "[ timing   ] %s: %s\n", what,
      absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1))).c_str());
  ::testing::Test::RecordProperty(what, absl::FormatDuration(d));
}

TEST(RedisClusterTest, StartRefusesOptionsThatMakeNoCluster) {
  for (const RedisClusterOptions& bad :
       {RedisClusterOptions{.primaries = 0},
        RedisClusterOptions{.replicas_per_primary = -1},
        RedisClusterOptions{.node_timeout = absl::ZeroDuration()}}) {
    EXPECT_EQ(RedisCluster::Start(bad).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(
      RedisSentinelSet::Start({.master_name = "my master"}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(RedisClusterTest, ThreePrimariesAndThreeLinkedReplicasCoverEverySlot) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<RedisCluster>> started = RedisCluster::Start();
  ASSERT_TRUE(started.ok()) << started.status();
  Report("cluster 3+3 start", absl::Now() - start);
  RedisCluster& cluster = **started;
  ASSERT_EQ(cluster.size(), 6);
  EXPECT_EQ(cluster.url(),
            absl::StrCat("redis+cluster://127.0.0.1:", cluster.node(0).port(),
                         ",127.0.0.1:", cluster.node(1).port(),
                         ",127.0.0.1:", cluster.node(2).port()));

  // CLUSTER SLOTS, as a client sees it: every slot once, in ranges served
  // by a primary with one replica each.
  absl::StatusOr<SyncRedis> redis = cluster.node(0).Connect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  const absl::StatusOr<int64_t> before =
      cluster.CountCommand(0, "CLUSTER|SLOTS");
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<RedisReply> slots = redis->Run({"CLUSTER", "SLOTS"});
  ASSERT_TRUE(slots.ok()) << slots.status();
  std::vector<bool> covered(kClusterSlots, false);
  for (const RedisReply& range : slots->elements) {
    ASSERT_GE(range.elements.size(), 4u) << range.DebugString();
    for (int64_t s = range.elements[0].integer; s <= range.elements[1].integer;
         ++s) {
      EXPECT_FALSE(covered[s]) << "slot " << s << " twice";
      covered[s] = true;
    }
  }
  EXPECT_EQ(std::count(covered.begin(), covered.end(), true), kClusterSlots);
  EXPECT_EQ(slots->elements.size(), 3u);
  // The launcher sends no CLUSTER SLOTS of its own: the count is ours.
  EXPECT_EQ(*cluster.CountCommand(0, "cluster|slots"), *before + 1);

  absl::StatusOr<std::vector<int>> primaries = cluster.Primaries();
  ASSERT_TRUE(primaries.ok()) << primaries.status();
  EXPECT_THAT(*primaries, ElementsAre(0, 1, 2));
  for (int j = 0; j < 3; ++j) {
    absl::StatusOr<int> replica = cluster.ReplicaOf(j);
    ASSERT_TRUE(replica.ok()) << replica.status();
    EXPECT_EQ(*replica, 3 + j);
    absl::StatusOr<SyncRedis> replica_redis = cluster.node(*replica).Connect();
    ASSERT_TRUE(replica_redis.ok()) << replica_redis.status();
    absl::StatusOr<std::string> info = replica_redis->Info("replication");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(InfoText(*info, "role"), "slave");
    EXPECT_EQ(InfoText(*info, "master_link_status"), "up");
    EXPECT_EQ(InfoField(*info, "master_port"), cluster.node(j).port());
  }
  EXPECT_EQ(*cluster.PrimaryOfSlot(0), 0);
  EXPECT_EQ(*cluster.PrimaryOfSlot(5460), 0);
  EXPECT_EQ(*cluster.PrimaryOfSlot(5461), 1);
  EXPECT_EQ(*cluster.PrimaryOfSlot(kClusterSlots - 1), 2);
  EXPECT_EQ(cluster.PrimaryOfSlot(kClusterSlots).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Every node answers for the cluster: a write to any slot works through
  // its owner.
  EXPECT_EQ(Command(cluster.node(*cluster.PrimaryOfSlot(12182)),
                    {"SET", "foo", "bar"}),
            "OK");  // CLUSTER KEYSLOT foo = 12182
  EXPECT_THAT(Command(cluster.node(0), {"GET", "foo"}), HasSubstr("MOVED"));
}

TEST(RedisClusterTest, KillingThePrimaryOfSlotZeroPromotesItsReplica) {
  absl::StatusOr<std::unique_ptr<RedisCluster>> started = RedisCluster::Start();
  ASSERT_TRUE(started.ok()) << started.status();
  RedisCluster& cluster = **started;
  absl::StatusOr<int> primary = cluster.PrimaryOfSlot(0);
  ASSERT_TRUE(primary.ok()) << primary.status();
  absl::StatusOr<int> replica = cluster.ReplicaOf(*primary);
  ASSERT_TRUE(replica.ok()) << replica.status();
  // Waiting for a failover of a node that still runs is a mistake.
  EXPECT_EQ(cluster.WaitForFailover(*primary, absl::Seconds(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);

  const absl::Time killed = absl::Now();
  cluster.Kill(*primary);
  absl::StatusOr<int> promoted =
      cluster.WaitForFailover(*primary, kFailoverBound);
  const absl::Duration took = absl::Now() - killed;
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  Report("cluster failover after SIGKILL", took);
  EXPECT_LT(took, kFailoverBound);
  EXPECT_EQ(*promoted, *replica);
  EXPECT_EQ(*cluster.PrimaryOfSlot(0), *replica);
  EXPECT_THAT(*cluster.Primaries(), ElementsAre(1, 2, *replica));
  EXPECT_THAT(Command(cluster.node(*replica), {"ROLE"}), HasSubstr("master"));
  EXPECT_EQ(Command(cluster.node(*replica), {"SET", "{06S}k", "v"}),
            "OK");  // slot 0
  // A replica served no slot: nothing to wait for.
  cluster.Kill(5);
  EXPECT_EQ(cluster.WaitForFailover(5, absl::Seconds(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RedisClusterTest, ASlotMigrationMovesItsKeysStepByStep) {
  // No replicas: the migration is between primaries only.
  absl::StatusOr<std::unique_ptr<RedisCluster>> started =
      RedisCluster::Start({.replicas_per_primary = 0});
  ASSERT_TRUE(started.ok()) << started.status();
  RedisCluster& cluster = **started;
  ASSERT_EQ(cluster.size(), 3);
  // "{06S}" hashes to slot 0; more keys than one MIGRATE batch.
  constexpr int kSlot = 0;
  constexpr int kKeys = 250;
  const int from = *cluster.PrimaryOfSlot(kSlot);
  const int to = from == 1 ? 2 : 1;
  {
    absl::StatusOr<SyncRedis> redis = cluster.node(from).Connect();
    ASSERT_TRUE(redis.ok()) << redis.status();
    absl::StatusOr<RedisReply> slot =
        redis->Run({"CLUSTER", "KEYSLOT", "{06S}key"});
    ASSERT_TRUE(slot.ok()) << slot.status();
    ASSERT_EQ(slot->integer, kSlot);
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_EQ(redis->Run({"SET", absl::StrCat("{06S}key", i), "v"})->str,
                "OK");
    }
  }
  const std::string to_port = absl::StrCat(cluster.node(to).port());

  ASSERT_TRUE(cluster.BeginSlotMigration(kSlot, from, to).ok());
  // The keys are still where they were; the target wants ASKING.
  EXPECT_EQ(Command(cluster.node(from), {"GET", "{06S}key0"}), "v");
  EXPECT_THAT(Command(cluster.node(to), {"GET", "{06S}key0"}),
              HasSubstr("MOVED"));

  ASSERT_TRUE(cluster.MigrateKeys(kSlot, from, to).ok());
  // Moved: the source sends the client to the target for this request
  // (ASK), which serves it after ASKING.
  EXPECT_THAT(Command(cluster.node(from), {"GET", "{06S}key0"}),
              HasSubstr(absl::StrCat("ASK 0 127.0.0.1:", to_port)));
  {
    absl::StatusOr<SyncRedis> redis = cluster.node(to).Connect();
    ASSERT_TRUE(redis.ok()) << redis.status();
    ASSERT_EQ(redis->Run({"ASKING"})->str, "OK");
    EXPECT_EQ(redis->Run({"GET", "{06S}key0"})->str, "v");
    EXPECT_EQ(redis->Run({"CLUSTER", "COUNTKEYSINSLOT", "0"})->integer, kKeys);
  }

  ASSERT_TRUE(cluster.FinishSlotMigration(kSlot, to).ok());
  EXPECT_EQ(*cluster.PrimaryOfSlot(kSlot), to);
  EXPECT_EQ(Command(cluster.node(to), {"GET", "{06S}key0"}), "v");
  EXPECT_THAT(Command(cluster.node(from), {"GET", "{06S}key0"}),
              HasSubstr(absl::StrCat("MOVED 0 127.0.0.1:", to_port)));
  // The slot's neighbours stayed.
  EXPECT_EQ(*cluster.PrimaryOfSlot(kSlot + 1), from);
  // A slot the node does not serve cannot be migrated from it.
  EXPECT_EQ(cluster.BeginSlotMigration(kSlot, from, to).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RedisSentinelTest, StartsAndFailsOverWhenThePrimaryIsKilled) {
  const absl::Time start = absl::Now();
  // Passwords on both sides: the sentinels must use both.
  absl::StatusOr<std::unique_ptr<RedisSentinelSet>> started =
      RedisSentinelSet::Start({.master_name = "tokenlease",
                               .password = "data \"pw\"",
                               .sentinel_password = "sentinel pw"});
  ASSERT_TRUE(started.ok()) << started.status();
  Report("sentinel set start", absl::Now() - start);
  RedisSentinelSet& set = **started;
  EXPECT_EQ(set.url(),
            absl::StrCat("redis+sentinel://127.0.0.1:", set.sentinel(0).port(),
                         ",127.0.0.1:", set.sentinel(1).port(),
                         ",127.0.0.1:", set.sentinel(2).port(), "/tokenlease"));
  const int old_port = set.primary().port();
  absl::StatusOr<int> current = set.CurrentPrimaryPort();
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_EQ(*current, old_port);
  // The sentinels require their password; the data nodes theirs.
  absl::StatusOr<SyncRedis> anonymous =
      SyncRedis::ConnectPort(set.sentinel(0).port());
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  EXPECT_TRUE(anonymous->Run({"PING"})->ErrorStartsWith("NOAUTH"));
  EXPECT_THAT(Command(set.replica(), {"ROLE"}), HasSubstr("slave"));

  const absl::Time killed = absl::Now();
  set.primary().Kill();
  absl::StatusOr<int> promoted = set.WaitForFailover(old_port, kFailoverBound);
  const absl::Duration took = absl::Now() - killed;
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  Report("sentinel failover after SIGKILL", took);
  EXPECT_LT(took, kFailoverBound);
  EXPECT_EQ(*promoted, set.replica().port());
  EXPECT_EQ(*set.CurrentPrimaryPort(), set.replica().port());
  EXPECT_EQ(Command(set.replica(), {"SET", "k", "v"}), "OK");
}

TEST(RedisClusterTest, ATlsClusterAnswersOverTlsAndFailsOver) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const TlsFiles& f = (*certs)->files();
  const absl::Time start = absl::Now();
  // Client certificates required: the bus and the replication links must
  // present theirs too.
  absl::StatusOr<std::unique_ptr<RedisCluster>> started = RedisCluster::Start(
      {.tls = TlsServerOptionsFor(f, /*require_client_cert=*/true)});
  ASSERT_TRUE(started.ok()) << started.status();
  Report("TLS cluster 3+3 start", absl::Now() - start);
  RedisCluster& cluster = **started;
  ASSERT_EQ(cluster.size(), 6);
  EXPECT_EQ(
      cluster.tls_url(),
      absl::StrCat("rediss+cluster://127.0.0.1:", cluster.node(0).tls_port(),
                   ",127.0.0.1:", cluster.node(1).tls_port(),
                   ",127.0.0.1:", cluster.node(2).tls_port()));
  EXPECT_EQ(cluster.url(),
            absl::StrCat("redis+cluster://127.0.0.1:", cluster.node(0).port(),
                         ",127.0.0.1:", cluster.node(1).port(),
                         ",127.0.0.1:", cluster.node(2).port()));
  for (int i = 0; i < cluster.size(); ++i) {
    EXPECT_EQ(Command(cluster.node(i), {"CONFIG", "GET", "tls-cluster"}),
              "[tls-cluster, yes]");
    EXPECT_EQ(TlsCommand(cluster.node(i).tls_port(), f, {"PING"}).str, "PONG");
  }
  // The replicas' links speak TLS: to their primaries' TLS ports.
  for (int j = 0; j < 3; ++j) {
    absl::StatusOr<SyncRedis> replica = cluster.node(3 + j).Connect();
    ASSERT_TRUE(replica.ok()) << replica.status();
    absl::StatusOr<std::string> info = replica->Info("replication");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(InfoText(*info, "master_link_status"), "up");
    EXPECT_EQ(InfoField(*info, "master_port"), cluster.node(j).tls_port());
  }

  // CLUSTER SLOTS over TLS names the TLS ports; over plaintext, the
  // plaintext ports (Redis 7.0 answers by the connection's kind).
  const RedisReply tls_slots =
      TlsCommand(cluster.node(0).tls_port(), f, {"CLUSTER", "SLOTS"});
  ASSERT_FALSE(tls_slots.is_error()) << tls_slots.str;
  absl::StatusOr<SyncRedis> plain = cluster.node(0).Connect();
  ASSERT_TRUE(plain.ok()) << plain.status();
  absl::StatusOr<RedisReply> plain_slots = plain->Run({"CLUSTER", "SLOTS"});
  ASSERT_TRUE(plain_slots.ok()) << plain_slots.status();
  std::printf("[ info     ] CLUSTER SLOTS over TLS: %s\n",
              tls_slots.DebugString().c_str());
  std::printf("[ info     ] CLUSTER SLOTS over plaintext: %s\n",
              plain_slots->DebugString().c_str());
  using Ports = std::vector<std::pair<int64_t, std::vector<int64_t>>>;
  Ports want_tls, want_plain;
  for (int j = 0; j < 3; ++j) {
    const int64_t first = j == 0 ? 0 : (j == 1 ? 5461 : 10923);
    want_tls.push_back(
        {first, {cluster.node(j).tls_port(), cluster.node(3 + j).tls_port()}});
    want_plain.push_back(
        {first, {cluster.node(j).port(), cluster.node(3 + j).port()}});
  }
  EXPECT_EQ(SlotsPorts(tls_slots), want_tls);
  EXPECT_EQ(SlotsPorts(*plain_slots), want_plain);
  // So does CLUSTER NODES (the bus port is the TLS port's + 10000 in both).
  const std::string node1 =
      absl::StrCat("127.0.0.1:", cluster.node(1).tls_port(), "@",
                   cluster.node(1).tls_port() + 10000);
  EXPECT_THAT(
      TlsCommand(cluster.node(0).tls_port(), f, {"CLUSTER", "NODES"}).str,
      HasSubstr(node1));
  EXPECT_THAT(Command(cluster.node(0), {"CLUSTER", "NODES"}),
              HasSubstr(absl::StrCat("127.0.0.1:", cluster.node(1).port(), "@",
                                     cluster.node(1).tls_port() + 10000)));
  // So do the redirections.
  const int owner = *cluster.PrimaryOfSlot(12182);  // CLUSTER KEYSLOT foo
  EXPECT_EQ(
      TlsCommand(cluster.node(0).tls_port(), f, {"GET", "foo"}).str,
      absl::StrCat("MOVED 12182 127.0.0.1:", cluster.node(owner).tls_port()));
  EXPECT_EQ(Command(cluster.node(0), {"GET", "foo"}),
            absl::StrCat("MOVED 12182 127.0.0.1:", cluster.node(owner).port()));
  EXPECT_EQ(
      TlsCommand(cluster.node(owner).tls_port(), f, {"SET", "foo", "bar"}).str,
      "OK");

  // A slot migration: MIGRATE goes over TLS (tls-cluster).
  const int from = *cluster.PrimaryOfSlot(0);
  const int to = from == 1 ? 2 : 1;
  ASSERT_EQ(Command(cluster.node(from), {"SET", "{06S}k", "v"}), "OK");
  ASSERT_TRUE(cluster.BeginSlotMigration(0, from, to).ok());
  absl::Status migrated = cluster.MigrateKeys(0, from, to);
  ASSERT_TRUE(migrated.ok()) << migrated;
  ASSERT_TRUE(cluster.FinishSlotMigration(0, to).ok());
  EXPECT_EQ(*cluster.PrimaryOfSlot(0), to);
  EXPECT_EQ(TlsCommand(cluster.node(to).tls_port(), f, {"GET", "{06S}k"}).str,
            "v");

  // A failover, and the killed node back as a replica over TLS.
  absl::StatusOr<int> replica = cluster.ReplicaOf(to);
  ASSERT_TRUE(replica.ok()) << replica.status();
  const absl::Time killed = absl::Now();
  cluster.Kill(to);
  absl::StatusOr<int> promoted = cluster.WaitForFailover(to, kFailoverBound);
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  Report("TLS cluster failover after SIGKILL", absl::Now() - killed);
  EXPECT_EQ(*promoted, *replica);
  const RedisReply after =
      TlsCommand(cluster.node(*promoted).tls_port(), f, {"CLUSTER", "SLOTS"});
  bool named = false;
  for (const auto& [first, ports] : SlotsPorts(after)) {
    if (first == 0) {
      named = !ports.empty() && ports[0] == cluster.node(*promoted).tls_port();
    }
  }
  EXPECT_TRUE(named) << after.DebugString();
  EXPECT_EQ(
      TlsCommand(cluster.node(*promoted).tls_port(), f, {"GET", "{06S}k"}).str,
      "v");
  const int tls_port = cluster.node(to).tls_port();
  ASSERT_TRUE(cluster.node(to).Restart().ok());
  EXPECT_EQ(cluster.node(to).tls_port(), tls_port);
  EXPECT_TRUE(BecomesALinkedReplica(cluster.node(to), kFailoverBound))
      << cluster.node(to).LastLogLine();
  EXPECT_EQ(TlsCommand(tls_port, f, {"PING"}).str, "PONG");
}

TEST(RedisSentinelTest, ATlsSentinelSetNamesTlsPortsAndFailsOver) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> certs = TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const TlsFiles& f = (*certs)->files();
  const absl::Time start = absl::Now();
  const std::string kPassword = "data pw";
  absl::StatusOr<std::unique_ptr<RedisSentinelSet>> started =
      RedisSentinelSet::Start(
          {.master_name = "tokenlease",
           .password = kPassword,
           .tls = TlsServerOptionsFor(f, /*require_client_cert=*/true)});
  ASSERT_TRUE(started.ok()) << started.status();
  Report("TLS sentinel set start", absl::Now() - start);
  RedisSentinelSet& set = **started;
  EXPECT_EQ(
      set.tls_url(),
      absl::StrCat("rediss+sentinel://127.0.0.1:", set.sentinel(0).tls_port(),
                   ",127.0.0.1:", set.sentinel(1).tls_port(),
                   ",127.0.0.1:", set.sentinel(2).tls_port(), "/tokenlease"));
  const int old_tls_port = set.primary().tls_port();
  absl::StatusOr<int> current = set.CurrentPrimaryPort();
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_EQ(*current, old_tls_port);
  // Over TLS to a sentinel: the primary's, the replica's and the other
  // sentinels' TLS ports.
  const int sentinel_port = set.sentinel(0).tls_port();
  RedisReply addr = TlsCommand(
      sentinel_port, f, {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "tokenlease"});
  EXPECT_EQ(addr.DebugString(),
            absl::StrCat("[127.0.0.1, ", old_tls_port, "]"));
  RedisReply replicas =
      TlsCommand(sentinel_port, f, {"SENTINEL", "REPLICAS", "tokenlease"});
  std::printf("[ info     ] SENTINEL REPLICAS over TLS: %s\n",
              replicas.DebugString().c_str());
  EXPECT_THAT(replicas.DebugString(),
              HasSubstr(absl::StrCat("port, ", set.replica().tls_port())));
  RedisReply sentinels =
      TlsCommand(sentinel_port, f, {"SENTINEL", "SENTINELS", "tokenlease"});
  EXPECT_THAT(sentinels.DebugString(),
              HasSubstr(absl::StrCat("port, ", set.sentinel(1).tls_port())));
  EXPECT_THAT(sentinels.DebugString(),
              HasSubstr(absl::StrCat("port, ", set.sentinel(2).tls_port())));
  // The data nodes over TLS, with their password.
  // (WAIT: the replica has the write before the primary is killed.)
  absl::StatusOr<std::vector<RedisReply>> written = TlsCommands(
      old_tls_port,
      {{"AUTH", kPassword}, {"SET", "k", "v"}, {"WAIT", "1", "5000"}},
      {.ca_file = f.ca_file,
       .cert_file = f.client_cert,
       .key_file = f.client_key,
       .timeout = absl::Seconds(6)});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ((*written)[1].str, "OK");
  EXPECT_EQ((*written)[2].integer, 1);
  EXPECT_THAT(TlsCommand(set.replica().tls_port(), f, {"ROLE"}, kPassword)
                  .DebugString(),
              HasSubstr("slave"));

  const absl::Time killed = absl::Now();
  set.primary().Kill();
  absl::StatusOr<int> promoted =
      set.WaitForFailover(old_tls_port, kFailoverBound);
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  Report("TLS sentinel failover after SIGKILL", absl::Now() - killed);
  EXPECT_EQ(*promoted, set.replica().tls_port());
  EXPECT_EQ(TlsCommand(*promoted, f, {"GET", "k"}, kPassword).str, "v");
  // The old primary, restarted, is turned into the new one's replica and
  // links to it over TLS. (A sentinel converts a restarted old primary only
  // after it has reported itself a master for 8 s, and asks a replica for
  // INFO every 10 s: about 10 s.)
  const absl::Time restarted = absl::Now();
  ASSERT_TRUE(set.primary().Restart().ok());
  EXPECT_EQ(set.primary().tls_port(), old_tls_port);
  EXPECT_TRUE(BecomesALinkedReplica(set.primary(), absl::Seconds(30)))
      << set.primary().LastLogLine();
  Report("TLS old primary relinked as a replica", absl::Now() - restarted);
}

}  // namespace
}  // namespace tokenlease::support
