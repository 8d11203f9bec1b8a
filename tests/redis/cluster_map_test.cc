// The routing facts of Redis Cluster and Sentinel endpoints, without
// servers: URLs, the slot map of a CLUSTER SLOTS reply, redirects,
// LimitSlot.
#include "redis/cluster_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "redis/endpoint.h"
#include "redis/script_call.h"
#include "testing/replies.h"

namespace tokenlease::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Topology = RedisEndpoint::Topology;

RedisReply Int(int64_t v) { return testing::IntegerReply(v); }
RedisReply Str(std::string s) { return testing::StringReply(std::move(s)); }
RedisReply Arr(std::vector<RedisReply> e) {
  return testing::ArrayReply(std::move(e));
}

TEST(ClusterEndpointTest, ParsesSeedsCredentialsAndDefaults) {
  auto ep = ParseRedisUrl("redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->topology, Topology::kCluster);
  ASSERT_EQ(ep->seeds.size(), 2u);
  EXPECT_EQ(ep->seeds[0].host, "10.0.0.1");
  EXPECT_EQ(ep->seeds[0].port, 7000);
  EXPECT_EQ(ep->seeds[1].port, 6379);
  EXPECT_EQ(ep->user, "u");
  EXPECT_EQ(ep->password, "p@ss");
  EXPECT_EQ(ep->Describe(), "redis+cluster://10.0.0.1:7000,10.0.0.2:6379");
  EXPECT_FALSE(ParseRedisUrl("redis+cluster://h:7000/3").ok());
  EXPECT_TRUE(ParseRedisUrl("redis+cluster://h:7000/0").ok());
}

TEST(ClusterEndpointTest, SentinelUrlsNameThePrimary) {
  auto ep = ParseRedisUrl("redis+sentinel://:pw@s1,s2:5000/mymaster/2");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->topology, Topology::kSentinel);
  ASSERT_EQ(ep->seeds.size(), 2u);
  EXPECT_EQ(ep->seeds[0].port, 26379);
  EXPECT_EQ(ep->seeds[1].port, 5000);
  EXPECT_EQ(ep->service, "mymaster");
  EXPECT_EQ(ep->db, 2);
  EXPECT_EQ(ep->password, "pw");
  EXPECT_EQ(ep->Describe(), "redis+sentinel://s1:26379,s2:5000/mymaster/2");
  auto bad = ParseRedisUrl("redis+sentinel://:secret@s1:26379");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("names the primary"));
  EXPECT_THAT(bad.status().message(), Not(HasSubstr("secret")));
  // redis:// takes one host.
  EXPECT_FALSE(ParseRedisUrl("redis://a:1,b:2").ok());
}

TEST(ClusterMapTest, ParsesPrimariesAndFillsAnUnknownHost) {
  RedisReply reply = Arr({
      Arr({Int(0), Int(5460), Arr({Str("127.0.0.1"), Int(7000), Str("id0")}),
           Arr({Str("127.0.0.1"), Int(7003), Str("id3")})}),
      Arr({Int(5461), Int(16383), Arr({Str(""), Int(7001), Str("id1")})}),
  });
  auto map = ParseClusterSlots(reply, "10.1.1.1");
  ASSERT_TRUE(map.ok()) << map.status();
  ASSERT_EQ(map->size(), 2u);
  EXPECT_EQ((*map)[0].first, 0);
  EXPECT_EQ((*map)[0].last, 5460);
  EXPECT_EQ((*map)[0].port, 7000);
  EXPECT_EQ((*map)[1].host, "10.1.1.1");
}

TEST(ClusterMapTest, RefusesMalformedMapsAndHostNames) {
  EXPECT_FALSE(ParseClusterSlots(Int(3), "h").ok());
  EXPECT_FALSE(
      ParseClusterSlots(
          Arr({Arr({Int(0), Int(16384), Arr({Str("127.0.0.1"), Int(1)})})}),
          "h")
          .ok());
  auto named = ParseClusterSlots(
      Arr({Arr({Int(0), Int(1), Arr({Str("redis-0.example"), Int(1)})})}), "h");
  ASSERT_FALSE(named.ok());
  EXPECT_THAT(named.status().message(), HasSubstr("host name"));
}

TEST(ClusterMapTest, ParsesMovedAndAsk) {
  auto moved = ParseRedirect("MOVED 3999 127.0.0.1:6381", "x");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->kind, Redirect::Kind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->host, "127.0.0.1");
  EXPECT_EQ(moved->port, 6381);
  auto ask = ParseRedirect("ASK 1 :7002", "10.0.0.9");
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->kind, Redirect::Kind::kAsk);
  EXPECT_EQ(ask->host, "10.0.0.9");
  auto v6 = ParseRedirect("MOVED 5 ::1:7000", "x");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "::1");
  for (const char* not_one :
       {"ERR MOVED", "MOVED", "MOVED 16384 h:1", "MOVED 1 h", "MOVED 1 h:0",
        "ASK x h:1", "NOSCRIPT No matching script"}) {
    EXPECT_FALSE(ParseRedirect(not_one, "x").has_value()) << not_one;
  }
}

TEST(ClusterMapTest, LimitSlotIsTheSlotOfTheLimitsTag) {
  for (const char* name : {"user-1", "", "a}b", "}x", "{", "日本"}) {
    for (const char* prefix : {"tokenlease:", "p", ""}) {
      EXPECT_EQ(LimitSlot(prefix, name), HashSlot(LimitKeyTag(prefix, name)))
          << prefix << " " << name;
    }
  }
}

}  // namespace
}  // namespace tokenlease::internal
