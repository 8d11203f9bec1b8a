#include "local/fast_div.h"

#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace tokenlease::internal {
namespace {

// Every divisor class (powers of two, their neighbours, large, tiny) against
// hardware division on edge and random numerators.
TEST(FastDivisorTest, MatchesHardwareDivision) {
  std::mt19937_64 rng(20261121);
  std::vector<int64_t> divisors = {
      1, 2, 3, 5, 7, 10, 1000, 1000000000, INT64_MAX, INT64_MAX - 1};
  for (int s = 1; s < 63; ++s) {
    divisors.push_back(int64_t{1} << s);
    divisors.push_back((int64_t{1} << s) - 1);
    divisors.push_back((int64_t{1} << s) + 1);
  }
  for (int i = 0; i < 200; ++i) {
    divisors.push_back(static_cast<int64_t>(rng() >> (1 + rng() % 62)) | 1);
  }
  for (int64_t d : divisors) {
    const FastDivisor fd(d);
    std::vector<int64_t> ns = {0, 1, d - 1, d, INT64_MAX, INT64_MAX - 1};
    if (d < INT64_MAX) ns.push_back(d + 1);
    for (int i = 0; i < 300; ++i) {
      ns.push_back(static_cast<int64_t>(rng() >> (1 + rng() % 63)));
    }
    for (int64_t n : ns) {
      if (n < 0) continue;
      ASSERT_EQ(fd.Div(n), n / d) << "n=" << n << " d=" << d;
    }
  }
}

}  // namespace
}  // namespace tokenlease::internal
