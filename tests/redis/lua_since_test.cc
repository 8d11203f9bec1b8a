// The data-loss marker (lua/since.lua) and acquire.lua's and batch.lua's
// optional empty_since_us on a real redis-server: a key without state
// counts as drained at that time, for every algorithm that takes it (a
// table), and as fresh without it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "redis/script_call.h"
#include "redis/scripts.h"
#include "testing/redis_test.h"
#include "testing/scripts.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::RedisReply;
using ::testing::HasSubstr;

constexpr int64_t kT0 = int64_t{1767225600} * 1000000;  // 2026-01-01Z
constexpr int64_t kSec = 1000000;

class LuaSinceTest : public testing::ScriptTest {
 protected:
  // acquire.lua for up to `wanted` (minimum 1) at `now`, with
  // empty_since_us = `since` (nullopt: the argument is not sent).
  RedisReply Acquire(const LimitSpec& spec, const std::string& name,
                     int64_t wanted, int64_t now,
                     std::optional<int64_t> since) {
    std::vector<std::string> extra;
    if (since.has_value()) extra.push_back(absl::StrCat(*since));
    return EvalAcquire(spec, name, testing::At(now, wanted, 1), extra);
  }
};

TEST_F(LuaSinceTest, TheMarkerIsCreatedOnceWithTheServersTime) {
  const std::string key = prefix() + "since";
  const int64_t before = absl::ToUnixMicros(absl::Now());
  const RedisReply first =
      client().Eval(internal::lua::kSinceScript, {"1", key, "1"});
  ASSERT_EQ(first.type, RedisReply::Type::kInteger) << first.DebugString();
  // The server's clock is this machine's.
  EXPECT_GE(first.integer, before - kSec);
  EXPECT_LE(first.integer, absl::ToUnixMicros(absl::Now()) + kSec);
  const RedisReply again =
      client().Eval(internal::lua::kSinceScript, {"1", key, "1"});
  EXPECT_EQ(again.integer, first.integer);
  EXPECT_EQ(client().Run({"GET", key}).str, absl::StrCat(first.integer));
  EXPECT_EQ(client().Run({"PTTL", key}).integer, -1);  // no TTL
}

TEST_F(LuaSinceTest, ABadMarkerIsAnErrorAndIsLeftAlone) {
  const std::string key = prefix() + "since";
  client().Run({"SET", key, "12ab"});
  RedisReply r = client().Eval(internal::lua::kSinceScript, {"1", key, "1"});
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("holds '12ab', not a time"));
  client().Run({"DEL", key});
  client().Run({"RPUSH", key, "x"});
  r = client().Eval(internal::lua::kSinceScript, {"1", key, "1"});
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("holds a list"));
  r = client().Eval(internal::lua::kSinceScript, {"1", key, "2"});
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("expected 1 key and the argument 1"));
}

struct DrainedCase {
  const char* name;
  LimitSpec spec;
  int64_t since;  // after kT0
  int64_t now;    // after kT0
  int64_t wanted;
  int64_t granted;  // with empty_since_us = kT0 + since
  int64_t fresh;    // without it
};

class LuaSinceDrainedTest : public LuaSinceTest,
                            public ::testing::WithParamInterface<DrainedCase> {
};

TEST_P(LuaSinceDrainedTest, AKeyWithoutStateIsDrainedAtThatTime) {
  const DrainedCase& c = GetParam();
  EXPECT_EQ(Granted(Acquire(c.spec, "a", c.wanted, kT0 + c.now, kT0 + c.since)),
            c.granted);
  EXPECT_EQ(Granted(Acquire(c.spec, "b", c.wanted, kT0 + c.now, -1)), c.fresh);
  EXPECT_EQ(Granted(Acquire(c.spec, "c", c.wanted, kT0 + c.now, std::nullopt)),
            c.fresh);
  // A time after now changes nothing (the key is not drained yet).
  EXPECT_EQ(
      Granted(Acquire(c.spec, "d", c.wanted, kT0 + c.now, kT0 + c.now + 1)),
      c.fresh);
  // A key with state keeps it: the time applies to keys without one
  // (every row's fresh key grants all it wants).
  ASSERT_EQ(c.fresh, c.wanted);
  EXPECT_EQ(Granted(Acquire(c.spec, "p", 1, kT0 + c.now, std::nullopt)), 1);
  EXPECT_EQ(Granted(Acquire(c.spec, "p", c.wanted, kT0 + c.now, kT0 + c.since)),
            c.wanted - 1);
}

INSTANTIATE_TEST_SUITE_P(
    Table, LuaSinceDrainedTest,
    ::testing::Values(
        // 10/s, burst 10: 300 ms after the loss, 3 tokens are back.
        DrainedCase{"TokenBucket", LimitSpec::TokenBucket(10, absl::Seconds(1)),
                    0, 300000, 10, 3, 10},
        DrainedCase{"Gcra", LimitSpec::Gcra(10, absl::Seconds(1)), 0, 300000,
                    10, 3, 10},
        // 5 per whole second: nothing before the first step, 5 after.
        DrainedCase{
            "StepwiseBeforeAStep",
            LimitSpec::TokenBucket(5, absl::Seconds(1), 5, Refill::kStepwise),
            0, 500000, 5, 0, 5},
        DrainedCase{
            "StepwiseAfterAStep",
            LimitSpec::TokenBucket(5, absl::Seconds(1), 5, Refill::kStepwise),
            0, 1200000, 5, 5, 5},
        // 3 per aligned 10 s: the loss's window is used up; the next not.
        DrainedCase{"FixedWindowSameWindow",
                    LimitSpec::FixedWindow(3, absl::Seconds(10)), kSec,
                    5 * kSec, 3, 0, 3},
        DrainedCase{"FixedWindowNextWindow",
                    LimitSpec::FixedWindow(3, absl::Seconds(10)), kSec,
                    10 * kSec, 3, 3, 3},
        // 10 per 10 s: half the loss's window still weighs 5.
        DrainedCase{"SlidingCounter",
                    LimitSpec::SlidingWindowCounter(10, absl::Seconds(10)),
                    kSec, 15 * kSec, 10, 5, 10}),
    [](const ::testing::TestParamInfo<DrainedCase>& info) {
      return std::string(info.param.name);
    });

TEST_F(LuaSinceTest, BatchItemsTakeTheTimeToo) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  internal::AcquireArgs a;
  a.wanted = 10;
  a.minimum = 1;
  const std::vector<internal::BatchItem> items = {
      internal::BatchItem::Acquire("u1", a),
      internal::BatchItem::Acquire("u2", a)};
  client().Run({"SET", "{" + prefix() + "u2}:b0",
                absl::StrCat(kT0 - kSec, " 0 1")});  // u2: a full bucket
  std::vector<std::string> args =
      internal::BatchArguments(spec, prefix(), items, kT0 + 300000);
  args.push_back(absl::StrCat(kT0));
  const auto replies = internal::ParseBatchReply(
      client().Eval(internal::lua::kBatchScript, args), items);
  ASSERT_EQ(replies.size(), 2u);
  ASSERT_TRUE(replies[0].ok() && replies[1].ok());
  EXPECT_EQ(replies[0]->acquire.granted, 3);   // drained at kT0
  EXPECT_EQ(replies[1]->acquire.granted, 10);  // had a state
}

TEST_F(LuaSinceTest, ABadTimeIsAnErrorOfTheCall) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  internal::AcquireArgs a;
  std::vector<std::string> args =
      internal::AcquireArguments(spec, prefix(), "k", a);
  args.push_back("x");
  RedisReply r = client().Eval(internal::lua::kAcquireScript, args);
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("empty_since_us is x"));
  args.back() = "-2";
  r = client().Eval(internal::lua::kAcquireScript, args);
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("empty_since_us is -2"));
  args.push_back("1");  // two more than the bands: a count error
  r = client().Eval(internal::lua::kAcquireScript, args);
  ASSERT_TRUE(r.is_error()) << r.DebugString();
  EXPECT_THAT(r.str, HasSubstr("arguments for 1 bands"));
}

}  // namespace
}  // namespace tokenlease
