// lua/announce.lua (instance discovery) on a real redis-server: counts,
// expiry in the script's time, leaving, the key's TTL, foreign members,
// a wrong-type key and every argument error (a table).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "redis/instance_census.h"
#include "testing/redis_test.h"
#include "testing/scripts.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::RedisReply;
using ::testing::HasSubstr;
using testing::kT0;
using ::testing::StartsWith;

class LuaAnnounceTest : public testing::RedisTest {
 protected:
  std::string Key() const { return internal::InstancesKey(prefix(), "g"); }
  // announce.lua at `now_us` for `id` with `ttl_ms` (0: leave).
  RedisReply Announce(int64_t now_us, const std::string& id, int64_t ttl_ms) {
    return client().Eval(
        internal::lua::kAnnounceScript,
        {"1", Key(), "1", absl::StrCat(now_us), id, absl::StrCat(ttl_ms)});
  }
  int64_t Count(const RedisReply& r) {
    EXPECT_EQ(r.type, RedisReply::Type::kInteger) << r.DebugString();
    return r.integer;
  }
};

TEST_F(LuaAnnounceTest, CountsTheLiveInstancesAndForgetsTheExpiredOnes) {
  EXPECT_EQ(Count(Announce(kT0, "a", 3000)), 1);
  EXPECT_EQ(Count(Announce(kT0 + 1000, "b", 3000)), 2);
  EXPECT_EQ(Count(Announce(kT0 + 2000, "a", 3000)), 2);  // a renewed
  // b's announcement ends at kT0 + 3001000: still alive at that instant's
  // eve, gone at it.
  EXPECT_EQ(Count(Announce(kT0 + 3000999, "c", 3000)), 3);
  EXPECT_EQ(Count(Announce(kT0 + 3001000, "c", 3000)), 2);
  const RedisReply members =
      client().Run({"ZRANGE", Key(), "0", "-1", "WITHSCORES"});
  ASSERT_EQ(members.elements.size(), 4u) << members.DebugString();
  EXPECT_EQ(members.elements[0].str, "a");
  EXPECT_EQ(members.elements[1].str, absl::StrCat(kT0 + 3002000));
  EXPECT_EQ(members.elements[2].str, "c");
  EXPECT_EQ(members.elements[3].str, absl::StrCat(kT0 + 6001000));
}

TEST_F(LuaAnnounceTest, LeavingRemovesTheInstanceAndTheLastOneTheKey) {
  EXPECT_EQ(Count(Announce(kT0, "a", 3000)), 1);
  EXPECT_EQ(Count(Announce(kT0, "b", 3000)), 2);
  EXPECT_EQ(Count(Announce(kT0, "a", 0)), 1);
  EXPECT_EQ(Count(Announce(kT0, "a", 0)), 1);  // twice: nothing more
  EXPECT_EQ(Count(Announce(kT0, "b", 0)), 0);
  EXPECT_EQ(client().Run({"EXISTS", Key()}).integer, 0);
}

TEST_F(LuaAnnounceTest, TheKeyExpiresWithItsLongestAnnouncement) {
  // The server's time (now_us = -1): TTL = ttl + 1 s of margin.
  ASSERT_EQ(Count(client().Eval(internal::lua::kAnnounceScript,
                                {"1", Key(), "1", "-1", "a", "2000"})),
            1);
  ASSERT_EQ(Count(client().Eval(internal::lua::kAnnounceScript,
                                {"1", Key(), "1", "-1", "b", "500"})),
            2);
  const int64_t pttl = client().Run({"PTTL", Key()}).integer;
  EXPECT_GT(pttl, 2000);  // a's, not b's
  EXPECT_LE(pttl, 3001);
}

TEST_F(LuaAnnounceTest, ForeignMembersBeyondAnyAnnouncementAreRemoved) {
  ASSERT_EQ(
      client()
          .Run({"ZADD", Key(), absl::StrCat(kT0 + 600000001), "far", "+inf",
                "forever", absl::StrCat(kT0 + 600000000), "longest"})
          .integer,
      3);
  // "longest" is what a 600 s announcement at kT0 writes: it stays.
  EXPECT_EQ(Count(Announce(kT0, "a", 1000)), 2);
  EXPECT_EQ(client().Run({"ZSCORE", Key(), "far"}).type,
            RedisReply::Type::kNil);
}

TEST_F(LuaAnnounceTest, AKeyOfAnotherTypeIsAnErrorAndIsLeftAlone) {
  client().Run({"RPUSH", Key(), "x"});
  const RedisReply r = Announce(kT0, "a", 1000);
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, StartsWith("WRONGTYPE tokenlease: key '" + Key() +
                                "' holds a list, not the zset"));
  EXPECT_EQ(client().Run({"LLEN", Key()}).integer, 1);
}

struct BadArguments {
  const char* name;
  std::vector<std::string> args;  // after numkeys and the key
  const char* error;
};

class LuaAnnounceArgumentTest
    : public LuaAnnounceTest,
      public ::testing::WithParamInterface<BadArguments> {};

TEST_P(LuaAnnounceArgumentTest, IsRefusedWithNothingWritten) {
  std::vector<std::string> args = {"1", Key()};
  args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
  const RedisReply r = client().Eval(internal::lua::kAnnounceScript, args);
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr(GetParam().error));
  EXPECT_EQ(client().Run({"EXISTS", Key()}).integer, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LuaAnnounceArgumentTest,
    ::testing::Values(
        BadArguments{"Version", {"2", "-1", "a", "1000"}, "protocol version"},
        BadArguments{"Now", {"1", "x", "a", "1000"}, "now_us is x"},
        BadArguments{"EmptyId", {"1", "-1", "", "1000"}, "0 bytes"},
        BadArguments{"LongId",
                     {"1", "-1", std::string(129, 'i'), "1000"},
                     "129 bytes; it must be 1 to 128"},
        BadArguments{"NegativeTtl", {"1", "-1", "a", "-1"}, "ttl_ms is -1"},
        BadArguments{"LongTtl", {"1", "-1", "a", "600001"}, "ttl_ms is 600001"},
        BadArguments{"FractionTtl", {"1", "-1", "a", "1.5"}, "ttl_ms is 1.5"},
        BadArguments{"NoTtl", {"1", "-1", "a"}, "expected 4 arguments, got 3"},
        BadArguments{"Extra",
                     {"1", "-1", "a", "1000", "x"},
                     "expected 4 arguments, got 5"}),
    [](const ::testing::TestParamInfo<BadArguments>& info) {
      return std::string(info.param.name);
    });

TEST_F(LuaAnnounceTest, TwoKeysAreRefused) {
  const RedisReply r =
      client().Eval(internal::lua::kAnnounceScript,
                    {"2", Key(), Key() + "2", "1", "-1", "a", "1000"});
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("expected 1 key, got 2"));
}

}  // namespace
}  // namespace tokenlease
