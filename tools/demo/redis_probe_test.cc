// Parsing of INFO output (the parent's Redis figures).
#include "demo/redis_probe.h"

#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

constexpr char kInfo[] =
    "# Server\r\nredis_version:7.0.15\r\n"
    "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n"
    "# Commandstats\r\n"
    "cmdstat_evalsha:calls=1234,usec=5678,usec_per_call=4.60\r\n"
    "cmdstat_eval:calls=5,usec=100,usec_per_call=20.00\r\n";

TEST(RedisProbeTest, ServerCpuUsecAddsUserAndSystemTime) {
  EXPECT_EQ(ServerCpuUsec("# CPU\r\nused_cpu_sys:0.122358\r\n"
                          "used_cpu_user:12.515652\r\n"),
            12638010);
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:1.5\r\nused_cpu_user:0.25\r\n"),
            1750000);  // fewer decimals (older servers)
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:0.122358\r\n"), -1);  // no user
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:0.1x\r\nused_cpu_user:1\r\n"), -1);
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:-1.0\r\nused_cpu_user:1\r\n"), -1);
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:-0.5\r\nused_cpu_user:1\r\n"), -1);
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:+1.0\r\nused_cpu_user:1\r\n"), -1);
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:.5\r\nused_cpu_user:1\r\n"), -1);
  EXPECT_EQ(ServerCpuUsec("used_cpu_sys:0.1234567\r\nused_cpu_user:1\r\n"), -1);
  EXPECT_EQ(ServerCpuUsec(kInfo), -1);
}

TEST(RedisProbeTest, InfoFields) {
  EXPECT_EQ(InfoText(kInfo, "redis_version"), "7.0.15");
  EXPECT_EQ(InfoField(kInfo, "used_memory"), 1048576);
  EXPECT_EQ(InfoField(kInfo, "used_memory_human"), -1);  // not a number
  EXPECT_EQ(InfoField(kInfo, "absent"), -1);
  EXPECT_EQ(InfoText(kInfo, "absent"), "");
}

TEST(RedisProbeTest, CommandCalls) {
  EXPECT_EQ(CommandCalls(kInfo, "evalsha"), 1234);
  EXPECT_EQ(CommandCalls(kInfo, "eval"), 5);
  EXPECT_EQ(CommandCalls(kInfo, "get"), 0);
}

TEST(RedisProbeTest, CommandUsec) {
  EXPECT_EQ(CommandUsec(kInfo, "evalsha"), 5678);  // not usec_per_call
  EXPECT_EQ(CommandUsec(kInfo, "eval"), 100);
  EXPECT_EQ(CommandUsec(kInfo, "get"), 0);
}

}  // namespace
}  // namespace tokenlease::tools
