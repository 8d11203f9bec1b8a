// The spec stamp every band state carries (lib/band.lua, lib/state.lua
// restamp) on a real redis-server: services that use different specs for
// one limit name share what was consumed (a rolling deploy that changes a
// limit) instead of each getting its own burst, and a state no spec of the
// caller's kind can take over is an error that writes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "redis/script_call.h"
#include "redis/scripts.h"
#include "testing/redis_test.h"
#include "testing/scripts.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::RedisReply;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kT0 = int64_t{1767225600} * 1000000;  // 2026-01-01Z
constexpr int64_t kSec = 1000000;

class LuaSpecStampTest : public testing::ScriptTest {
 protected:
  // acquire.lua for up to `wanted` (minimum 1) of `name` at `now`.
  RedisReply Acquire(const LimitSpec& spec, const std::string& name,
                     int64_t wanted, int64_t now) {
    return EvalAcquire(spec, name, testing::At(now, wanted, 1));
  }
  // The tokens granted, or -1 (and a test failure) for an error.
  int64_t Granted(const LimitSpec& spec, const std::string& name,
                  int64_t wanted, int64_t now) {
    return ScriptTest::Granted(Acquire(spec, name, wanted, now));
  }
  // Band 0's state key of `name`.
  std::string StateKey(const std::string& name) {
    return absl::StrCat("{", prefix(), name, "}:b0");
  }
};

TEST_F(LuaSpecStampTest, StatesCarryTheStampOfTheirSpec) {
  struct Case {
    LimitSpec spec;
    const char* stamp;
  };
  const Case cases[] = {
      // 10/s: a token costs 100000 us (p / l = 100000 / 1).
      {LimitSpec::TokenBucket(10, absl::Seconds(1)), " g100000/1"},
      // 15/s: 200000 / 3 us.
      {LimitSpec::Gcra(15, absl::Seconds(1)), " g200000/3"},
      {LimitSpec::TokenBucket(5, absl::Seconds(1), 8, Refill::kStepwise),
       " s5/1000000/8"},
      {LimitSpec::FixedWindow(5, absl::Seconds(1)), " f1000000/a0"},
      {LimitSpec::SlidingWindowCounter(5, absl::Seconds(1)), " c1000000/a0"},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string name = absl::StrCat("k", n++);
    ASSERT_EQ(Granted(c.spec, name, 1, kT0), 1);
    const RedisReply state = client().Run({"GET", StateKey(name)});
    EXPECT_TRUE(absl::EndsWith(state.str, c.stamp))
        << state.str << " should end with '" << c.stamp << "'";
  }
}

// The case: three specs of 10-20 tokens on one name gave 40 at
// once; consumption is now shared, so at most the largest burst (20).
TEST_F(LuaSpecStampTest, SpecsOfOneNameShareWhatWasConsumed) {
  const LimitSpec a = LimitSpec::TokenBucket(10, absl::Seconds(1));
  const LimitSpec b = LimitSpec::TokenBucket(15, absl::Seconds(1));
  const LimitSpec c = LimitSpec::Gcra(20, absl::Seconds(1));
  EXPECT_EQ(Granted(a, "k", 10, kT0), 10);
  EXPECT_EQ(Granted(b, "k", 15, kT0), 5);  // 10 of its 15 consumed
  EXPECT_EQ(Granted(c, "k", 20, kT0), 5);  // 15 of its 20 consumed
  EXPECT_EQ(Granted(a, "k", 1, kT0), 0);   // 20 consumed: beyond a's 10
  // A denial writes nothing: the state is still c's (20 tokens, a debt of
  // 1 s at 50 ms each). 600 ms later 8 of them are still consumed, which
  // a's 10 leave room for 2 of.
  EXPECT_EQ(Granted(a, "k", 10, kT0 + 600'000), 2);
}

TEST_F(LuaSpecStampTest, ARaisedLimitKeepsWhatWasConsumed) {
  // A rolling deploy from 100/min to 200/min: the 60 used stay used.
  const LimitSpec before = LimitSpec::TokenBucket(100, absl::Minutes(1));
  const LimitSpec after = LimitSpec::TokenBucket(200, absl::Minutes(1));
  EXPECT_EQ(Granted(before, "k", 60, kT0), 60);
  EXPECT_EQ(Granted(after, "k", 200, kT0), 140);
  EXPECT_EQ(Granted(before, "k", 1, kT0), 0);
}

TEST_F(LuaSpecStampTest, AStepwiseBucketKeepsWhatWasConsumed) {
  const LimitSpec small =
      LimitSpec::TokenBucket(5, absl::Seconds(1), 10, Refill::kStepwise);
  const LimitSpec large =
      LimitSpec::TokenBucket(5, absl::Seconds(1), 30, Refill::kStepwise);
  EXPECT_EQ(Granted(small, "k", 8, kT0), 8);
  EXPECT_EQ(Granted(large, "k", 30, kT0), 22);  // 8 of 30 consumed
  EXPECT_EQ(Granted(small, "k", 1, kT0), 0);    // 30 consumed: 20 owed
  // Four steps of 5 repay the 20 owed beyond its burst; the fifth gives 5.
  EXPECT_EQ(Granted(small, "k", 10, kT0 + 4 * kSec), 0);
  EXPECT_EQ(Granted(small, "k", 10, kT0 + 5 * kSec), 5);
}

TEST_F(LuaSpecStampTest, AWindowLimitChangeKeepsTheCount) {
  const LimitSpec five = LimitSpec::FixedWindow(5, absl::Seconds(10));
  const LimitSpec eight = LimitSpec::FixedWindow(8, absl::Seconds(10));
  EXPECT_EQ(Granted(five, "k", 5, kT0), 5);
  EXPECT_EQ(Granted(eight, "k", 8, kT0 + 1), 3);
}

// States no spec of the caller's can take over: an error naming the key
// and both stamps, and nothing written (the state is as it was).
TEST_F(LuaSpecStampTest, AStateOfAnotherKindOrWindowIsAnError) {
  struct Case {
    const char* name;
    LimitSpec writer;
    LimitSpec reader;
  };
  const Case cases[] = {
      {"bucket_then_window", LimitSpec::TokenBucket(10, absl::Seconds(1)),
       LimitSpec::FixedWindow(10, absl::Seconds(1))},
      {"stepwise_then_smooth",
       LimitSpec::TokenBucket(10, absl::Seconds(1), 10, Refill::kStepwise),
       LimitSpec::TokenBucket(10, absl::Seconds(1))},
      {"window_then_bucket", LimitSpec::FixedWindow(10, absl::Seconds(1)),
       LimitSpec::Gcra(10, absl::Seconds(1))},
      {"window_period", LimitSpec::FixedWindow(10, absl::Seconds(1)),
       LimitSpec::FixedWindow(10, absl::Seconds(2))},
      {"counter_period", LimitSpec::SlidingWindowCounter(10, absl::Seconds(1)),
       LimitSpec::SlidingWindowCounter(10, absl::Minutes(1))},
      {"fixed_then_counter", LimitSpec::FixedWindow(10, absl::Seconds(1)),
       LimitSpec::SlidingWindowCounter(10, absl::Seconds(1))},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_EQ(Granted(c.writer, c.name, 4, kT0), 4);
    const std::string key = StateKey(c.name);
    const std::string before = client().Run({"GET", key}).str;
    const int64_t ttl = client().Run({"PTTL", key}).integer;
    const RedisReply r = Acquire(c.reader, c.name, 1, kT0 + 1);
    ASSERT_TRUE(r.is_error()) << r.DebugString();
    EXPECT_THAT(r.str, HasSubstr(absl::StrCat("key '", key,
                                              "' holds the state of another "
                                              "spec")));
    EXPECT_THAT(r.str, HasSubstr("give each spec its own limit name"));
    const RedisReply after = client().Run({"GET", key});
    EXPECT_EQ(after.str, before);
    EXPECT_LE(client().Run({"PTTL", key}).integer, ttl);
    EXPECT_GT(client().Run({"PTTL", key}).integer, 0);
  }
}

// A state written before stamps existed is read as before (and stamped by
// the next write), so an upgrade keeps every key.
TEST_F(LuaSpecStampTest, AStateWithoutAStampIsReadAsBefore) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  // TAT 1 s ahead: all 10 consumed; 300 ms later 3 are back, and taking
  // them puts the TAT 1 s after that.
  client().Run({"SET", StateKey("k"), absl::StrCat(kT0 + kSec, " 0 1")});
  EXPECT_EQ(Granted(spec, "k", 10, kT0 + 300'000), 3);
  EXPECT_THAT(client().Run({"GET", StateKey("k")}).str,
              StartsWith(absl::StrCat(kT0 + kSec + 300'000, " 0 1 g100000/1")));
}

TEST_F(LuaSpecStampTest, ABadStampIsNotAState) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  for (const char* value :
       {"1 0 1 g", "1 0 1 gx/1", "1 0 1 g1/2/3", "1 0 1 g0/1", "1 0 1 g1/2 x",
        "1 0 1  g1/1", "1 0 1 g1/2", "1 0 s1/2/3"}) {
    SCOPED_TRACE(value);
    client().Run({"SET", StateKey("k"), value});
    const RedisReply r = Acquire(spec, "k", 1, kT0);
    ASSERT_TRUE(r.is_error()) << r.DebugString();
    EXPECT_EQ(client().Run({"GET", StateKey("k")}).str, value);
  }
}

TEST_F(LuaSpecStampTest, BatchItemsAndReleasesConvertAsAcquireDoes) {
  const LimitSpec a = LimitSpec::TokenBucket(10, absl::Seconds(1));
  const LimitSpec b = LimitSpec::TokenBucket(20, absl::Seconds(1));
  ASSERT_EQ(Granted(a, "k", 10, kT0), 10);
  // A batch acquire under b sees 10 of its 20 consumed.
  internal::AcquireArgs args;
  args.wanted = 20;
  args.minimum = 1;
  const std::vector<internal::BatchItem> items = {
      internal::BatchItem::Acquire("k", args)};
  const RedisReply r =
      client().Eval(internal::lua::kBatchScript,
                    internal::BatchArguments(b, prefix(), items, kT0));
  const std::vector<absl::StatusOr<internal::BatchItemResult>> results =
      internal::ParseBatchReply(r, items);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_EQ(results[0]->acquire.granted, 10);
}

}  // namespace
}  // namespace tokenlease
