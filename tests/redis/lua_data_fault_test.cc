// Data faults in Redis fail safe (issue "Redis slow, gone or wrong", item
// 3): a state key holding a value that is no tokenlease state, or a log
// holding a foreign member, is an error naming the key from every script
// and every op, never a fresh bucket, and the failing call leaves every key
// of the limit as it was (values and TTLs), with no lease id used up.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "testing/key_dump.h"
#include "testing/redis_test.h"
#include "testing/scripts.h"
#include "testing/specs.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::AcquireArgs;
using internal::BatchItem;
using internal::RedisReply;
using internal::ReleaseArgs;
using testing::At;
using testing::KeyState;
using testing::LeaseAt;

// 2026-01-01T00:00:00Z in us.
constexpr int64_t kT0 = int64_t{1767225600} * 1000000;

// The scripts on keys under "f:".
class LuaDataFaultTest : public testing::ScriptTest {
 protected:
  LuaDataFaultTest() : ScriptTest("f:") {}

  std::map<std::string, KeyState> Dump() {
    return testing::DumpKeys(client(), "{f:");
  }
  // One item of the batch script, alone, at `now_us`.
  absl::Status BatchItemStatus(const LimitSpec& spec, const BatchItem& item,
                               int64_t now_us) {
    auto r = Batch(spec, {item}, now_us);
    if (r.size() != 1) return absl::InternalError("not one reply");
    return r[0].status();
  }
  // Overwrites `key` with `value`, keeping its TTL.
  void Spoil(const std::string& key, const std::string& value) {
    ASSERT_EQ(Run({"SET", key, value, "KEEPTTL"}).str, "OK");
  }
};

// The error of a call that found `key` corrupt: it names the key.
void ExpectNamesKey(const absl::Status& s, const std::string& key) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("key '", key, "'")))
      << s;
}

AcquireArgs ChargeAt(int64_t now_us, int64_t amount) {
  AcquireArgs a = At(now_us, amount, 0);
  a.charge = true;
  a.max_debt = 1000;
  return a;
}

struct CorruptCase {
  std::string name;
  LimitSpec spec;     // one band
  std::string key;    // the key to spoil ("b0", or "b0:m" for a log)
  std::string value;  // what is written there
};

std::vector<CorruptCase> CorruptCases() {
  const std::vector<std::pair<std::string, LimitSpec>> specs = {
      {"Smooth", LimitSpec::TokenBucket(10, absl::Seconds(1))},
      {"Stepwise",
       LimitSpec::TokenBucket(10, absl::Seconds(1), 0, Refill::kStepwise)},
      {"Fixed", LimitSpec::FixedWindow(10, absl::Seconds(10))},
      {"Counter", LimitSpec::SlidingWindowCounter(10, absl::Seconds(10))},
      {"Log", LimitSpec::SlidingWindowLog(10, absl::Seconds(10))},
  };
  // Values no band stores: not numbers, too few or too many fields, not
  // integers, beyond 2^53, other spacings and notations.
  const std::vector<std::pair<std::string, std::string>> anywhere = {
      {"Garbage", "garbage"},    {"Empty", ""},
      {"OneNumber", "5"},        {"FourNumbers", "1 2 3 4"},
      {"Fraction", "1.5 2"},     {"Exponent", "1e3 2"},
      {"Hex", "0x10 2"},         {"Huge", "9007199254740993 2"},
      {"LeadingSpace", " 1 2"},  {"TwoSpaces", "1  2"},
      {"TrailingText", "1 2 x"},
  };
  std::vector<CorruptCase> out;
  for (const auto& [spec_name, spec] : specs) {
    const std::string key = spec_name == "Log" ? "b0:m" : "b0";
    for (const auto& [value_name, value] : anywhere) {
      out.push_back({spec_name + value_name, spec, key, value});
    }
  }
  // Numbers out of range for the kind.
  out.push_back({"SmoothFractionNotBelowL", specs[0].second, "b0",
                 absl::StrCat(kT0, " 3 3")});
  out.push_back({"SmoothNegativeFraction", specs[0].second, "b0",
                 absl::StrCat(kT0, " -1 3")});
  out.push_back({"StepwiseThreeFields", specs[1].second, "b0",
                 absl::StrCat("5 ", kT0, " 1")});
  out.push_back(
      {"FixedNegativeCount", specs[2].second, "b0", absl::StrCat(kT0, " -5")});
  out.push_back({"CounterWithoutCurrent", specs[3].second, "b0",
                 absl::StrCat(kT0, " 2")});
  out.push_back({"CounterNegativeCurrent", specs[3].second, "b0",
                 absl::StrCat(kT0, " 2 -9")});
  out.push_back(
      {"LogNegativeTotal", specs[4].second, "b0:m", absl::StrCat("-5 ", kT0)});
  return out;
}

class CorruptStateTest : public LuaDataFaultTest,
                         public ::testing::WithParamInterface<CorruptCase> {};

// A drained limit whose state is overwritten: every op fails with an error
// naming the key and changes nothing. Before the fix, acquire.lua and
// release.lua read an unreadable value as no state: a fresh, full bucket
// (a second burst), or failed after writing the other bands.
TEST_P(CorruptStateTest, EveryOpFailsNamingTheKeyAndChangesNothing) {
  const CorruptCase& c = GetParam();
  // Drain it: the whole limit at kT0, recorded for a release.
  auto grant = TryAcquire(c.spec, "k", LeaseAt(kT0, 10, 10, "lease-1"));
  ASSERT_TRUE(grant.ok() && grant->granted == 10) << grant.status();
  const std::string key = absl::StrCat("{f:k}:", c.key);
  Spoil(key, c.value);
  const std::map<std::string, KeyState> before = Dump();
  const int64_t now = kT0 + 1000;

  ExpectNamesKey(TryAcquire(c.spec, "k", At(now, 1, 1)).status(), key);
  ExpectNamesKey(TryAcquire(c.spec, "k", At(now, 0, 0)).status(), key);
  ExpectNamesKey(TryAcquire(c.spec, "k", ChargeAt(now, 3)).status(), key);
  ExpectNamesKey(
      TryRelease(c.spec, "k", ReleaseArgs{4, "lease-1", kT0, now}).status(),
      key);
  ExpectNamesKey(
      TryAcquire(c.spec, "k", LeaseAt(now, 1, 1, "lease-2")).status(), key);
  ExpectNamesKey(
      BatchItemStatus(c.spec, BatchItem::Acquire("k", At(-1, 1, 1)), now), key);
  ExpectNamesKey(
      BatchItemStatus(c.spec, BatchItem::Acquire("k", LeaseAt(-1, 1, 1, "l3")),
                      now),
      key);
  ExpectNamesKey(
      BatchItemStatus(c.spec, BatchItem::Acquire("k", ChargeAt(-1, 3)), now),
      key);
  ExpectNamesKey(
      BatchItemStatus(
          c.spec, BatchItem::Release("k", ReleaseArgs{4, "lease-1", kT0}), now),
      key);
  EXPECT_EQ(Dump(), before);  // the grant's record is still there
}

INSTANTIATE_TEST_SUITE_P(AllKinds, CorruptStateTest,
                         ::testing::ValuesIn(CorruptCases()),
                         [](const ::testing::TestParamInfo<CorruptCase>& info) {
                           return info.param.name;
                         });

// Two bands, the second one's state truncated: the first band is not
// charged (acquire.lua used to charge it, then fail), and a release neither
// credits it nor uses its lease id, so the same release applies once the
// state is repaired.
TEST_F(LuaDataFaultTest, ACorruptSecondBandLeavesTheFirstUntouched) {
  const LimitSpec spec = testing::Composite(
      {LimitSpec::TokenBucket(10, absl::Seconds(1)),
       LimitSpec::SlidingWindowCounter(20, absl::Seconds(10))});
  auto grant = TryAcquire(spec, "two", LeaseAt(kT0, 6, 6, "lease-two"));
  ASSERT_TRUE(grant.ok() && grant->granted == 6) << grant.status();
  const std::string counter = "{f:two}:b1";
  const std::string good = Run({"GET", counter}).str;
  // "start prev": the first two numbers (without the count and the stamp).
  Spoil(counter, good.substr(0, good.find(' ', good.find(' ') + 1)));
  const std::map<std::string, KeyState> before = Dump();
  const int64_t now = kT0;  // the whole grant is still returnable

  ExpectNamesKey(TryAcquire(spec, "two", At(now, 2, 2)).status(), counter);
  ExpectNamesKey(TryAcquire(spec, "two", ChargeAt(now, 2)).status(), counter);
  const ReleaseArgs release{6, "lease-two", kT0, now};
  ExpectNamesKey(TryRelease(spec, "two", release).status(), counter);
  EXPECT_EQ(Dump(), before);

  Spoil(counter, good);
  auto back = TryRelease(spec, "two", release);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, 6);
}

// A log whose oldest live entry is foreign, with an expired entry before
// it: a denial that looks for the entry that frees room finds it. The call
// fails before its first write: the expired entry is not pruned (the meta
// total still counts it, and would count it for the log's lifetime had the
// pruning happened without the meta update).
TEST_F(LuaDataFaultTest, AForeignLogEntryFoundByADenialChangesNothing) {
  const LimitSpec spec = LimitSpec::SlidingWindowLog(3, absl::Seconds(10));
  for (int64_t t : {kT0, kT0 + 6000000, kT0 + 7000000}) {
    auto r = TryAcquire(spec, "log", At(t, 1, 1));
    ASSERT_TRUE(r.ok() && r->granted == 1) << r.status();
  }
  const std::string key = "{f:log}:b0";
  ASSERT_EQ(Run({"ZADD", key, absl::StrCat(kT0 + 5000000), "oops"}).integer, 1);
  const std::map<std::string, KeyState> before = Dump();
  const int64_t now = kT0 + 10500000;  // the kT0 entry has expired

  auto denied = TryAcquire(spec, "log", At(now, 2, 2));
  ExpectNamesKey(denied.status(), key);
  EXPECT_TRUE(absl::StrContains(denied.status().message(), "'oops'"))
      << denied.status();
  ExpectNamesKey(
      BatchItemStatus(spec, BatchItem::Acquire("log", At(-1, 2, 2)), now), key);
  EXPECT_EQ(Dump(), before);
}

// A release that would read a foreign newest entry after taking from its
// grant's entry fails before writing anything.
TEST_F(LuaDataFaultTest, AReleaseChecksTheLogEntriesItWouldReadLater) {
  const LimitSpec spec = LimitSpec::SlidingWindowLog(5, absl::Seconds(10));
  auto r = TryAcquire(spec, "rel", LeaseAt(kT0, 2, 2, "lease-rel"));
  ASSERT_TRUE(r.ok() && r->granted == 2) << r.status();
  const std::string key = "{f:rel}:b0";
  ASSERT_EQ(Run({"ZADD", key, absl::StrCat(kT0 + 1), "oops"}).integer, 1);
  const std::map<std::string, KeyState> before = Dump();

  ExpectNamesKey(
      TryRelease(spec, "rel", ReleaseArgs{2, "lease-rel", kT0, kT0 + 1000})
          .status(),
      key);
  EXPECT_EQ(Dump(), before);
}

// A grant record that is no "<tokens> <granted_at_us>" fails the release
// naming it; one of another type is WRONGTYPE. Nothing is credited.
TEST_F(LuaDataFaultTest, ACorruptGrantRecordFailsTheRelease) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  auto r = TryAcquire(spec, "g", LeaseAt(kT0, 10, 10, "id"));
  ASSERT_TRUE(r.ok() && r->granted == 10) << r.status();
  const std::string record = "{f:g}:r:id";
  for (const std::string value : {"garbage", "10", "10 x", "-3 5", "1.5 5"}) {
    SCOPED_TRACE(value);
    Spoil(record, value);
    const std::map<std::string, KeyState> before = Dump();
    ExpectNamesKey(
        TryRelease(spec, "g", ReleaseArgs{10, "id", kT0, kT0}).status(),
        record);
    ExpectNamesKey(
        BatchItemStatus(
            spec, BatchItem::Release("g", ReleaseArgs{10, "id", kT0}), kT0),
        record);
    EXPECT_EQ(Dump(), before);
  }
  ASSERT_EQ(Run({"DEL", record}).integer, 1);
  ASSERT_EQ(Run({"RPUSH", record, "x"}).integer, 1);
  auto wrong = TryRelease(spec, "g", ReleaseArgs{10, "id", kT0, kT0});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition)
      << wrong.status();
}

// A release whose lease key is another limit's key is refused before it
// reads it: a stepwise bucket's "tokens anchor" looks like a grant record,
// and reading it as one would credit tokens from nothing and delete the
// other limit's state (a full bucket again).
TEST_F(LuaDataFaultTest, AReleaseWithAnotherLimitsKeyIsRefused) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const LimitSpec step =
      LimitSpec::TokenBucket(10, absl::Seconds(1), 0, Refill::kStepwise);
  auto r = TryAcquire(spec, "mine", At(kT0, 10, 10));
  ASSERT_TRUE(r.ok() && r->granted == 10) << r.status();
  r = TryAcquire(step, "other", At(kT0, 5, 5));
  ASSERT_TRUE(r.ok() && r->granted == 5) << r.status();
  const std::map<std::string, KeyState> before = Dump();
  ASSERT_EQ(before.count("other}:b0"), 1u);

  std::vector<std::string> args = internal::ReleaseArguments(
      spec, "f:", "mine", ReleaseArgs{5, "x", kT0, kT0});
  ASSERT_EQ(args[2], "{f:mine}:r:x");
  args[2] = std::string("{f:other}:b0");
  const absl::StatusOr<int64_t> single = internal::ParseReleaseReply(
      client().Eval(internal::lua::kReleaseScript, args));
  EXPECT_FALSE(single.ok());
  EXPECT_TRUE(absl::StrContains(single.status().message(),
                                "the lease key is '{f:other}:b0'"))
      << single.status();

  const std::vector<BatchItem> items = {
      BatchItem::Release("mine", ReleaseArgs{5, "x", kT0})};
  args = internal::BatchArguments(spec, "f:", items, kT0);
  ASSERT_EQ(args[2], "{f:mine}:r:x");
  args[2] = std::string("{f:other}:b0");
  const auto batch = internal::ParseBatchReply(
      client().Eval(internal::lua::kBatchScript, args), items);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_TRUE(absl::StrContains(batch[0].status().message(),
                                "the lease key is '{f:other}:b0'"))
      << batch[0].status();
  EXPECT_EQ(Dump(), before);
}

}  // namespace
}  // namespace tokenlease
