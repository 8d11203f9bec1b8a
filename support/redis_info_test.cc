// INFO parsing (redis_info.h) on texts as Redis 7 writes them.
#include "support/redis_info.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>

namespace tokenlease::support {
namespace {

constexpr char kInfo[] =
    "# Server\r\nredis_version:7.0.15\r\n"
    "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n"
    "# Commandstats\r\n"
    "cmdstat_evalsha:calls=1234,usec=5678,usec_per_call=4.60\r\n"
    "cmdstat_eval:calls=5,usec=100,usec_per_call=20.00\r\n";

TEST(RedisInfoTest, TextAndIntegerFields) {
  EXPECT_EQ(InfoText(kInfo, "redis_version"), "7.0.15");
  EXPECT_EQ(InfoText(kInfo, "absent"), "");
  EXPECT_EQ(InfoText(kInfo, "used_memory_"), "");  // whole names only
  EXPECT_EQ(InfoField(kInfo, "used_memory"), 1048576);
  EXPECT_EQ(InfoField(kInfo, "used_memory_human"), -1);  // not an integer
  EXPECT_EQ(InfoField(kInfo, "absent"), -1);
}

// Valkey reports a compatibility redis_version; its own is valkey_version.
TEST(RedisInfoTest, ServerVersionNamesRedisOrValkey) {
  EXPECT_EQ(ServerVersion("# Server\r\nredis_version:7.0.15\r\n"),
            "redis-server 7.0.15");
  EXPECT_EQ(ServerVersion("# Server\r\nredis_version:7.2.4\r\n"
                          "server_name:valkey\r\nvalkey_version:8.0.1\r\n"),
            "valkey-server 8.0.1");
  EXPECT_EQ(ServerVersion(""), "redis-server ?");
}

TEST(RedisInfoTest, CommandStatistics) {
  EXPECT_EQ(CommandCalls(kInfo, "evalsha"), 1234);
  EXPECT_EQ(CommandCalls(kInfo, "eval"), 5);  // not evalsha's
  EXPECT_EQ(CommandCalls(kInfo, "get"), 0);
  EXPECT_EQ(CommandUsec(kInfo, "evalsha"), 5678);  // not usec_per_call
  EXPECT_EQ(CommandUsec(kInfo, "eval"), 100);
  EXPECT_EQ(CommandUsec(kInfo, "get"), 0);
  EXPECT_EQ(ScriptCalls(kInfo), 1239);
  EXPECT_EQ(ScriptUsec(kInfo), 5778);
  EXPECT_EQ(ScriptCalls("# Commandstats\r\n"), 0);
}

struct CpuCase {
  const char* name;
  std::string info;
  int64_t usec;  // -1: refused
};

void PrintTo(const CpuCase& c, std::ostream* os) { *os << c.name; }

class ServerCpuUsecTest : public ::testing::TestWithParam<CpuCase> {};

TEST_P(ServerCpuUsecTest, AddsUserAndSystemTimeExactly) {
  EXPECT_EQ(ServerCpuUsec(GetParam().info), GetParam().usec);
}

INSTANTIATE_TEST_SUITE_P(
    Texts, ServerCpuUsecTest,
    ::testing::Values(
        CpuCase{"SixDecimals",
                "# CPU\r\nused_cpu_sys:0.122358\r\nused_cpu_user:12.515652\r\n",
                12638010},
        CpuCase{"FewerDecimals", "used_cpu_sys:1.5\r\nused_cpu_user:0.25\r\n",
                1750000},
        CpuCase{"NoFraction", "used_cpu_sys:2\r\nused_cpu_user:3\r\n", 5000000},
        CpuCase{"NoUserTime", "used_cpu_sys:0.122358\r\n", -1},
        CpuCase{"NotANumber", "used_cpu_sys:0.1x\r\nused_cpu_user:1\r\n", -1},
        CpuCase{"Negative", "used_cpu_sys:-0.5\r\nused_cpu_user:1\r\n", -1},
        CpuCase{"Plus", "used_cpu_sys:+1.0\r\nused_cpu_user:1\r\n", -1},
        CpuCase{"NoWholePart", "used_cpu_sys:.5\r\nused_cpu_user:1\r\n", -1},
        CpuCase{"SevenDecimals",
                "used_cpu_sys:0.1234567\r\nused_cpu_user:1\r\n", -1},
        CpuCase{"NoCpuSection", kInfo, -1}),
    [](const ::testing::TestParamInfo<CpuCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace tokenlease::support
