// lua/batch.lua: many keys' acquires, charges and releases in one call.
// Against acquire.lua and release.lua called one item at a time on twin
// keys (replies, values and TTLs); items that fail alone, all or none; the
// size bound and the layout errors; ParseBatchReply on malformed replies;
// HashSlot.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "redis/reply.h"
#include "redis/script_call.h"
#include "testing/generators.h"
#include "testing/key_dump.h"
#include "testing/redis_test.h"
#include "testing/replies.h"
#include "testing/scripts.h"
#include "testing/specs.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

using internal::AcquireArgs;
using internal::BatchItem;
using internal::BatchItemResult;
using internal::RedisReply;
using internal::ReleaseArgs;
using Op = internal::BatchItem::Op;
using Results = std::vector<absl::StatusOr<BatchItemResult>>;
using testing::KeyState;
using testing::kT0;

BatchItem Acquire(std::string name, int64_t wanted, int64_t minimum,
                  int64_t max_wait_us = 0) {
  AcquireArgs a;
  a.wanted = wanted;
  a.minimum = minimum;
  a.max_wait_us = max_wait_us;
  return BatchItem::Acquire(std::move(name), a);
}

// An acquire item that records its grant under `lease_id` (op "lease").
BatchItem Lease(std::string name, int64_t wanted, int64_t minimum,
                std::string lease_id) {
  BatchItem item = Acquire(std::move(name), wanted, minimum);
  item.lease_id = std::move(lease_id);
  return item;
}

BatchItem Charge(std::string name, int64_t amount, int64_t max_debt) {
  AcquireArgs a;
  a.wanted = amount;
  a.minimum = 0;
  a.charge = true;
  a.max_debt = max_debt;
  return BatchItem::Acquire(std::move(name), a);
}

BatchItem Release(std::string name, int64_t amount, int64_t granted_at_us,
                  std::string lease_id) {
  return BatchItem::Release(
      std::move(name), ReleaseArgs{amount, std::move(lease_id), granted_at_us});
}

// A result as text, for comparisons with a readable failure.
std::string Show(const absl::StatusOr<BatchItemResult>& r, Op op) {
  if (!r.ok()) return absl::StrCat("error ", r.status().code());
  if (op == Op::kRelease) return absl::StrCat("released ", r->released);
  const internal::AcquireResult& a = r->acquire;
  // A batch's charge item replies these two (acquire.lua's charge all six).
  if (op == Op::kCharge) {
    return absl::StrCat("charged ", a.granted, " left ", a.remaining);
  }
  return absl::StrCat(a.granted, " ", a.remaining, " ", a.retry_after_us, " ",
                      a.reset_after_us, " ", a.now_us, " ", a.wait_us);
}

std::string ShowItem(const BatchItem& item) {
  switch (item.op) {
    case Op::kAcquire:
      return absl::StrCat(item.lease_id.empty() ? "acquire " : "lease ",
                          item.name, " ", item.wanted, " ", item.minimum, " ",
                          item.max_wait_us, " ", item.lease_id);
    case Op::kCharge:
      return absl::StrCat("charge ", item.name, " ", item.wanted, " ",
                          item.max_debt);
    case Op::kRelease:
      return absl::StrCat("release ", item.name, " ", item.amount, " ",
                          item.granted_at_us, " ", item.lease_id);
  }
  return "?";
}

int64_t TimeUs(const RedisReply& r) {
  int64_t s = 0, us = 0;
  if (r.elements.size() != 2 || !absl::SimpleAtoi(r.elements[0].str, &s) ||
      !absl::SimpleAtoi(r.elements[1].str, &us)) {
    ADD_FAILURE() << "not a TIME reply: " << r.DebugString();
  }
  return s * 1000000 + us;
}

class LuaBatchTest : public testing::RedisTest {
 protected:
  void SetUp() override {
    RedisTest::SetUp();
    for (std::string_view body :
         {internal::lua::kAcquireScript, internal::lua::kReleaseScript,
          internal::lua::kBatchScript}) {
      ASSERT_FALSE(Run({"SCRIPT", "LOAD", std::string(body)}).is_error());
    }
  }

  RedisReply Run(const std::vector<std::string>& cmd) {
    return client().Run(cmd);
  }
  RedisReply EvalSha(std::string_view sha,
                     const std::vector<std::string>& args) {
    std::vector<std::string> cmd = {"EVALSHA", std::string(sha)};
    cmd.insert(cmd.end(), args.begin(), args.end());
    return Run(cmd);
  }

  // The batch on the keys under "b:"; the results.
  Results Batch(const LimitSpec& spec, const std::vector<BatchItem>& items,
                int64_t now_us) {
    return testing::ScriptBatch(client(), spec, "b:", items, now_us);
  }

  // The single script call that item `item` stands for, on keys under
  // `prefix` at `now_us` (the EVALSHA arguments after the digest).
  static std::vector<std::string> SingleArguments(const LimitSpec& spec,
                                                  std::string_view prefix,
                                                  const BatchItem& item,
                                                  int64_t now_us) {
    if (item.op == Op::kRelease) {
      return internal::ReleaseArguments(
          spec, prefix, item.name,
          ReleaseArgs{item.amount, item.lease_id, item.granted_at_us, now_us});
    }
    AcquireArgs a;
    a.wanted = item.wanted;
    a.minimum = item.op == Op::kCharge ? 0 : item.minimum;
    a.max_wait_us = item.max_wait_us;
    a.charge = item.op == Op::kCharge;
    a.max_debt = item.max_debt;
    a.now_us = now_us;
    a.lease_id = item.lease_id;
    return internal::AcquireArguments(spec, prefix, item.name, a);
  }

  static absl::StatusOr<BatchItemResult> ParseSingle(const RedisReply& reply,
                                                     Op op) {
    BatchItemResult r;
    if (op == Op::kRelease) {
      absl::StatusOr<int64_t> v = internal::ParseReleaseReply(reply);
      if (!v.ok()) return v.status();
      r.released = *v;
    } else {
      absl::StatusOr<internal::AcquireResult> v =
          internal::ParseAcquireReply(reply);
      if (!v.ok()) return v.status();
      r.acquire = *v;
    }
    return r;
  }

  // Runs `items` at `now_us` as one batch call on the keys under "b:" and
  // as one acquire.lua / release.lua call per item (but those in
  // `not_alone`) on the twin keys under "s:", in one MULTI/EXEC, between
  // TIME replies that bound when each side set its TTLs. Sets `batch` and
  // `single` (empty results for the items in `not_alone`).
  // `keys_in_argv`: the batch call in the Redis Cluster form.
  void RunBoth(const LimitSpec& spec, const std::vector<BatchItem>& items,
               int64_t now_us, Results& batch, Results& single,
               const std::set<size_t>& not_alone = {},
               bool keys_in_argv = false) {
    ASSERT_EQ(Run({"MULTI"}).str, "OK");
    Run({"TIME"});
    EvalSha(internal::lua::kBatchSha1,
            internal::BatchArguments(spec, "b:", items, now_us, keys_in_argv));
    Run({"TIME"});
    for (size_t i = 0; i < items.size(); ++i) {
      if (not_alone.count(i) > 0) continue;
      EvalSha(items[i].op == Op::kRelease ? internal::lua::kReleaseSha1
                                          : internal::lua::kAcquireSha1,
              SingleArguments(spec, "s:", items[i], now_us));
    }
    Run({"TIME"});
    const RedisReply exec = Run({"EXEC"});
    ASSERT_EQ(exec.type, RedisReply::Type::kArray) << exec.DebugString();
    ASSERT_EQ(exec.elements.size(), 4 + items.size() - not_alone.size());
    const std::vector<RedisReply>& e = exec.elements;
    // Both sides wrote within [first TIME, last TIME] of each other.
    const int64_t spread_ms = (TimeUs(e.back()) - TimeUs(e[0])) / 1000 + 1;
    tolerance_ms_ = std::max(tolerance_ms_, spread_ms);
    batch = internal::ParseBatchReply(e[1], items);
    single.assign(items.size(), absl::UnknownError("not run alone"));
    size_t next = 3;
    for (size_t i = 0; i < items.size(); ++i) {
      if (not_alone.count(i) > 0) continue;
      single[i] = ParseSingle(e[next++], items[i].op);
    }
  }

  // Every key under `tag_start` ("{b:"), by the rest of its name.
  std::map<std::string, KeyState> Dump(const std::string& tag_start) {
    return testing::DumpKeys(client(), tag_start);
  }

  // The keys under "b:" and their twins under "s:" hold the same values
  // and expire at the same time (within the spread of the writes).
  void ExpectTwinKeys(const std::string& where) {
    const std::map<std::string, KeyState> b = Dump("{b:");
    const std::map<std::string, KeyState> s = Dump("{s:");
    std::set<std::string> names;
    for (const auto& [k, v] : b) names.insert(k);
    for (const auto& [k, v] : s) names.insert(k);
    for (const std::string& k : names) {
      const auto bi = b.find(k), si = s.find(k);
      ASSERT_TRUE(bi != b.end()) << where << ": {b:" << k << " is missing";
      ASSERT_TRUE(si != s.end()) << where << ": {b:" << k << " is extra";
      EXPECT_EQ(bi->second.value, si->second.value) << where << ": {b:" << k;
      EXPECT_LE(std::abs(bi->second.expire_ms - si->second.expire_ms),
                tolerance_ms_)
          << where << ": {b:" << k << " expires at " << bi->second.expire_ms
          << " ms, its twin at " << si->second.expire_ms;
      EXPECT_EQ(bi->second.expire_ms < 0, si->second.expire_ms < 0) << k;
    }
  }

  int64_t tolerance_ms_ = 1;
};

// ---------------------------------------------------------------------------
// Agreement: random batches against the same calls one at a time.

struct AgreementCase {
  std::string name;
  LimitSpec spec;
};

void PrintTo(const AgreementCase& c, std::ostream* os) { *os << c.name; }

std::vector<AgreementCase> AgreementCases() {
  std::vector<AgreementCase> out;
  for (testing::NamedSpec& s : testing::EveryAlgorithm(5, absl::Seconds(1))) {
    out.push_back({s.name, s.spec});
  }
  LimitSpec borrow = LimitSpec::TokenBucket(5, absl::Seconds(1));
  borrow.max_borrow = absl::Seconds(2);
  out.push_back({"token_bucket_borrowing", borrow});
  borrow = LimitSpec::TokenBucket(5, absl::Seconds(1), 8, Refill::kStepwise);
  borrow.max_borrow = absl::Seconds(2);
  out.push_back({"stepwise_borrowing", borrow});
  borrow = LimitSpec::Gcra(7, absl::Milliseconds(100));
  borrow.max_borrow = absl::Milliseconds(300);
  out.push_back({"gcra_borrowing", borrow});
  out.push_back({"daily_and_weekly", testing::DailyAndWeeklyQuota()});
  LimitSpec folded = LimitSpec::SlidingWindowLog(20, absl::Seconds(10));
  folded.bands[0].log_granularity = absl::Milliseconds(100);
  folded.bands[0].max_log_entries = 4;
  out.push_back({"log_granules_folded", folded});
  LimitSpec quantum = LimitSpec::SlidingWindowLog(50, absl::Seconds(1));
  quantum.bands[0].max_log_entries = 8;
  out.push_back({"log_quantized", quantum});
  for (uint64_t seed : {3, 6}) {
    // In whole microseconds, as the scripts take them.
    LimitSpec spec = testing::RandomComposite(seed);
    for (Band& b : spec.bands) {
      b.window_offset =
          absl::Microseconds(absl::ToInt64Microseconds(b.window_offset));
      b.log_granularity =
          absl::Microseconds(absl::ToInt64Microseconds(b.log_granularity));
    }
    out.push_back({absl::StrCat("random_composite_", seed), spec});
  }
  return out;
}

class LuaBatchAgreementTest
    : public LuaBatchTest,
      public ::testing::WithParamInterface<AgreementCase> {};

TEST_P(LuaBatchAgreementTest, RandomBatchesDoWhatSingleCallsDo) {
  const LimitSpec& spec = GetParam().spec;
  ASSERT_TRUE(internal::ValidateScriptSpec(spec).ok())
      << internal::ValidateScriptSpec(spec);
  const Band& b0 = spec.bands[0];
  const int64_t cap = std::max(b0.burst, b0.limit);
  const std::vector<std::string> names = {"a", "b", "c"};
  constexpr int kRounds = 60, kPerRound = 8;
  for (uint64_t seed : {1, 2, 3}) {
    ASSERT_EQ(Run({"FLUSHALL"}).str, "OK");
    testing::Rng rng(seed * 7919);
    const std::vector<testing::ScriptCall> calls =
        testing::RandomScriptCalls(spec, seed, kRounds * kPerRound);
    struct Grant {
      std::string name, lease_id;
      int64_t granted, at;
    };
    std::vector<Grant> grants;           // those recorded under a lease id
    std::vector<std::string> lease_ids;  // every id released
    int applied = 0;
    for (int round = 0; round < kRounds; ++round) {
      // One call's step of time per round; the items' amounts from the
      // calls after it.
      const int64_t now = kT0 + calls[round].t_us;
      const int count = rng.Percent(5) ? 0 : rng.Uniform(1, kPerRound);
      std::vector<BatchItem> items;
      for (int i = 0; i < count; ++i) {
        const testing::ScriptCall& c =
            calls[(round * kPerRound + i + 1) % calls.size()];
        const std::string& name = rng.Pick(names);
        const int op = rng.Uniform(0, 99);
        if (op < 25 && !grants.empty()) {
          // Mostly one of the last grants (older ones are often past
          // their release horizon).
          const Grant& g =
              grants[grants.size() - 1 -
                     rng.Uniform(0, std::min<int64_t>(grants.size(), 6) - 1)];
          // Sometimes an id released already, or one never granted; an
          // amount up to 2 more than the grant (at most the grant goes).
          std::string id = g.lease_id;
          if (!lease_ids.empty() && rng.Percent(20)) id = rng.Pick(lease_ids);
          if (rng.Percent(5)) id = absl::StrCat("none", seed, "-", round);
          lease_ids.push_back(id);
          items.push_back(
              Release(g.name, rng.Uniform(0, g.granted + 2), g.at, id));
        } else if (op < 40) {
          items.push_back(
              Charge(name, rng.Uniform(0, cap + 2), rng.Uniform(0, cap)));
        } else {
          const int64_t minimum =
              rng.Percent(50) ? c.cost : rng.Uniform(0, c.cost);
          items.push_back(Acquire(name, c.cost, minimum, c.max_wait_us));
          // Most acquires record their grant for a release (op "lease").
          if (rng.Percent(80)) {
            items.back().lease_id = absl::StrCat("l", seed, "-", round, "-", i);
          }
        }
      }
      // Half the batches in the Redis Cluster form (keys in ARGV): the
      // same results.
      const bool keys_in_argv = rng.Percent(50);
      Results batch, single;
      RunBoth(spec, items, now, batch, single, {}, keys_in_argv);
      std::string where = absl::StrCat(
          GetParam().name, " seed ", seed, " round ", round, " now ", now,
          keys_in_argv ? " (keys in ARGV)" : "", ":");
      for (const BatchItem& item : items) {
        absl::StrAppend(&where, "\n  ", ShowItem(item));
      }
      ASSERT_EQ(batch.size(), items.size()) << where;
      for (size_t i = 0; i < items.size(); ++i) {
        ASSERT_TRUE(batch[i].ok())
            << where << "\nitem " << i << ": " << batch[i].status();
        EXPECT_EQ(Show(batch[i], items[i].op), Show(single[i], items[i].op))
            << where << "\nitem " << i;
        if (items[i].op == Op::kAcquire && !items[i].lease_id.empty() &&
            batch[i]->acquire.granted > 0) {
          grants.push_back({items[i].name, items[i].lease_id,
                            batch[i]->acquire.granted, now});
        }
        if (items[i].op == Op::kRelease && batch[i]->released > 0) ++applied;
      }
      ExpectTwinKeys(where);
      if (HasFailure()) return;
    }
    // The sequences did exercise releases that gave tokens back.
    EXPECT_GT(applied, 0) << GetParam().name << " seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(All, LuaBatchAgreementTest,
                         ::testing::ValuesIn(AgreementCases()),
                         testing::ParamName());

TEST_F(LuaBatchTest, ItemsOnOneKeySeeTheEarlierOnes) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const Results r =
      Batch(spec,
            {Acquire("k", 6, 6), Acquire("k", 6, 6), Lease("k", 6, 1, "x"),
             Release("k", 3, kT0, "x"), Acquire("k", 3, 3)},
            kT0);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0]->acquire.granted, 6);
  EXPECT_EQ(r[1]->acquire.granted, 0);
  EXPECT_EQ(r[2]->acquire.granted, 4);
  EXPECT_EQ(r[3]->released, 3);
  EXPECT_EQ(r[4]->acquire.granted, 3);
}

TEST_F(LuaBatchTest, RedisTimeIsReadOnceForTheWholeBatch) {
  const LimitSpec spec = LimitSpec::FixedWindow(100, absl::Seconds(1));
  std::vector<BatchItem> items;
  for (int i = 0; i < internal::kMaxBatchItems; ++i) {
    items.push_back(Acquire(absl::StrCat("k", i % 7), 1, 1));
  }
  const Results r = Batch(spec, items, -1);
  ASSERT_EQ(r.size(), items.size());
  for (const auto& x : r) {
    ASSERT_TRUE(x.ok()) << x.status();
    EXPECT_EQ(x->acquire.now_us, r[0]->acquire.now_us);
  }
}

// ---------------------------------------------------------------------------
// The GCRA charge of batch.lua (one smooth token bucket or GCRA band, no
// empty_since): one SET NX GET for a key without state, else the general
// path's commands. Whatever the key holds, the same replies, values and
// TTLs as acquire.lua's charge.

// The stamp ("g<p>/<l>") of `spec`'s band 0 as batch.lua writes it, read
// back from a charge of 1 on a scratch key.
std::string GcraStampOf(testing::SyncClient& client, const LimitSpec& spec) {
  const Results r =
      testing::ScriptBatch(client, spec, "stamp:", {Charge("x", 1, 0)}, kT0);
  EXPECT_TRUE(r.size() == 1 && r[0].ok());
  const std::string v = client.Run({"GET", "{stamp:x}:b0"}).str;
  return v.substr(v.rfind(' ') + 1);
}

// The one-band GCRA paths of batch.lua (fast_charge, fast_grant) against
// acquire.lua on every kind of state: the same replies, values and TTLs
// (the general path runs for what they do not take).
class LuaBatchGcraTest : public LuaBatchTest {
 protected:
  // Sets the same GCRA states on both twins ("{b:<name>}:b0" and
  // "{s:<name>}:b0", <name> below), each expiring at one absolute time (a
  // key the scripts leave alone keeps it, whatever time passes between the
  // SETs: PXAT, Redis 6.2+), for items at `now` under a spec of `stamp`:
  // none, a debt, a full debt, a TAT past, one far ahead, another spec's
  // state, no stamp, another l, garbage and a list.
  void SetGcraStates(const std::string& stamp, int64_t now) {
    const std::string l = stamp.substr(stamp.find('/') + 1);
    const std::vector<std::pair<std::string, std::string>> states = {
        {"none", ""},
        {"none_zero", ""},
        {"debt", absl::StrCat(now + 20'000, " 0 ", l, " ", stamp)},
        {"debt_full", absl::StrCat(now + 2'000'000, " 0 ", l, " ", stamp)},
        {"past", absl::StrCat(now - 3'000'000, " 0 ", l, " ", stamp)},
        {"far", absl::StrCat(now + 2251799813685248 + 7, " 0 ", l, " ", stamp)},
        {"other_spec", absl::StrCat(now + 40'000, " 0 1 g5000/1")},
        {"no_stamp", absl::StrCat(now + 30'000, " 0")},
        {"other_l", absl::StrCat(now + 30'000, " 5 7 ", stamp)},
        {"garbage", "garbage"},
        {"list", "list"},
    };
    const std::string expire_at_ms =
        absl::StrCat(TimeUs(Run({"TIME"})) / 1000 + 100'000);
    for (const std::string side : {"b", "s"}) {
      for (const auto& [name, value] : states) {
        const std::string key = absl::StrCat("{", side, ":", name, "}:b0");
        if (value == "list") {
          Run({"RPUSH", key, "x"});
        } else if (!value.empty()) {
          Run({"SET", key, value, "PXAT", expire_at_ms});
        }
      }
    }
  }

  void ExpectTheGeneralPathsResults(const std::vector<BatchItem>& items) {
    // l = 1 (10 ms a token) and l = 3 (a token costs 1/3 s).
    for (const LimitSpec& spec : {LimitSpec::TokenBucket(100, absl::Seconds(1)),
                                  LimitSpec::Gcra(3, absl::Seconds(1))}) {
      for (const bool keys_in_argv : {false, true}) {
        ASSERT_EQ(Run({"FLUSHALL"}).str, "OK");
        const std::string stamp = GcraStampOf(client(), spec);
        ASSERT_EQ(stamp[0], 'g') << stamp;
        const int64_t now = kT0 + 5'000'000;
        SetGcraStates(stamp, now);
        Results batch, single;
        RunBoth(spec, items, now, batch, single, {}, keys_in_argv);
        const std::string where =
            absl::StrCat(spec.bands[0].limit, " per period, stamp ", stamp,
                         keys_in_argv ? ", keys in ARGV" : "");
        ASSERT_EQ(batch.size(), items.size()) << where;
        for (size_t i = 0; i < items.size(); ++i) {
          EXPECT_EQ(Show(batch[i], items[i].op), Show(single[i], items[i].op))
              << where << ": " << ShowItem(items[i]);
        }
        // The corrupt values fail; a fresh key gets its 3 tokens.
        EXPECT_FALSE(batch[9].ok()) << where;
        EXPECT_FALSE(batch[10].ok()) << where;
        ASSERT_TRUE(batch[0].ok()) << where << ": " << batch[0].status();
        EXPECT_EQ(batch[0]->acquire.granted, 3) << where;
        ExpectTwinKeys(where);
      }
    }
  }
};

TEST_F(LuaBatchGcraTest, ChargesOnAnyStateDoWhatTheGeneralPathDoes) {
  ExpectTheGeneralPathsResults({
      Charge("none", 3, 100),
      Charge("none_zero", 0, 100),
      Charge("debt", 2, 100),
      Charge("debt_full", 5, 0),
      Charge("past", 1, 100),
      Charge("far", 4, 100),
      Charge("other_spec", 2, 100),
      Charge("no_stamp", 1, 100),
      Charge("other_l", 2, 100),
      Charge("garbage", 1, 100),
      Charge("list", 1, 100),
      Charge("none", 200, 100),
      Charge("none", 1, 100),
  });
}

// Grants: fits, fits in part, denied (a full debt; a minimum above the
// burst), a minimum of 0 (the general path), leases and plain acquires.
TEST_F(LuaBatchGcraTest, GrantsOnAnyStateDoWhatTheGeneralPathDoes) {
  ExpectTheGeneralPathsResults({
      Lease("none", 3, 1, "g0"),
      Acquire("none_zero", 150, 150),
      Lease("debt", 200, 1, "g2"),
      Acquire("debt_full", 5, 1),
      Lease("past", 2, 2, "g4"),
      Lease("far", 4, 1, "g5"),
      Lease("other_spec", 2, 1, "g6"),
      Acquire("no_stamp", 1, 1),
      Lease("other_l", 2, 1, "g8"),
      Lease("garbage", 1, 1, "g9"),
      Acquire("list", 1, 1),
      Acquire("none", 200, 1),
      Lease("none", 1, 1, "g12"),
      Acquire("debt", 0, 0),
      Lease("debt_full", 1, 1, "g14"),
  });
}

TEST_F(LuaBatchTest, AGcraChargeOfAKeyWithoutStateIsOneCommand) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Seconds(1));
  std::vector<BatchItem> items;
  for (int i = 0; i < 20; ++i)
    items.push_back(Charge(absl::StrCat("k", i), 1, 100));
  ASSERT_EQ(Run({"CONFIG", "RESETSTAT"}).str, "OK");
  Results r = Batch(spec, items, kT0);
  // The same keys again: each has a state now (read and written).
  Results again = Batch(spec, items, kT0 + 1000);
  const std::string stats = Run({"INFO", "commandstats"}).str;
  ASSERT_EQ(r.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(r[i].ok() && again[i].ok());
    EXPECT_EQ(r[i]->acquire.granted, 1);
    EXPECT_EQ(again[i]->acquire.granted, 1);
    EXPECT_EQ(again[i]->acquire.remaining, 98);
  }
  // 20 SETs (NX GET) the first time, 40 the second (NX GET, then the new
  // state), and no GET at all: the first SET read each state.
  EXPECT_TRUE(absl::StrContains(stats, "cmdstat_set:calls=60,")) << stats;
  EXPECT_FALSE(absl::StrContains(stats, "cmdstat_get:")) << stats;
}

TEST_F(LuaBatchTest, AGcraLeaseOfAKeyWithoutStateIsTwoCommands) {
  const LimitSpec spec = LimitSpec::TokenBucket(100, absl::Seconds(1));
  std::vector<BatchItem> items, again_items;
  for (int i = 0; i < 20; ++i) {
    items.push_back(Lease(absl::StrCat("k", i), 2, 1, absl::StrCat("a", i)));
    again_items.push_back(
        Lease(absl::StrCat("k", i), 2, 1, absl::StrCat("b", i)));
  }
  ASSERT_EQ(Run({"CONFIG", "RESETSTAT"}).str, "OK");
  Results r = Batch(spec, items, kT0);
  Results again = Batch(spec, again_items, kT0 + 1000);
  const std::string stats = Run({"INFO", "commandstats"}).str;
  ASSERT_EQ(r.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(r[i].ok() && again[i].ok());
    EXPECT_EQ(r[i]->acquire.granted, 2);
    EXPECT_EQ(again[i]->acquire.remaining, 96);
  }
  // 40 SETs the first time (NX GET writing the state, the grant record),
  // 60 the second (NX GET, the new state, the record), and no GET.
  EXPECT_TRUE(absl::StrContains(stats, "cmdstat_set:calls=100,")) << stats;
  EXPECT_FALSE(absl::StrContains(stats, "cmdstat_get:")) << stats;
}

// ---------------------------------------------------------------------------
// Items that fail: all or none, each on its own.

// A log band first (its expired entries would be pruned by a load), then a
// stepwise bucket and a sliding counter: a failing key in the second or
// third band must leave the first as it was.
LimitSpec ThreeBands() {
  LimitSpec spec = testing::Composite(
      {LimitSpec::SlidingWindowLog(3, absl::Seconds(10)),
       LimitSpec::TokenBucket(10, absl::Seconds(1), 0, Refill::kStepwise),
       LimitSpec::SlidingWindowCounter(10, absl::Seconds(20))});
  return spec;
}

TEST_F(LuaBatchTest, AFailingItemFailsAloneAndChangesNothing) {
  const LimitSpec spec = ThreeBands();
  const std::vector<std::string> names = {
      "good1", "good2", "good3", "list", "garbage", "corrupt", "rel_list"};
  // The same history on both sides: a grant of 2 at kT0 (log entries that
  // are expired 11 s later).
  std::vector<BatchItem> setup;
  for (const std::string& name : names) {
    setup.push_back(Lease(name, 2, 2, "lease-" + name));
  }
  Results batch, single;
  RunBoth(spec, setup, kT0, batch, single);
  for (size_t i = 0; i < setup.size(); ++i) {
    ASSERT_TRUE(batch[i].ok() && batch[i]->acquire.granted == 2);
    ASSERT_TRUE(single[i].ok() && single[i]->acquire.granted == 2);
  }
  // Spoil one key of each bad item (the batch side only), never band 0.
  Run({"DEL", "{b:list}:b1"});
  Run({"RPUSH", "{b:list}:b1", "x"});
  Run({"SET", "{b:garbage}:b1", "garbage"});
  // A counter state without its current count: acquire.lua alone would
  // charge the log and the bucket, then fail on it.
  const RedisReply counter = Run({"GET", "{b:corrupt}:b2"});
  ASSERT_EQ(counter.type, RedisReply::Type::kString);
  // "start prev": the first two numbers (without the count and the stamp).
  Run({"SET", "{b:corrupt}:b2",
       counter.str.substr(0,
                          counter.str.find(' ', counter.str.find(' ') + 1))});
  Run({"DEL", "{b:rel_list}:b2"});
  Run({"LPUSH", "{b:rel_list}:b2", "x"});
  const std::map<std::string, KeyState> before = Dump("{b:");

  const int64_t now = kT0 + 11000000;
  const std::vector<BatchItem> items = {
      Acquire("good1", 2, 1),
      Acquire("list", 1, 1),
      Release("good2", 1, kT0, "lease-good2"),
      Acquire("garbage", 1, 1),
      Charge("good3", 4, 1),
      Charge("corrupt", 4, 1),
      Release("rel_list", 1, kT0, "lease-rel_list"),
      Acquire("good1", 3, 1),
  };
  const std::set<size_t> bad = {1, 3, 5, 6};
  RunBoth(spec, items, now, batch, single, bad);
  ASSERT_EQ(batch.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (bad.count(i) > 0) {
      EXPECT_FALSE(batch[i].ok()) << "item " << i;
      continue;
    }
    ASSERT_TRUE(batch[i].ok()) << "item " << i << ": " << batch[i].status();
    EXPECT_EQ(Show(batch[i], items[i].op), Show(single[i], items[i].op))
        << "item " << i;
  }
  EXPECT_EQ(batch[1].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(batch[1].status().message(), "{b:list}:b1"))
      << batch[1].status();
  EXPECT_EQ(batch[3].status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(batch[3].status().message(), "{b:garbage}:b1"))
      << batch[3].status();
  EXPECT_EQ(batch[5].status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(batch[5].status().message(), "{b:corrupt}:b2"))
      << batch[5].status();
  EXPECT_EQ(batch[6].status().code(), absl::StatusCode::kFailedPrecondition);

  // The good items' keys are those of the calls made one at a time; the
  // bad items' keys, the expired log entries included, are untouched, and
  // the failed release did not use its lease id.
  const std::map<std::string, KeyState> after = Dump("{b:");
  const std::map<std::string, KeyState> twins = Dump("{s:");
  for (const auto& [key, state] : after) {
    const std::string name = key.substr(0, key.find('}'));
    if (name.rfind("good", 0) == 0) {
      ASSERT_TRUE(twins.count(key) > 0) << key;
      EXPECT_EQ(state.value, twins.at(key).value) << key;
      EXPECT_LE(std::abs(state.expire_ms - twins.at(key).expire_ms),
                tolerance_ms_)
          << key;
    } else {
      ASSERT_TRUE(before.count(key) > 0) << "{b:" << key << " was written";
      EXPECT_EQ(state.value, before.at(key).value) << "{b:" << key;
      EXPECT_EQ(state.expire_ms, before.at(key).expire_ms) << "{b:" << key;
    }
  }
  for (const auto& [key, state] : before) {
    if (key.rfind("good", 0) == 0) continue;  // as their twins
    EXPECT_TRUE(after.count(key) > 0) << "{b:" << key << " was deleted";
  }
  for (const auto& [key, state] : twins) {
    if (key.rfind("good", 0) != 0) continue;
    EXPECT_TRUE(after.count(key) > 0) << "{b:" << key << " has no twin";
  }
  // The failed release left its grant's record for a later one.
  EXPECT_EQ(Run({"EXISTS", "{b:rel_list}:r:lease-rel_list"}).integer, 1);
  EXPECT_EQ(Run({"EXISTS", "{b:good2}:r:lease-good2"}).integer, 0);
  // The log entries of kT0 are expired: a good item pruned its own.
  EXPECT_EQ(Run({"ZCARD", "{b:list}:b0"}).integer, 1);
  EXPECT_EQ(Run({"ZCARD", "{b:good1}:b0"}).integer, 1);
}

TEST_F(LuaBatchTest, AForeignLogMemberFailsItsItemBeforeAnyWrite) {
  // A log member that is not "<score>:<tokens>" (a foreign ZADD) fails its
  // item while it is read, before any write of the item (the expired
  // entry is not pruned).
  const LimitSpec spec =
      testing::Composite({LimitSpec::SlidingWindowLog(3, absl::Seconds(10)),
                          LimitSpec::Gcra(10, absl::Seconds(1))});
  ASSERT_EQ(Run({"ZADD", "{b:bad}:b0", absl::StrCat(kT0), "oops"}).integer, 1);
  ASSERT_EQ(Run({"SET", "{b:bad}:b0:m", "1 1767225600000000"}).str, "OK");
  const Results r = Batch(
      spec, {Acquire("x", 1, 1), Acquire("bad", 1, 1), Acquire("y", 1, 1)},
      kT0 + 20000000);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].ok() && r[0]->acquire.granted == 1);
  ASSERT_FALSE(r[1].ok());
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(r[1].status().message(),
                                "key '{b:bad}:b0' holds the member 'oops'"))
      << r[1].status();
  EXPECT_TRUE(r[2].ok() && r[2]->acquire.granted == 1);
  EXPECT_EQ(Run({"ZCARD", "{b:bad}:b0"}).integer, 1);  // not pruned
  EXPECT_EQ(Run({"EXISTS", "{b:bad}:b1"}).integer, 0);
}

// A lease item whose lease key is not under its limit's tag fails alone:
// no grant is recorded over another key.
TEST_F(LuaBatchTest, ALeaseItemWithAForeignLeaseKeyFailsAlone) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const std::vector<BatchItem> items = {Lease("a", 1, 1, "x"),
                                        Acquire("c", 1, 1)};
  std::vector<std::string> args =
      internal::BatchArguments(spec, "b:", items, kT0);
  ASSERT_EQ(args[2], "{b:a}:r:x");
  args[2] = std::string("{b:z}:r:x");
  const Results r = internal::ParseBatchReply(
      client().Eval(internal::lua::kBatchScript, args), items);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(absl::StrContains(
      r[0].status().message(),
      "the lease key is '{b:z}:r:x'; it must be '{b:a}:r:<lease_id>'"))
      << r[0].status();
  EXPECT_TRUE(r[1].ok() && r[1]->acquire.granted == 1);
  EXPECT_EQ(Run({"EXISTS", "{b:z}:r:x", "{b:a}:b0"}).integer, 0);
}

TEST_F(LuaBatchTest, AnItemArgumentOutOfRangeFailsThatItemOnly) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const Results r =
      Batch(spec,
            {Acquire("a", 1, 1), Acquire("b", 1, 2), Charge("c", 1, -1),
             Release("d", -1, kT0, "l"), Acquire("e", 1, 1)},
            kT0);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[0].ok());
  EXPECT_TRUE(absl::StrContains(r[1].status().message(),
                                "items[1].minimum is 2; it must be an integer "
                                "in [0, 1]"))
      << r[1].status();
  EXPECT_TRUE(absl::StrContains(r[2].status().message(), "items[2].max_debt"))
      << r[2].status();
  EXPECT_TRUE(absl::StrContains(r[3].status().message(), "items[3].amount"))
      << r[3].status();
  EXPECT_TRUE(r[4].ok());
  EXPECT_EQ(Run({"EXISTS", "{b:b}:b0", "{b:c}:b0", "{b:d}:b0"}).integer, 0);
}

// ---------------------------------------------------------------------------
// Bounds and layout errors: the whole call fails, nothing is applied.

TEST_F(LuaBatchTest, AtMostMaxBatchItems) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  std::vector<BatchItem> items;
  for (int i = 0; i < internal::kMaxBatchItems; ++i) {
    items.push_back(Acquire(absl::StrCat("k", i), 1, 1));
  }
  Results r = Batch(spec, items, kT0);
  ASSERT_EQ(r.size(), items.size());
  for (const auto& x : r) EXPECT_TRUE(x.ok() && x->acquire.granted == 1);
  ASSERT_EQ(Run({"FLUSHALL"}).str, "OK");

  items.push_back(Acquire("one_more", 1, 1));
  r = Batch(spec, items, kT0);
  ASSERT_EQ(r.size(), items.size());
  for (const auto& x : r) {
    ASSERT_FALSE(x.ok());
    EXPECT_EQ(x.status().code(), absl::StatusCode::kInternal);
    EXPECT_TRUE(absl::StrContains(
        x.status().message(),
        absl::StrCat("item count is ", internal::kMaxBatchItems + 1,
                     "; it must be an integer in [0, ",
                     internal::kMaxBatchItems, "]")))
        << x.status();
  }
  EXPECT_EQ(Run({"DBSIZE"}).integer, 0);
}

TEST_F(LuaBatchTest, AnEmptyBatchIsANoOp) {
  const LimitSpec spec = LimitSpec::TokenBucket(10, absl::Seconds(1));
  const RedisReply reply =
      client().Eval(internal::lua::kBatchScript,
                    internal::BatchArguments(spec, "b:", {}, -1));
  EXPECT_EQ(reply.type, RedisReply::Type::kArray) << reply.DebugString();
  EXPECT_TRUE(reply.elements.empty());
  EXPECT_TRUE(internal::ParseBatchReply(reply, {}).empty());
  EXPECT_EQ(Run({"DBSIZE"}).integer, 0);
  // The spec is still checked.
  std::vector<std::string> args = internal::BatchArguments(spec, "b:", {}, -1);
  args[5] = "leaky_bucket";  // numkeys, protocol, now, max_borrow, n, bands
  const RedisReply bad = client().Eval(internal::lua::kBatchScript, args);
  EXPECT_TRUE(bad.is_error());
  EXPECT_TRUE(absl::StrContains(bad.str, "bands[0].algorithm")) << bad.str;
}

TEST_F(LuaBatchTest, LayoutErrorsFailTheWholeCall) {
  const LimitSpec spec = LimitSpec::Gcra(10, absl::Seconds(1));
  const std::vector<BatchItem> items = {Acquire("a", 1, 1),
                                        Release("b", 1, kT0, "l")};
  const std::vector<std::string> good =
      internal::BatchArguments(spec, "b:", items, kT0);
  // numkeys 3: {b:a}:b0 {b:b}:b0 {b:b}:r:l, then 1 now max_borrow n, 9 band
  // fields, m, then the items.
  ASSERT_EQ(good[0], "3");
  const size_t first_op = 1 + 3 + 4 + 9 + 1;
  ASSERT_EQ(good[first_op], "acquire");
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<Case> cases;
  std::vector<std::string> a = good;
  a[first_op] = "peek";
  cases.push_back(
      {a, "items[0].op is 'peek'; acquire, lease, charge or release"});
  a = good;
  a[0] = "2";
  a.erase(a.begin() + 3);
  cases.push_back({a, "expected 3 keys, got 2"});
  a = good;
  a.pop_back();
  cases.push_back(
      {a,
       "expected 21 arguments for 2 items (22 with empty_since_us), got 20"});
  a = good;
  a.push_back("-1");  // empty_since_us (none), then one too many
  a.push_back("1");
  cases.push_back(
      {a,
       "expected 21 arguments for 2 items (22 with empty_since_us), got 23"});
  a = good;
  a[4] = "2";
  cases.push_back({a, "unknown protocol version '2'"});
  a = good;
  a[first_op - 1] = "-1";
  cases.push_back({a, "item count is -1; it must be an integer in [0, "});
  for (const Case& c : cases) {
    const RedisReply r = client().Eval(internal::lua::kBatchScript, c.args);
    EXPECT_TRUE(r.is_error()) << c.error;
    EXPECT_TRUE(absl::StrContains(r.str, "ERR tokenlease batch: " + c.error))
        << r.str;
    for (const auto& x : internal::ParseBatchReply(r, items)) {
      EXPECT_EQ(x.status().code(), absl::StatusCode::kInternal);
    }
  }
  EXPECT_EQ(Run({"DBSIZE"}).integer, 0);
}

// ---------------------------------------------------------------------------
// ParseBatchReply on replies of the wrong shape (no server).

RedisReply Str(std::string s, RedisReply::Type type) {
  RedisReply r;
  r.type = type;
  r.str = std::move(s);
  return r;
}
using ::tokenlease::testing::IntegerReply;
// acquire.lua's 6 integers: granted 1, remaining 2, reset_after 4, now 5.
RedisReply SixInts() {
  return ::tokenlease::testing::AcquireReply(1, 2, 0, 4, 5);
}
RedisReply Array(std::vector<RedisReply> elements) {
  return ::tokenlease::testing::ArrayReply(std::move(elements));
}

TEST(ParseBatchReplyTest, WellFormed) {
  const std::vector<BatchItem> items = {Acquire("a", 1, 1), Charge("b", 4, 0),
                                        Release("c", 10, 0, "l"),
                                        Charge("d", 5, 1)};
  const Results r = internal::ParseBatchReply(
      Array({SixInts(), IntegerReply(3), IntegerReply(7), IntegerReply(-2)}),
      items);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0]->acquire.granted, 1);
  EXPECT_EQ(r[0]->acquire.now_us, 5);
  EXPECT_EQ(r[0]->acquire.reset_after_us, 4);
  // A charge's integer >= 0: all of it charged, that much left.
  EXPECT_EQ(r[1]->acquire.granted, 4);
  EXPECT_EQ(r[1]->acquire.remaining, 3);
  EXPECT_EQ(r[2]->released, 7);
  // Negative: the part the debt cap left uncharged, nothing left.
  EXPECT_EQ(r[3]->acquire.granted, 3);
  EXPECT_EQ(r[3]->acquire.remaining, 0);
  // A lone charge goes to acquire.lua: its 6 integers are taken as well.
  const absl::StatusOr<internal::AcquireResult> lone =
      internal::ParseAcquireItemReply(SixInts(), items[1]);
  ASSERT_TRUE(lone.ok()) << lone.status();
  EXPECT_EQ(lone->granted, 1);
  EXPECT_EQ(lone->remaining, 2);
}

TEST(ParseBatchReplyTest, MalformedRepliesAreErrorsNeverCrashes) {
  const std::vector<BatchItem> items = {Acquire("a", 1, 1),
                                        Release("c", 1, 0, "l")};
  using T = RedisReply::Type;
  const std::vector<RedisReply> whole = {
      RedisReply{},  // nil
      IntegerReply(3),
      Str("OK", T::kStatus),
      Str("x", T::kString),
      Array({}),
      Array({SixInts()}),
      Array({SixInts(), IntegerReply(1), IntegerReply(2)}),
  };
  for (const RedisReply& reply : whole) {
    const Results r = internal::ParseBatchReply(reply, items);
    ASSERT_EQ(r.size(), items.size()) << reply.DebugString();
    for (const auto& x : r) {
      EXPECT_EQ(x.status().code(), absl::StatusCode::kInternal)
          << reply.DebugString();
    }
  }
  // Elements of the wrong shape fail their item only.
  const std::vector<RedisReply> bad_acquire = {
      RedisReply{},
      IntegerReply(1),
      Array({IntegerReply(1), IntegerReply(2), IntegerReply(3), IntegerReply(4),
             IntegerReply(5)}),
      Array({IntegerReply(1), IntegerReply(2), IntegerReply(3), IntegerReply(4),
             IntegerReply(5), IntegerReply(6), IntegerReply(7)}),
      Array({IntegerReply(1), IntegerReply(2), IntegerReply(3),
             Str("4", T::kString), IntegerReply(5), IntegerReply(6)}),
      Array({IntegerReply(1), IntegerReply(2), IntegerReply(3), IntegerReply(4),
             IntegerReply(5), Array({})}),
      Str("6", T::kString),
  };
  for (const RedisReply& e : bad_acquire) {
    const Results r =
        internal::ParseBatchReply(Array({e, IntegerReply(0)}), items);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].status().code(), absl::StatusCode::kInternal)
        << e.DebugString();
    EXPECT_TRUE(r[1].ok() && r[1]->released == 0);
  }
  for (const RedisReply& e :
       {RedisReply{}, SixInts(), Str("1", T::kString), Str("OK", T::kStatus),
        Array({IntegerReply(1)})}) {
    const Results r = internal::ParseBatchReply(Array({SixInts(), e}), items);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_TRUE(r[0].ok());
    EXPECT_EQ(r[1].status().code(), absl::StatusCode::kInternal)
        << e.DebugString();
  }
}

// Numbers outside the protocol's ranges are never handed on: a negative
// grant or wait would give tokens or time away, a grant above what was
// wanted or a release above its amount would make tokens from nothing.
TEST(ParseBatchReplyTest, OutOfRangeNumbersAreErrors) {
  using ::tokenlease::testing::AcquireReply;
  const std::vector<BatchItem> items = {Acquire("a", 3, 1),
                                        Release("c", 5, 0, "l")};
  for (const RedisReply& e :
       {AcquireReply(-1, 2, 0, 4, 5), AcquireReply(1, -2, 0, 4, 5),
        AcquireReply(0, 2, -2, 4, 5), AcquireReply(1, 2, 0, -4, 5),
        AcquireReply(1, 2, 0, 4, 5, -1), AcquireReply(4, 2, 0, 4, 5)}) {
    const Results r =
        internal::ParseBatchReply(Array({e, IntegerReply(5)}), items);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].status().code(), absl::StatusCode::kInternal)
        << e.DebugString();
    EXPECT_TRUE(r[1].ok());
    EXPECT_FALSE(internal::ParseAcquireReply(e).ok() &&
                 internal::ParseAcquireReply(e)->granted < 0);
  }
  EXPECT_FALSE(internal::ParseAcquireReply(AcquireReply(-1, 2, 0, 4, 5)).ok());
  EXPECT_TRUE(internal::ParseAcquireReply(AcquireReply(0, 2, -1, 4, 5)).ok())
      << "retry_after -1 means never";
  for (const int64_t released : {-1, 6}) {
    const Results r = internal::ParseBatchReply(
        Array({AcquireReply(3, 2, 0, 4, 5), IntegerReply(released)}), items);
    EXPECT_TRUE(r[0].ok());
    EXPECT_EQ(r[1].status().code(), absl::StatusCode::kInternal) << released;
  }
  EXPECT_FALSE(internal::ParseReleaseReply(IntegerReply(-1)).ok());
  // A charge of 5: below -5 would charge a negative amount; as 6 integers,
  // more than 5 charged would be tokens from nothing.
  const BatchItem charge = Charge("b", 5, 0);
  for (const RedisReply& e : {IntegerReply(-6), AcquireReply(6, 0, 0, 4, 5),
                              Str("1", RedisReply::Type::kString)}) {
    EXPECT_EQ(internal::ParseAcquireItemReply(e, charge).status().code(),
              absl::StatusCode::kInternal)
        << e.DebugString();
  }
  EXPECT_EQ(internal::ParseAcquireItemReply(IntegerReply(-5), charge)->granted,
            0);
}

TEST(ParseBatchReplyTest, ErrorsMapAsTheSingleScripts) {
  const std::vector<BatchItem> items = {Acquire("a", 1, 1),
                                        Release("c", 1, 0, "l")};
  using T = RedisReply::Type;
  const RedisReply wrongtype =
      Str("WRONGTYPE tokenlease: key '{p:a}:b0' holds a list, not the string "
          "tokenlease keeps there; delete or rename it",
          T::kError);
  const RedisReply err = Str("ERR tokenlease batch: items[1]: oops", T::kError);
  Results r = internal::ParseBatchReply(Array({wrongtype, err}), items);
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(r[0].status().message(), "{p:a}:b0"));
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(r[1].status().message(), "oops"));
  // An error reply of the whole call: the same for every item.
  r = internal::ParseBatchReply(wrongtype, items);
  for (const auto& x : r) {
    EXPECT_EQ(x.status().code(), absl::StatusCode::kFailedPrecondition);
  }
  r = internal::ParseBatchReply(
      Str("BUSY Redis is busy running a script", T::kError), items);
  for (const auto& x : r) {
    EXPECT_EQ(x.status().code(), absl::StatusCode::kInternal);
  }
}

TEST(ParseBatchReplyTest, ArgumentsFollowTheProtocol) {
  const LimitSpec spec = testing::DailyAndWeeklyQuota();
  const std::vector<BatchItem> items = {
      Acquire("a", 2, 1, 5), Charge("b", 3, 4), Release("c", 6, 7, "id"),
      Lease("d", 8, 0, "g")};
  const std::vector<std::string> args =
      internal::BatchArguments(spec, "p:", items, 42);
  // clang-format off
  const std::vector<std::string> want = {
      "14",
      "{p:a}:b0", "{p:a}:b1", "{p:a}:b1:m",
      "{p:b}:b0", "{p:b}:b1", "{p:b}:b1:m",
      "{p:c}:b0", "{p:c}:b1", "{p:c}:b1:m", "{p:c}:r:id",
      "{p:d}:b0", "{p:d}:b1", "{p:d}:b1:m", "{p:d}:r:g",
      "1", "42", "0", "2",
      "fixed_window", "1", "86400000000", "0", "smooth", "aligned",
      "-28800000000", "0", "0",
      "sliding_log", "3", "604800000000", "0", "smooth", "aligned",
      "-28800000000", "86400000000", "0",
      "4",
      "acquire", "2", "1", "5",
      "charge", "3", "4",
      "release", "6", "7",
      "lease", "8", "0", "0"};
  // clang-format on
  EXPECT_EQ(args, want);
}

// ---------------------------------------------------------------------------
// HashSlot: the Redis Cluster key slot (vectors from the Cluster
// specification and from CLUSTER KEYSLOT of redis-server 7.0.15).

TEST(HashSlotTest, ClusterVectors) {
  EXPECT_EQ(internal::HashSlot("123456789"), 12739);  // CRC16 0x31C3
  EXPECT_EQ(internal::HashSlot(""), 0);
  EXPECT_EQ(internal::HashSlot("foo"), 12182);
  EXPECT_EQ(internal::HashSlot("bar"), 5061);
  EXPECT_EQ(internal::HashSlot("user1000"), 3443);
  EXPECT_EQ(internal::HashSlot("{user1000}.following"), 3443);
  EXPECT_EQ(internal::HashSlot("{user1000}.followers"), 3443);
  EXPECT_EQ(internal::HashSlot("foo{}{bar}"), 8363);     // empty tag: whole key
  EXPECT_EQ(internal::HashSlot("foo{{bar}}zap"), 4015);  // tag "{bar"
  EXPECT_EQ(internal::HashSlot("{bar"), 4015);
  EXPECT_EQ(internal::HashSlot("foo{bar}{zap}"), 5061);  // first tag: "bar"
  EXPECT_EQ(internal::HashSlot("bar}"), 6624);
  EXPECT_EQ(internal::HashSlot("a{b"), 13340);  // no closing brace
  EXPECT_EQ(internal::HashSlot("{}"), 15257);
  EXPECT_EQ(internal::HashSlot("{a}"), 15495);
}

TEST(HashSlotTest, EveryKeyOfALimitHasTheSlotOfItsTag) {
  const std::string tag = internal::LimitKeyTag("tokenlease:", "api");
  EXPECT_EQ(internal::HashSlot(tag), 11309);
  EXPECT_EQ(internal::HashSlot("tokenlease:api"), 11309);
  for (const std::string& key : internal::BandKeys(
           testing::DailyAndWeeklyQuota(), "tokenlease:", "api")) {
    EXPECT_EQ(internal::HashSlot(key), 11309) << key;
  }
  EXPECT_EQ(internal::HashSlot(tag + ":r:lease-1"), 11309);
}

}  // namespace
}  // namespace tokenlease
