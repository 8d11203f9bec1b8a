// main() of the Redis test binaries: gtest with RedisEnvironment, the one
// redis-server the binary's RedisTest fixtures share.
#include <gtest/gtest.h>

#include "testing/redis_test.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(
      new tokenlease::testing::RedisEnvironment);  // gtest owns it
  return RUN_ALL_TESTS();
}
