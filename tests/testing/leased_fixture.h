// Leased limiters on a test's redis-server, and what Redis says is left of a
// key: shared by the leased-mode tests (leased_limiter_test.cc,
// hot_key_test.cc).
#ifndef TOKENLEASE_TESTS_TESTING_LEASED_FIXTURE_H_
#define TOKENLEASE_TESTS_TESTING_LEASED_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease::testing {

// `Fixture` is RedisTest, or PrivateRedisTest for tests that freeze or
// restart their server (testing/redis_test.h).
template <typename Fixture>
class LeasedFixture : public Fixture {
 protected:
  // A leased limiter on the fixture's server under its key prefix; null
  // (and a test failure) if Create refuses.
  std::unique_ptr<LeasedLimiter> Make(const LimitSpec& spec,
                                      const LeaseOptions& lease,
                                      Clock* clock = nullptr) {
    LeasedLimiterOptions options;
    options.connection = this->NewConnection();
    options.key_prefix = this->prefix();
    options.lease = lease;
    options.clock = clock;
    auto limiter = LeasedLimiter::Create(spec, options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // The shared limit's remaining tokens as Redis sees them (a cost-0 direct
  // call charges nothing; 0 when the key is in debt, -1 and a test failure
  // when Redis did not answer).
  int64_t RedisRemaining(const LimitSpec& spec, const std::string& key) {
    return RedisRemaining(spec, std::vector<std::string>{key})[0];
  }
  std::vector<int64_t> RedisRemaining(const LimitSpec& spec,
                                      const std::vector<std::string>& keys) {
    DirectLimiterOptions options;
    options.connection = this->NewConnection();
    options.key_prefix = this->prefix();
    auto direct = DirectLimiter::Create(spec, options);
    EXPECT_TRUE(direct.ok()) << direct.status();
    std::vector<int64_t> remaining;
    for (const std::string& key : keys) {
      const Decision d = direct.ok()
                             ? (*direct)->TryAcquire(key, 0, absl::Seconds(5))
                             : Decision{};
      EXPECT_EQ(d.source, DecisionSource::kDirect);
      remaining.push_back(d.source == DecisionSource::kDirect ? d.remaining
                                                              : -1);
    }
    return remaining;
  }
};

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_LEASED_FIXTURE_H_
