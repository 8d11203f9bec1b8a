// The arrivals of the seed scenarios (shared/reference/seed-algorithms.md)
// and the counts the scenario tests check, in any time unit: replayed on the
// local engine (scenario_test.cc, ns) and through the scripts
// (redis/lua_script_test.cc, us).
#ifndef TOKENLEASE_TESTS_TESTING_SCENARIOS_H_
#define TOKENLEASE_TESTS_TESTING_SCENARIOS_H_

#include <cstdint>
#include <vector>

namespace tokenlease::testing {

// Seconds 1..5 of the seed's double burst (1000 per 3 s): 10, 10, 980, 900
// and 100 arrivals spread evenly in each second, from `t0`; `second` is one
// second in the caller's unit.
std::vector<int64_t> DoubleBurstArrivals(int64_t t0, int64_t second);

// Largest number of `times` inside any half-open span of `span`.
int64_t MaxInAnySpan(std::vector<int64_t> times, int64_t span);

// Number of `times` in [from, to).
int64_t CountIn(const std::vector<int64_t>& times, int64_t from, int64_t to);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_SCENARIOS_H_
