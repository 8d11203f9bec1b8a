// The registry's inline name hash and name compare (src/base/key_hash.h,
// SameKeyName in src/base/sharded_registry.h): every length path of both,
// and a spread good enough for the registry's use of the bits (slot from
// the bottom, tag from bits 32-47, shard from the top).
#include "base/key_hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/sharded_registry.h"

namespace tokenlease::internal {
namespace {

// Names of every length from 0 to 200, each in several variants that differ
// in one byte (first, middle, last), so that each read path of the hash
// (1-3, 4-7, 8-16, 17-32, longer) and both lanes of the long loop see it.
std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (size_t n = 0; n <= 200; ++n) {
    std::string base(n, 'k');
    for (size_t i = 0; i < n; ++i) base[i] = static_cast<char>('a' + i % 26);
    names.push_back(base);
    for (size_t at : {size_t{0}, n / 2, n > 0 ? n - 1 : 0}) {
      if (at >= n) continue;
      std::string v = base;
      v[at] ^= 1;
      names.push_back(v);
    }
  }
  return names;
}

TEST(KeyHashTest, EqualNamesHashEquallyFromAnyBuffer) {
  for (const std::string& name : Names()) {
    const std::string copy =
        absl::StrCat("xx", name, "yy").substr(2, name.size());
    EXPECT_EQ(HashKeyName(name), HashKeyName(copy)) << name;
  }
}

TEST(KeyHashTest, DistinctNamesHashDistinctly) {
  std::set<std::string> unique;
  std::set<uint64_t> hashes;
  for (const std::string& name : Names()) {
    if (unique.insert(name).second) hashes.insert(HashKeyName(name));
  }
  // 64-bit hashes of a few hundred names: any collision is a bug.
  EXPECT_EQ(hashes.size(), unique.size());
  // A name and the same bytes with a trailing zero byte differ (the length
  // is hashed, not only the bytes).
  EXPECT_NE(HashKeyName(std::string_view("ab", 2)),
            HashKeyName(std::string_view("ab\0", 3)));
  EXPECT_NE(HashKeyName(std::string_view("abcdefgh")),
            HashKeyName(std::string_view("abcdefghabcdefgh")));
}

// Typical keys ("user:123"), counted into 256 buckets by each bit range the
// registry uses: every bucket gets between half and twice its share.
TEST(KeyHashTest, SpreadsSequentialKeysOverEveryBitRange) {
  constexpr int kKeys = 1 << 16;
  constexpr int kBuckets = 256;
  for (int shift : {0, 8, 32, 40, 56}) {
    for (const char* prefix : {"user:", "ratelimit:user:0000000000000", ""}) {
      std::vector<int> count(kBuckets, 0);
      for (int i = 0; i < kKeys; ++i) {
        ++count[(HashKeyName(absl::StrCat(prefix, i)) >> shift) &
                (kBuckets - 1)];
      }
      for (int b = 0; b < kBuckets; ++b) {
        EXPECT_GT(count[b], kKeys / kBuckets / 2)
            << "shift " << shift << " prefix '" << prefix << "' bucket " << b;
        EXPECT_LT(count[b], kKeys / kBuckets * 2)
            << "shift " << shift << " prefix '" << prefix << "' bucket " << b;
      }
    }
  }
}

TEST(SameKeyNameTest, FindsADifferenceAtEveryPositionOfEveryLength) {
  for (size_t n = 0; n <= 80; ++n) {
    std::string a(n, 'x');
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<char>('0' + i % 10);
    const std::string same = a;
    EXPECT_TRUE(SameKeyName(a, same)) << n;
    for (size_t at = 0; at < n; ++at) {
      std::string b = a;
      b[at] ^= 0x20;
      EXPECT_FALSE(SameKeyName(a, b)) << n << " at " << at;
    }
    EXPECT_FALSE(SameKeyName(a, a + "x")) << n;
  }
}

}  // namespace
}  // namespace tokenlease::internal
