// The key registry on its own (src/base/sharded_registry.h): lookups that
// take no lock racing with inserts, table growth, retirement and frees.
// Each entry counts the "decisions" made on it with a compare-and-swap that
// fails once the entry is marked dead, as the limiters' cells do; a
// decision that meets a dead entry looks the key up again. The tests check
// that no decision is lost or counted twice, that no pinned entry is ever
// freed, and (under AddressSanitizer and ThreadSanitizer) that nothing is
// used after it was freed.
#include "base/sharded_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/epoch.h"

namespace tokenlease::internal {
namespace {

constexpr int64_t kDead = -1;

struct TestEntry {
  explicit TestEntry(std::string_view n) : key(n) {}
  std::string_view name() const { return key; }
  std::atomic<uint32_t> pins{0};
  std::atomic<int64_t> count{0};  // decisions; kDead once retired
  const std::string key;
};

using Registry = ShardedRegistry<TestEntry>;

// Retires entries whose count is even (an arbitrary "idle" rule that
// changes as decisions happen), and keeps the books.
class Owner final : public Registry::Owner {
 public:
  TestEntry* NewEntry(std::string_view name, int64_t) override {
    created.fetch_add(1);
    return new TestEntry(name);
  }
  void DeleteEntry(TestEntry* e) override {
    EXPECT_EQ(e->pins.load(), 0u) << "a pinned entry was freed";
    const int64_t c = e->count.load();
    // A retired entry keeps the count it had when it was marked.
    std::lock_guard<std::mutex> lock(mu);
    counted +=
        retired_counts.count(e) ? retired_counts[e] : std::max<int64_t>(c, 0);
    retired_counts.erase(e);
    deleted.fetch_add(1);
    delete e;
  }
  bool TryRetire(TestEntry* e, int64_t) override {
    int64_t c = e->count.load();
    if (c < 0 || c % 2 != 0) return false;
    if (!e->count.compare_exchange_strong(c, kDead)) return false;
    std::lock_guard<std::mutex> lock(mu);
    retired_counts[e] = c;
    return true;
  }
  void Revive(TestEntry* e) override {
    std::lock_guard<std::mutex> lock(mu);
    e->count.store(retired_counts[e]);
    retired_counts.erase(e);
    revived.fetch_add(1);
  }

  std::atomic<int64_t> created{0}, deleted{0}, revived{0};
  std::mutex mu;
  std::map<TestEntry*, int64_t> retired_counts;
  int64_t counted = 0;  // decisions on freed entries
};

// One decision on `key`: +1 on its entry, looking it up again if dead.
void Decide(Registry& r, const std::string& key) {
  for (;;) {
    const bool done = r.With(key, 0, [](TestEntry* e) {
      EXPECT_NE(e, nullptr);
      int64_t c = e->count.load();
      while (c >= 0) {
        if (e->count.compare_exchange_weak(c, c + 1)) return true;
      }
      return false;  // retired: look again
    });
    if (done) return;
  }
}

int64_t LiveCount(Registry& r) {
  int64_t sum = 0;
  r.ForEach(
      [&](TestEntry* e) { sum += std::max<int64_t>(e->count.load(), 0); });
  return sum;
}

TEST(ShardedRegistryTest, FindsWhatItInsertedAcrossGrowth) {
  Owner owner;
  Registry r(&owner, 1 << 20, 4, Registry::Growth::kRefusesWhenFull);
  for (int i = 0; i < 10000; ++i) Decide(r, absl::StrCat("k", i));
  EXPECT_EQ(r.size(), 10000);
  for (int i = 0; i < 10000; ++i) {
    const std::string key = absl::StrCat("k", i);
    EXPECT_TRUE(r.Find(key, [&](TestEntry* e) {
      return e != nullptr && e->name() == key && e->count.load() == 1;
    })) << key;
  }
  EXPECT_FALSE(r.Find("absent", [](TestEntry* e) { return e != nullptr; }));
  int seen = 0;
  r.ForEach([&](TestEntry*) { ++seen; });
  EXPECT_EQ(seen, 10000);
}

TEST(ShardedRegistryTest, RetiredKeysComeBackAsNewEntriesAndAreFreed) {
  Owner owner;
  Registry r(&owner, 1 << 20, 1, Registry::Growth::kRefusesWhenFull);
  for (int i = 0; i < 100; ++i) Decide(r, absl::StrCat("k", i));  // odd
  EXPECT_EQ(r.Reclaim(0), 0);
  for (int i = 0; i < 50; ++i) Decide(r, absl::StrCat("k", i));  // even
  EXPECT_EQ(r.Reclaim(0), 50);
  EXPECT_EQ(r.size(), 50);
  // Freed after the grace period (nobody reads meanwhile).
  for (int i = 0; i < 4 && owner.deleted.load() < 50; ++i) r.FreeRetired();
  EXPECT_EQ(owner.deleted.load(), 50);
  Decide(r, "k0");  // a new entry
  EXPECT_EQ(owner.created.load(), 101);
  EXPECT_EQ(r.Find("k0", [](TestEntry* e) { return e->count.load(); }), 1);
}

// The reviewer's probe of the old registry: the bound held by no more than
// max_keys live entries, with inserts on many shards at once.
TEST(ShardedRegistryTest, MaxKeysIsExactUnderConcurrentInserts) {
  Owner owner;
  Registry r(&owner, 4, 64, Registry::Growth::kReclaims);
  std::atomic<int64_t> peak{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        // A new key each time; entries stay retirable (count 0), so keys
        // churn through the bound.
        r.With(absl::StrCat(t, ":", i), 0, [](TestEntry*) { return 0; });
        const int64_t size = r.size();
        int64_t p = peak.load();
        while (size > p && !peak.compare_exchange_weak(p, size)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 4);
}

// Readers decide by name on a small key set while a reclaimer retires and
// frees entries as fast as it can: every decision is counted exactly once
// (on a live entry, or on a retired one before it was marked), and nothing
// is used after it is freed (ASan, TSan).
TEST(ShardedRegistryTest, DecisionsRacingRetirementAreNeitherLostNorDoubled) {
  Owner owner;
  Registry r(&owner, 1 << 20, 4, Registry::Growth::kRefusesWhenFull);
  constexpr int kReaders = 3;
  constexpr int kKeys = 64;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> decisions{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      uint64_t x = 88172645463325252ull + t;
      int64_t mine = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        Decide(r, absl::StrCat("key", x % kKeys));
        ++mine;
      }
      decisions.fetch_add(mine);
    });
  }
  std::thread reclaimer([&] {
    while (!stop.load(std::memory_order_relaxed)) r.Reclaim(0);
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < end && decisions.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_until(end);
  stop.store(true);
  for (auto& t : readers) t.join();
  reclaimer.join();
  for (int i = 0; i < 4; ++i) r.FreeRetired();
  int64_t total;
  {
    std::lock_guard<std::mutex> lock(owner.mu);
    int64_t pending = 0;
    for (auto& [e, c] : owner.retired_counts) pending += c;
    total = owner.counted + pending;
  }
  total += LiveCount(r);
  EXPECT_GT(decisions.load(), 1000);
  EXPECT_GT(owner.deleted.load(), 0) << "nothing was retired and freed";
  EXPECT_EQ(total, decisions.load());
}

// Handles pin entries during lookups (as Limiter::Resolve does: pin, then
// check the dead mark) while the reclaimer retires: a pinned entry is never
// freed (DeleteEntry checks), a pin that lost the race to a retirement is
// given back, and one that won sees its entry revived.
TEST(ShardedRegistryTest, PinnedEntriesAreNeverFreed) {
  Owner owner;
  Registry r(&owner, 1 << 20, 1, Registry::Growth::kRefusesWhenFull);
  std::atomic<bool> stop{false};
  std::vector<std::thread> pinners;
  for (int t = 0; t < 2; ++t) {
    pinners.emplace_back([&, t] {
      int n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string key = absl::StrCat("p", (n++ + t) % 8);
        TestEntry* pinned = nullptr;
        while (pinned == nullptr) {
          pinned = r.With(key, 0, [](TestEntry* e) -> TestEntry* {
            e->pins.fetch_add(1, std::memory_order_seq_cst);
            if (e->count.load(std::memory_order_seq_cst) == kDead) {
              e->pins.fetch_sub(1, std::memory_order_release);
              return nullptr;
            }
            return e;
          });
        }
        // Decide through it outside any lookup, as a handle does: a pinned
        // entry may be marked dead for an instant (the registry marks, then
        // sees the pin and revives it), so a handle waits for the revival.
        EXPECT_EQ(pinned->name(), key);
        const auto give_up =
            std::chrono::steady_clock::now() + std::chrono::seconds(10);
        bool counted = false;
        while (!counted && std::chrono::steady_clock::now() < give_up) {
          int64_t c = pinned->count.load();
          counted = c >= 0 && pinned->count.compare_exchange_weak(c, c + 1);
        }
        EXPECT_TRUE(counted) << "a pinned entry stayed retired";
        pinned->pins.fetch_sub(1, std::memory_order_release);
      }
    });
  }
  std::thread reclaimer([&] {
    while (!stop.load(std::memory_order_relaxed)) r.Reclaim(0);
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  stop.store(true);
  for (auto& t : pinners) t.join();
  reclaimer.join();
  EXPECT_GT(owner.deleted.load(), 0);
}

// A background thread grows a table once it is 40 % full (GrowAhead), so
// that inserts (which grow only past 60 %) find room.
TEST(ShardedRegistryTest, GrowAheadGrowsATableFortyPercentFull) {
  Owner owner;
  Registry r(&owner, 1 << 20, 1, Registry::Growth::kRefusesWhenFull);
  for (int i = 0; i < 6; ++i) Decide(r, absl::StrCat("k", i));
  EXPECT_EQ(r.GrowAhead(), 0) << "6 of 16 slots is below 40 %";
  Decide(r, "k6");
  EXPECT_EQ(r.GrowAhead(), 1) << "7 of 16 slots is above 40 %";
  EXPECT_EQ(r.GrowAhead(), 0) << "7 of 32 slots is below 40 %";
  for (int i = 0; i < 7; ++i) {
    const std::string key = absl::StrCat("k", i);
    EXPECT_EQ(r.Find(key, [](TestEntry* e) { return e ? e->count.load() : 0; }),
              1)
        << key;
  }
}

// Inserts on two threads race a third that grows tables ahead of them and
// a fourth that retires and frees entries (keys with an even count: the
// "churn" keys, decided twice): no key is lost or created twice (a key
// missing from a grown table would be created again by its next decision),
// every decision is counted once, and nothing is used after it is freed
// (ASan, TSan).
TEST(ShardedRegistryTest, GrowAheadRacingInsertsAndRetirementLosesNoKey) {
  Owner owner;
  Registry r(&owner, 1 << 20, 4, Registry::Growth::kRefusesWhenFull);
  constexpr int kPerThread = 20000;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> grown{0};
  std::thread grower([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      grown.fetch_add(r.GrowAhead());
      r.FreeRetiredTables();
    }
  });
  std::thread reclaimer([&] {
    while (!stop.load(std::memory_order_relaxed)) r.Reclaim(0);
  });
  std::vector<std::thread> inserters;
  for (int t = 0; t < 2; ++t) {
    inserters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Decide(r, absl::StrCat(t, ":", i));  // stays (count 1)
        const std::string churn = absl::StrCat("churn", t, ":", i % 500);
        Decide(r, churn);
        Decide(r, churn);
      }
    });
  }
  for (auto& t : inserters) t.join();
  stop.store(true);
  grower.join();
  reclaimer.join();
  EXPECT_GT(grown.load(), 0) << "the grower never grew a table";
  // Each kept key once more: found, not created again.
  const int64_t created = owner.created.load();
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < kPerThread; ++i) Decide(r, absl::StrCat(t, ":", i));
  }
  EXPECT_EQ(owner.created.load(), created) << "a kept key was lost";
  for (int i = 0; i < 4; ++i) r.FreeRetired();
  int64_t total = LiveCount(r);
  {
    std::lock_guard<std::mutex> lock(owner.mu);
    total += owner.counted;
    for (auto& [e, c] : owner.retired_counts) total += c;
  }
  EXPECT_EQ(total, 2 * kPerThread * 4) << "a decision was lost or doubled";
}

// The inline name compare, on every length around its word boundaries and a
// difference at every position.
TEST(ShardedRegistryTest, SameKeyNameComparesEveryByte) {
  for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 49, 100}) {
    const std::string a(n, 'x');
    EXPECT_TRUE(SameKeyName(a, std::string(n, 'x'))) << n;
    EXPECT_FALSE(SameKeyName(a, std::string(n + 1, 'x'))) << n;
    for (size_t i = 0; i < n; ++i) {
      std::string b = a;
      b[i] = 'y';
      EXPECT_FALSE(SameKeyName(a, b)) << n << " differ at " << i;
    }
  }
}

}  // namespace
}  // namespace tokenlease::internal
