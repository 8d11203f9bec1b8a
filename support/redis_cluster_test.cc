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

}  // namespace
}  // namespace tokenlease::support
