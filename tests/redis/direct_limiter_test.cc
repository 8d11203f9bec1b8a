// Direct mode end to end: the public API, a real redis-server, real faults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/notification.h"
#include "testing/redis_test.h"
#include "testing/specs.h"
#include "tokenlease/direct.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::tokenlease::testing::AnchoredAt;
using ::tokenlease::testing::LogLines;

constexpr absl::Duration kWaitBound = absl::Seconds(20);

// An aligned window spec whose windows start now (see AnchoredAt).
LimitSpec Anchored(LimitSpec spec) {
  return AnchoredAt(std::move(spec), absl::Now());
}

// Direct limiters on one connection to the test's server (the shared one,
// or a private one for the fault tests), whose log lines the test reads.
template <typename ServerFixture>
class DirectFixture : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    if (this->HasFatalFailure()) return;
    RedisOptions redis;
    redis.log = log_->Sink();
    connection_ = testing::ConnectFast(this->url(), redis);
    ASSERT_NE(connection_, nullptr);
  }

  std::unique_ptr<DirectLimiter> Make(LimitSpec spec) {
    DirectLimiterOptions options;
    options.connection = connection_;
    options.key_prefix = this->prefix();
    options.timeout = absl::Seconds(5);
    auto limiter = DirectLimiter::Create(std::move(spec), options);
    EXPECT_TRUE(limiter.ok()) << limiter.status();
    return limiter.ok() ? *std::move(limiter) : nullptr;
  }

  // Keys of the server matching `pattern`.
  std::vector<std::string> Keys(const std::string& pattern) {
    auto out = this->server().Command({"KEYS", pattern});
    if (!out.ok() || *out == "[]") return {};
    std::string list = out->substr(1, out->size() - 2);
    return absl::StrSplit(list, ", ");
  }

  // Outlives connection_ (declared first), which logs into it.
  std::unique_ptr<LogLines> log_ = std::make_unique<LogLines>();
  std::shared_ptr<RedisConnection> connection_;
};

// What a call that got no decision returns by default (kFailClosed):
// denied, with the call's deadline as retry_after.
void ExpectFailClosed(const Decision& d, absl::Duration deadline) {
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kFailClosed);
  EXPECT_EQ(d.retry_after(), deadline);
}

// Bad input: denied before any call to Redis.
void ExpectInvalidArgument(const Decision& d) {
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kInvalidArgument);
  EXPECT_EQ(d.retry_after_ns, kNever);
}

using DirectLimiterTest = DirectFixture<testing::RedisTest>;
// Tests that pause or kill their server.
using DirectLimiterFaultTest = DirectFixture<testing::PrivateRedisTest>;

TEST_F(DirectLimiterTest, ExactCountAndDenialFields) {
  auto limiter = Make(Anchored(LimitSpec::FixedWindow(5, absl::Hours(1))));
  for (int i = 0; i < 5; ++i) {
    const Decision d = limiter->TryAcquire("user:1");
    EXPECT_TRUE(d.allowed) << i;
    ASSERT_EQ(d.source, DecisionSource::kDirect);
    EXPECT_EQ(d.remaining, 4 - i);
  }
  Decision d = limiter->TryAcquire("user:1");
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_FALSE(d.allowed);
  EXPECT_GT(d.retry_after_ns, 0);
  EXPECT_LE(d.retry_after_ns, absl::ToInt64Nanoseconds(absl::Hours(1)));
  EXPECT_EQ(d.reset_after_ns, d.retry_after_ns);
  // Another key is independent.
  d = limiter->TryAcquire("user:2", 5);
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
  // A cost above the limit can never be admitted.
  d = limiter->TryAcquire("user:3", 6);
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, kNever);
  // Every decision was Redis's, one call each, and nothing failed.
  const SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.mode, LimiterMode::kDirect);
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kDirect), 6u);
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kDirect), 2u);
  EXPECT_EQ(s.decisions.Total(), 8u);
  EXPECT_EQ(s.redis_calls, 8u);
  EXPECT_EQ(s.redis_errors, 0u);
  EXPECT_EQ(s.key_errors, 0u);
  EXPECT_THAT(log_->NoDecision(), SizeIs(0));
}

TEST_F(DirectLimiterTest, TwoProcessesWorthOfLimitersShareOneLimit) {
  // Two limiters on two connections (as two processes would be) with the
  // same prefix, key and spec share one limit.
  auto other_conn = NewConnection();
  ASSERT_NE(other_conn, nullptr);
  auto a = Make(LimitSpec::TokenBucket(10, absl::Hours(1)));
  DirectLimiterOptions options;
  options.connection = other_conn;
  options.key_prefix = prefix();
  auto b = DirectLimiter::Create(LimitSpec::TokenBucket(10, absl::Hours(1)),
                                 options);
  ASSERT_TRUE(b.ok());
  int admitted = 0;
  for (int i = 0; i < 15; ++i) {
    const Decision d = (i % 2 ? a : *b)->TryAcquire("shared");
    ASSERT_EQ(d.source, DecisionSource::kDirect) << i;
    admitted += d.allowed;
  }
  EXPECT_EQ(admitted, 10);
}

TEST_F(DirectLimiterTest, ManyConcurrentAsyncCallersAdmitExactly) {
  auto limiter = Make(LimitSpec::SlidingWindowLog(10, absl::Hours(1)));
  constexpr int kCalls = 64;
  std::atomic<int> allowed{0}, denied{0}, failed{0};
  internal::Notification all;
  for (int i = 0; i < kCalls; ++i) {
    limiter->TryAcquireAsync("hot", 1, [&](Decision d) {
      if (d.source != DecisionSource::kDirect) {
        failed.fetch_add(1);  // not Redis's decision
      } else {
        (d.allowed ? allowed : denied).fetch_add(1);
      }
      if (allowed.load() + denied.load() + failed.load() == kCalls) {
        all.Notify();
      }
    });
  }
  ASSERT_TRUE(all.WaitForNotificationWithTimeout(kWaitBound));
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(allowed.load(), 10);
  EXPECT_EQ(denied.load(), kCalls - 10);
  // Pipelined: far fewer writes than calls are not observable here, but
  // every call was one command.
  EXPECT_GE(connection_->stats().commands_sent, static_cast<uint64_t>(kCalls));
  EXPECT_EQ(limiter->stats().redis_errors, 0u);
}

TEST_F(DirectLimiterTest, ManyThreadsBlockingAdmitExactly) {
  auto limiter = Make(LimitSpec::Gcra(20, absl::Hours(1)));
  std::atomic<int> allowed{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        const Decision d = limiter->TryAcquire("k");
        if (d.source != DecisionSource::kDirect) {
          failed.fetch_add(1);  // not Redis's decision
        } else if (d.allowed) {
          allowed.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(allowed.load(), 20);
}

TEST_F(DirectLimiterTest, ReserveBorrowsAndReturnsTheWait) {
  LimitSpec spec = LimitSpec::TokenBucket(1, absl::Seconds(10));
  spec.max_borrow = absl::Minutes(1);
  auto limiter = Make(spec);
  Reservation r = limiter->Reserve("b", 1, absl::ZeroDuration());
  ASSERT_EQ(r.decision.source, DecisionSource::kDirect);
  EXPECT_TRUE(r.granted);
  EXPECT_EQ(r.wait_ns, 0);
  r = limiter->Reserve("b", 1, absl::Seconds(30));
  ASSERT_EQ(r.decision.source, DecisionSource::kDirect);
  EXPECT_TRUE(r.granted);
  EXPECT_GT(r.wait(), absl::Seconds(9));
  EXPECT_LE(r.wait(), absl::Seconds(10));
  // Not beyond max_wait: nothing is taken.
  r = limiter->Reserve("b", 1, absl::Seconds(5));
  ASSERT_EQ(r.decision.source, DecisionSource::kDirect);
  EXPECT_FALSE(r.granted);
  EXPECT_EQ(r.wait_ns, 0);
}

TEST_F(DirectLimiterTest, WrongTypeKeyIsAClearErrorNotACrash) {
  auto limiter = Make(LimitSpec::TokenBucket(5, absl::Minutes(1)));
  ASSERT_EQ(limiter->TryAcquire("victim").source, DecisionSource::kDirect);
  std::vector<std::string> keys = Keys("*victim*");
  ASSERT_FALSE(keys.empty());
  for (const auto& k : keys) {
    ASSERT_TRUE(server().Command({"DEL", k}).ok());
    ASSERT_TRUE(server().Command({"LPUSH", k, "x"}).ok());
  }
  // The failure mode's decision (kFailClosed by default), an error for
  // the key counted, and the error logged, naming the key.
  Decision d = limiter->TryAcquire("victim");
  ExpectFailClosed(d, absl::Seconds(5));  // options.timeout
  SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.redis_errors, 1u);
  EXPECT_EQ(s.key_errors, 1u);
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kFailClosed), 1u);
  const std::vector<std::string> logged = log_->NoDecision();
  ASSERT_THAT(logged, SizeIs(1));
  EXPECT_THAT(logged[0], HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(logged[0], HasSubstr("victim"));
  EXPECT_THAT(logged[0], HasSubstr("fail_closed decides meanwhile"));
  // The limiter and its connection still work for other keys.
  d = limiter->TryAcquire("fine");
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
  s = limiter->stats();
  EXPECT_EQ(s.redis_errors, 1u);
  EXPECT_EQ(s.key_errors, 1u);
}

TEST_F(DirectLimiterTest, SurvivesScriptFlush) {
  auto limiter = Make(Anchored(LimitSpec::FixedWindow(3, absl::Hours(1))));
  ASSERT_EQ(limiter->TryAcquire("f").source, DecisionSource::kDirect);
  ASSERT_TRUE(server().Command({"SCRIPT", "FLUSH"}).ok());
  const Decision d = limiter->TryAcquire("f");
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 1);
  EXPECT_GE(connection_->stats().script_reloads, 1u);
  EXPECT_EQ(limiter->stats().redis_errors, 0u);
}

TEST_F(DirectLimiterFaultTest, FrozenServerFailsByTheDeadlineThenRecovers) {
  auto limiter = Make(LimitSpec::FixedWindow(100, absl::Hours(1)));
  ASSERT_EQ(limiter->TryAcquire("z").source, DecisionSource::kDirect);
  server().Pause();
  const auto start = std::chrono::steady_clock::now();
  Decision d = limiter->TryAcquire("z", 1, absl::Milliseconds(150));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // No answer by the deadline: kFailClosed's decision, the error counted
  // (not one for the key) and logged.
  ExpectFailClosed(d, absl::Milliseconds(150));
  SharedLimitStats s = limiter->stats();
  EXPECT_EQ(s.redis_errors, 1u);
  EXPECT_EQ(s.key_errors, 0u);
  const std::vector<std::string> logged = log_->NoDecision();
  ASSERT_THAT(logged, SizeIs(1));
  EXPECT_THAT(logged[0], HasSubstr("DEADLINE_EXCEEDED"));
  server().Resume();
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    d = limiter->TryAcquire("z", 1, absl::Milliseconds(300));
    if (d.source != DecisionSource::kFailClosed) break;
  }
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
}

TEST_F(DirectLimiterFaultTest, KilledServerFailsThenRecoversAfterRestart) {
  auto limiter = Make(LimitSpec::FixedWindow(100, absl::Hours(1)));
  ASSERT_EQ(limiter->TryAcquire("r").source, DecisionSource::kDirect);
  server().Kill();
  Decision d = limiter->TryAcquire("r", 1, absl::Milliseconds(150));
  ExpectFailClosed(d, absl::Milliseconds(150));
  EXPECT_EQ(limiter->stats().redis_errors, 1u);
  EXPECT_EQ(limiter->stats().key_errors, 0u);
  EXPECT_THAT(log_->NoDecision(), SizeIs(1));
  ASSERT_TRUE(server().Restart().ok());
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    d = limiter->TryAcquire("r", 1, absl::Milliseconds(300));
    if (d.source != DecisionSource::kFailClosed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  // The restarted server has no persistence: the count starts over.
  EXPECT_EQ(d.remaining, 99);
  EXPECT_EQ(limiter->stats().key_errors, 0u);
}

// DirectLimiterOptions::failure_mode: a call that gets no decision returns
// the mode's decision (kFailClosed when the option is left alone). Against
// a killed server, 12 calls for a limit of 40 an hour shared by 4
// instances (a local share of 10).
struct DirectModeCase {
  const char* name;
  std::optional<FailureMode> mode;  // nullopt: the default
};

class DirectFailureModeTest
    : public DirectLimiterFaultTest,
      public ::testing::WithParamInterface<DirectModeCase> {};

TEST_P(DirectFailureModeTest, ACallWithoutRedisGetsTheModesDecision) {
  const DirectModeCase c = GetParam();
  DirectLimiterOptions options;
  options.connection = connection_;
  options.key_prefix = prefix();
  if (c.mode.has_value()) options.failure_mode = *c.mode;
  const FailureMode mode = c.mode.value_or(FailureMode::kFailClosed);
  EXPECT_EQ(options.failure_mode, mode);
  options.fallback_instances = 4;
  auto limiter = DirectLimiter::Create(
      LimitSpec::TokenBucket(40, absl::Hours(1)), options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  ASSERT_EQ((*limiter)->TryAcquire("m", 1, kWaitBound).source,
            DecisionSource::kDirect);
  server().Kill();
  int admitted = 0;
  for (int i = 0; i < 12; ++i) {
    const Decision d = (*limiter)->TryAcquire("m", 1, absl::Milliseconds(100));
    admitted += d.allowed;
    EXPECT_EQ(d.source, testing::ModeSource(mode));
    if (mode == FailureMode::kFailClosed) {
      EXPECT_FALSE(d.allowed);
      EXPECT_EQ(d.retry_after_ns, 100'000'000);  // the call's deadline
    }
  }
  SharedLimitStats s = (*limiter)->stats();
  EXPECT_EQ(s.redis_errors, 12u);
  EXPECT_EQ(s.key_errors, 0u);
  EXPECT_EQ(s.decisions.Admitted(DecisionSource::kDirect), 1u);
  EXPECT_EQ(s.decisions.Total(), 13u);
  switch (mode) {
    case FailureMode::kFailClosed:
      EXPECT_EQ(admitted, 0);
      EXPECT_EQ(s.decisions.Denied(DecisionSource::kFailClosed), 12u);
      break;
    case FailureMode::kFailOpen:
      EXPECT_EQ(admitted, 12);
      EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFailOpen), 12u);
      break;
    case FailureMode::kFailLocal:
      EXPECT_EQ(admitted, 10);  // the share, whole, then denials
      EXPECT_EQ(s.decisions.Admitted(DecisionSource::kFallback), 10u);
      EXPECT_EQ(s.decisions.Denied(DecisionSource::kFallback), 2u);
      break;
  }
  // The errors were logged, and the line names the mode deciding meanwhile.
  const std::vector<std::string> logged = log_->NoDecision();
  ASSERT_THAT(logged, Not(IsEmpty()));
  EXPECT_THAT(logged[0], HasSubstr(absl::StrCat(FailureModeName(mode),
                                                " decides meanwhile")));
  // Invalid input is denied as such, whatever the mode: no failure
  // mode's decision, no call, no error counted.
  ExpectInvalidArgument((*limiter)->TryAcquire("m", -1));
  s = (*limiter)->stats();
  EXPECT_EQ(s.redis_errors, 12u);
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kInvalidArgument), 1u);
  EXPECT_EQ(s.decisions.Total(), 14u);
  // Back to Redis once it answers (restarted empty: a full bucket).
  ASSERT_TRUE(server().Restart().ok());
  Decision d;
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    d = (*limiter)->TryAcquire("m", 1, absl::Milliseconds(300));
    if (d.source == DecisionSource::kDirect && d.allowed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
  // A full bucket less this call, and less any earlier call that timed out
  // after Redis ran it (slow sanitizer builds).
  EXPECT_LE(d.remaining, 39);
  EXPECT_GE(d.remaining, 30);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, DirectFailureModeTest,
    ::testing::Values(DirectModeCase{"default", std::nullopt},
                      DirectModeCase{"fail_closed", FailureMode::kFailClosed},
                      DirectModeCase{"fail_open", FailureMode::kFailOpen},
                      DirectModeCase{"fail_local", FailureMode::kFailLocal}),
    [](const ::testing::TestParamInfo<DirectModeCase>& info) {
      return std::string(info.param.name);
    });

// A script error for the key (here a wrong type) is a failure too: with a
// mode, the key is decided by it; the error is counted.
TEST_F(DirectLimiterTest, AWrongTypeKeyIsDecidedByTheFailureMode) {
  DirectLimiterOptions options;
  options.connection = connection_;
  options.key_prefix = prefix();
  options.failure_mode = FailureMode::kFailLocal;
  options.max_key_bytes = 4096;
  auto limiter =
      DirectLimiter::Create(LimitSpec::TokenBucket(3, absl::Hours(1)), options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  client().Run({"RPUSH", absl::StrCat("{", prefix(), "w}:b0"), "x"});
  int admitted = 0;
  for (int i = 0; i < 5; ++i) {
    const Decision d = (*limiter)->TryAcquire("w", 1, kWaitBound);
    EXPECT_EQ(d.source, DecisionSource::kFallback);
    admitted += d.allowed;
  }
  EXPECT_EQ(admitted, 3);
  EXPECT_EQ((*limiter)->stats().redis_errors, 5u);
  EXPECT_EQ((*limiter)->stats().key_errors, 5u);
  // Logged once (the same error again within a minute is not), naming the
  // key and the mode.
  const std::vector<std::string> logged = log_->NoDecision();
  ASSERT_THAT(logged, SizeIs(1));
  EXPECT_THAT(logged[0], HasSubstr(absl::StrCat(prefix(), "w")));
  EXPECT_THAT(logged[0], HasSubstr("fail_local decides meanwhile"));
  // A key longer than the local engine's default (1024 bytes) but within
  // max_key_bytes is decided by the share too, not refused.
  const std::string long_key(2000, 'k');
  client().Run({"RPUSH", absl::StrCat("{", prefix(), long_key, "}:b0"), "x"});
  const Decision d = (*limiter)->TryAcquire(long_key, 1, kWaitBound);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.source, DecisionSource::kFallback);
  EXPECT_EQ((*limiter)->stats().key_errors, 6u);
}

// Two services with different specs for one limit name (the spec stamp,
// docs/operations.md): another rate shares what was consumed; another
// algorithm is an error naming the key, with nothing written.
TEST_F(DirectLimiterTest, LimitersWithDifferentSpecsForOneName) {
  auto ten = Make(LimitSpec::TokenBucket(10, absl::Hours(1)));
  auto twenty = Make(LimitSpec::TokenBucket(20, absl::Hours(1)));
  auto window = Make(LimitSpec::FixedWindow(20, absl::Hours(1)));
  ASSERT_TRUE(ten && twenty && window);
  Decision d = ten->TryAcquire("n", 10);
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  ASSERT_TRUE(d.allowed);
  d = twenty->TryAcquire("n", 11);  // 10 of its 20 consumed
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_FALSE(d.allowed);
  d = twenty->TryAcquire("n", 10);
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
  const std::string key = absl::StrCat("{", prefix(), "n}:b0");
  const std::string state = client().Run({"GET", key}).str;
  // Another algorithm: an error for the key, decided by the failure mode
  // (kFailClosed), counted, and logged with the key's name.
  d = window->TryAcquire("n");
  ExpectFailClosed(d, absl::Seconds(5));  // options.timeout
  const SharedLimitStats s = window->stats();
  EXPECT_EQ(s.redis_errors, 1u);
  EXPECT_EQ(s.key_errors, 1u);
  EXPECT_EQ(ten->stats().redis_errors + twenty->stats().redis_errors, 0u);
  const std::vector<std::string> logged = log_->NoDecision();
  ASSERT_THAT(logged, SizeIs(1));
  EXPECT_THAT(logged[0], HasSubstr("INTERNAL"));
  EXPECT_THAT(logged[0],
              HasSubstr(absl::StrCat("key '", key,
                                     "' holds the state of another spec")));
  EXPECT_EQ(client().Run({"GET", key}).str, state);
}

TEST(DirectOptionsTest, FailureModeOptionsAreValidated) {
  DirectLimiterOptions options;
  options.failure_mode = FailureMode::kFailLocal;
  options.fallback_instances = 0;
  auto l =
      DirectLimiter::Create(LimitSpec::Gcra(10, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("DirectLimiterOptions.fallback_instances is 0"));
  options.fallback_instances = 1;
  options.failure_mode = static_cast<FailureMode>(9);
  l = DirectLimiter::Create(LimitSpec::Gcra(10, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("DirectLimiterOptions.failure_mode is 9"));
}

TEST_F(DirectLimiterTest, CreateRejectsBadInput) {
  DirectLimiterOptions options;
  options.connection = connection_;
  options.key_prefix = "bad{";
  auto l = DirectLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("key_prefix"));
  options.key_prefix = "ok:";
  l = DirectLimiter::Create(LimitSpec::Gcra(0, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("limit"));
  // The scripts count whole microseconds.
  l = DirectLimiter::Create(LimitSpec::Gcra(1, absl::Nanoseconds(1500)),
                            options);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  auto good = Make(LimitSpec::Gcra(1, absl::Seconds(1)));
  Decision d = good->TryAcquire("neg", -1);
  ExpectInvalidArgument(d);
  // Beyond what the scripts take (2^50): refused before a round trip (it
  // was an INTERNAL error from the script's reply).
  for (int64_t cost : {(int64_t{1} << 50) + 1, int64_t{1} << 62, INT64_MAX}) {
    d = good->TryAcquire("huge", cost);
    ExpectInvalidArgument(d);
    const Reservation r = good->Reserve("huge", cost, absl::Seconds(1));
    EXPECT_FALSE(r.granted) << cost;
    EXPECT_EQ(r.wait_ns, 0) << cost;
    ExpectInvalidArgument(r.decision);
  }
  // A key longer than max_key_bytes (default 1 KiB) never becomes a Redis
  // key.
  d = good->TryAcquire(std::string(1025, 'k'));
  ExpectInvalidArgument(d);
  EXPECT_TRUE(Keys("*kkkkkkkk*").empty());
  // None of them was sent or counted as an error: bad input is no failure
  // of Redis's, and the failure mode does not decide it.
  SharedLimitStats s = good->stats();
  EXPECT_EQ(s.redis_calls, 0u);
  EXPECT_EQ(s.redis_errors, 0u);
  EXPECT_EQ(s.decisions.Denied(DecisionSource::kInvalidArgument), 8u);
  EXPECT_EQ(s.decisions.Total(), 8u);
  EXPECT_THAT(log_->NoDecision(), SizeIs(0));
  d = good->TryAcquire(std::string(1024, 'k'));
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(good->stats().redis_calls, 1u);
  options.max_key_bytes = 65537;
  l = DirectLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("DirectLimiterOptions.max_key_bytes is 65537"));
  // 2^50 itself reaches Redis, which denies it (it can never fit).
  d = good->TryAcquire("huge", int64_t{1} << 50);
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ns, kNever);
  EXPECT_EQ(good->stats().redis_calls, 2u);
}

TEST_F(DirectLimiterTest, ServerTimeNotClientTime) {
  // Decisions use Redis TIME: the reset of a fresh fixed window agrees
  // with the server's clock. Windows start when the test does, so no
  // window boundary falls between the call and the TIME below.
  const LimitSpec spec = Anchored(LimitSpec::FixedWindow(1, absl::Seconds(10)));
  const int64_t offset_us =
      absl::ToInt64Microseconds(spec.bands[0].window_offset);
  auto limiter = Make(spec);
  const Decision d = limiter->TryAcquire("time");
  ASSERT_EQ(d.source, DecisionSource::kDirect);
  auto t = server().Command({"TIME"});
  ASSERT_TRUE(t.ok());
  std::vector<std::string> parts =
      absl::StrSplit(t->substr(1, t->size() - 2), ", ");
  ASSERT_EQ(parts.size(), 2u);
  const int64_t server_us =
      std::stoll(parts[0]) * 1000000 + std::stoll(parts[1]);
  const int64_t elapsed_us = server_us - offset_us;  // >= 0: same host clock
  ASSERT_GE(elapsed_us, 0);
  const int64_t window_end_us =
      offset_us + (elapsed_us / 10000000 + 1) * 10000000;
  // reset_after points at the end of the server's current window (within
  // the time between the two calls).
  const int64_t predicted_reset_us = window_end_us - server_us;
  EXPECT_NEAR(d.reset_after_ns / 1000, predicted_reset_us, 1000000);
}

}  // namespace
}  // namespace tokenlease
