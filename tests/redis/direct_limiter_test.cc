// Direct mode end to end: the public API, a real redis-server, real faults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/notification.h"
#include "testing/redis_test.h"
#include "testing/specs.h"
#include "tokenlease/direct.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using ::tokenlease::testing::AnchoredAt;

constexpr absl::Duration kWaitBound = absl::Seconds(20);

// An aligned window spec whose windows start now (see AnchoredAt).
LimitSpec Anchored(LimitSpec spec) {
  return AnchoredAt(std::move(spec), absl::Now());
}

// Direct limiters on one connection to the test's server (the shared one,
// or a private one for the fault tests).
template <typename ServerFixture>
class DirectFixture : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    if (this->HasFatalFailure()) return;
    connection_ = this->NewConnection();
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

  std::shared_ptr<RedisConnection> connection_;
};

using DirectLimiterTest = DirectFixture<testing::RedisTest>;
// Tests that pause or kill their server.
using DirectLimiterFaultTest = DirectFixture<testing::PrivateRedisTest>;

TEST_F(DirectLimiterTest, ExactCountAndDenialFields) {
  auto limiter = Make(Anchored(LimitSpec::FixedWindow(5, absl::Hours(1))));
  for (int i = 0; i < 5; ++i) {
    auto d = limiter->TryAcquire("user:1");
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed) << i;
    EXPECT_EQ(d->source, DecisionSource::kDirect);
    EXPECT_EQ(d->remaining, 4 - i);
  }
  auto d = limiter->TryAcquire("user:1");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_GT(d->retry_after_ns, 0);
  EXPECT_LE(d->retry_after_ns, absl::ToInt64Nanoseconds(absl::Hours(1)));
  EXPECT_EQ(d->reset_after_ns, d->retry_after_ns);
  // Another key is independent.
  d = limiter->TryAcquire("user:2", 5);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  // A cost above the limit can never be admitted.
  d = limiter->TryAcquire("user:3", 6);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->retry_after_ns, kNever);
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
    auto d = (i % 2 ? a : *b)->TryAcquire("shared");
    ASSERT_TRUE(d.ok()) << d.status();
    admitted += d->allowed;
  }
  EXPECT_EQ(admitted, 10);
}

TEST_F(DirectLimiterTest, ManyConcurrentAsyncCallersAdmitExactly) {
  auto limiter = Make(LimitSpec::SlidingWindowLog(10, absl::Hours(1)));
  constexpr int kCalls = 64;
  std::atomic<int> allowed{0}, denied{0}, failed{0};
  internal::Notification all;
  for (int i = 0; i < kCalls; ++i) {
    limiter->TryAcquireAsync("hot", 1, [&](absl::StatusOr<Decision> d) {
      if (!d.ok()) {
        failed.fetch_add(1);
      } else {
        (d->allowed ? allowed : denied).fetch_add(1);
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
}

TEST_F(DirectLimiterTest, ManyThreadsBlockingAdmitExactly) {
  auto limiter = Make(LimitSpec::Gcra(20, absl::Hours(1)));
  std::atomic<int> allowed{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto d = limiter->TryAcquire("k");
        if (!d.ok()) {
          failed.fetch_add(1);
        } else if (d->allowed) {
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
  auto r = limiter->Reserve("b", 1, absl::ZeroDuration());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->granted);
  EXPECT_EQ(r->wait_ns, 0);
  r = limiter->Reserve("b", 1, absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->granted);
  EXPECT_GT(r->wait(), absl::Seconds(9));
  EXPECT_LE(r->wait(), absl::Seconds(10));
  // Not beyond max_wait: nothing is taken.
  r = limiter->Reserve("b", 1, absl::Seconds(5));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->granted);
}

TEST_F(DirectLimiterTest, WrongTypeKeyIsAClearErrorNotACrash) {
  auto limiter = Make(LimitSpec::TokenBucket(5, absl::Minutes(1)));
  ASSERT_TRUE(limiter->TryAcquire("victim").ok());
  std::vector<std::string> keys = Keys("*victim*");
  ASSERT_FALSE(keys.empty());
  for (const auto& k : keys) {
    ASSERT_TRUE(server().Command({"DEL", k}).ok());
    ASSERT_TRUE(server().Command({"LPUSH", k, "x"}).ok());
  }
  auto d = limiter->TryAcquire("victim");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition)
      << d.status();
  EXPECT_THAT(d.status().message(), HasSubstr("victim"));
  // The limiter and its connection still work for other keys.
  d = limiter->TryAcquire("fine");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
}

TEST_F(DirectLimiterTest, SurvivesScriptFlush) {
  auto limiter = Make(Anchored(LimitSpec::FixedWindow(3, absl::Hours(1))));
  ASSERT_TRUE(limiter->TryAcquire("f").ok());
  ASSERT_TRUE(server().Command({"SCRIPT", "FLUSH"}).ok());
  auto d = limiter->TryAcquire("f");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->remaining, 1);
  EXPECT_GE(connection_->stats().script_reloads, 1u);
}

TEST_F(DirectLimiterFaultTest, FrozenServerFailsByTheDeadlineThenRecovers) {
  auto limiter = Make(LimitSpec::FixedWindow(100, absl::Hours(1)));
  ASSERT_TRUE(limiter->TryAcquire("z").ok());
  server().Pause();
  const auto start = std::chrono::steady_clock::now();
  auto d = limiter->TryAcquire("z", 1, absl::Milliseconds(150));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kDeadlineExceeded);
  server().Resume();
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    d = limiter->TryAcquire("z", 1, absl::Milliseconds(300));
    if (d.ok()) break;
  }
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
}

TEST_F(DirectLimiterFaultTest, KilledServerFailsThenRecoversAfterRestart) {
  auto limiter = Make(LimitSpec::FixedWindow(100, absl::Hours(1)));
  ASSERT_TRUE(limiter->TryAcquire("r").ok());
  server().Kill();
  auto d = limiter->TryAcquire("r", 1, absl::Milliseconds(150));
  ASSERT_FALSE(d.ok());
  ASSERT_TRUE(server().Restart().ok());
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    d = limiter->TryAcquire("r", 1, absl::Milliseconds(300));
    if (d.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(d.ok()) << d.status();
  // The restarted server has no persistence: the count starts over.
  EXPECT_EQ(d->remaining, 99);
}

// DirectLimiterOptions::failure_mode (opt-in): a call that gets no decision
// returns the mode's decision instead of its error. Against a killed
// server, 12 calls for a limit of 40 an hour shared by 4 instances (a
// local share of 10).
struct DirectModeCase {
  const char* name;
  std::optional<FailureMode> mode;
};

class DirectFailureModeTest
    : public DirectLimiterFaultTest,
      public ::testing::WithParamInterface<DirectModeCase> {};

TEST_P(DirectFailureModeTest, ACallWithoutRedisGetsTheModesDecision) {
  const DirectModeCase c = GetParam();
  DirectLimiterOptions options;
  options.connection = connection_;
  options.key_prefix = prefix();
  options.failure_mode = c.mode;
  options.fallback_instances = 4;
  auto limiter = DirectLimiter::Create(
      LimitSpec::TokenBucket(40, absl::Hours(1)), options);
  ASSERT_TRUE(limiter.ok()) << limiter.status();
  ASSERT_TRUE((*limiter)->TryAcquire("m", 1, kWaitBound).ok());
  server().Kill();
  int admitted = 0;
  for (int i = 0; i < 12; ++i) {
    auto d = (*limiter)->TryAcquire("m", 1, absl::Milliseconds(100));
    if (!c.mode.has_value()) {
      ASSERT_FALSE(d.ok());  // the error, as without the option
      continue;
    }
    ASSERT_TRUE(d.ok()) << d.status();
    admitted += d->allowed;
    switch (*c.mode) {
      case FailureMode::kFailClosed:
        EXPECT_FALSE(d->allowed);
        EXPECT_EQ(d->retry_after_ns, 100'000'000);  // the call's deadline
        break;
      case FailureMode::kFailOpen:
        EXPECT_EQ(d->source, DecisionSource::kFailOpen);
        break;
      case FailureMode::kFailLocal:
        EXPECT_EQ(d->source, DecisionSource::kFallback);
        break;
    }
  }
  const DirectStats s = (*limiter)->stats();
  EXPECT_EQ(s.redis_failures, 12u);
  EXPECT_EQ(s.key_errors, 0u);
  if (c.mode == FailureMode::kFailClosed) {
    EXPECT_EQ(admitted, 0);
    EXPECT_EQ(s.fail_closed_denied, 12u);
  } else if (c.mode == FailureMode::kFailOpen) {
    EXPECT_EQ(admitted, 12);
    EXPECT_EQ(s.fail_open_admitted, 12u);
  } else if (c.mode == FailureMode::kFailLocal) {
    EXPECT_EQ(admitted, 10);  // the share, whole, then denials
    EXPECT_EQ(s.fail_local_admitted, 10u);
    EXPECT_EQ(s.fail_local_denied, 2u);
  }
  // Invalid input stays an error, whatever the mode.
  EXPECT_EQ((*limiter)->TryAcquire("m", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Back to Redis once it answers (restarted empty: a full bucket).
  ASSERT_TRUE(server().Restart().ok());
  absl::StatusOr<Decision> d;
  const absl::Time end = absl::Now() + kWaitBound;
  while (absl::Now() < end) {
    d = (*limiter)->TryAcquire("m", 1, absl::Milliseconds(300));
    if (d.ok() && d->source == DecisionSource::kDirect && d->allowed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->source, DecisionSource::kDirect);
  // A full bucket less this call, and less any earlier call that timed out
  // after Redis ran it (slow sanitizer builds).
  EXPECT_LE(d->remaining, 39);
  EXPECT_GE(d->remaining, 30);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, DirectFailureModeTest,
    ::testing::Values(DirectModeCase{"unset", std::nullopt},
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
    auto d = (*limiter)->TryAcquire("w", 1, kWaitBound);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->source, DecisionSource::kFallback);
    admitted += d->allowed;
  }
  EXPECT_EQ(admitted, 3);
  EXPECT_EQ((*limiter)->stats().redis_failures, 5u);
  EXPECT_EQ((*limiter)->stats().key_errors, 5u);
  // A key longer than the local engine's default (1024 bytes) but within
  // max_key_bytes is decided by the share too, not refused.
  const std::string long_key(2000, 'k');
  client().Run({"RPUSH", absl::StrCat("{", prefix(), long_key, "}:b0"), "x"});
  auto d = (*limiter)->TryAcquire(long_key, 1, kWaitBound);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->source, DecisionSource::kFallback);
}

// Two services with different specs for one limit name (the spec stamp,
// docs/operations.md): another rate shares what was consumed; another
// algorithm is an error naming the key, with nothing written.
TEST_F(DirectLimiterTest, LimitersWithDifferentSpecsForOneName) {
  auto ten = Make(LimitSpec::TokenBucket(10, absl::Hours(1)));
  auto twenty = Make(LimitSpec::TokenBucket(20, absl::Hours(1)));
  auto window = Make(LimitSpec::FixedWindow(20, absl::Hours(1)));
  ASSERT_TRUE(ten && twenty && window);
  absl::StatusOr<Decision> d = ten->TryAcquire("n", 10);
  ASSERT_TRUE(d.ok() && d->allowed) << d.status();
  d = twenty->TryAcquire("n", 11);  // 10 of its 20 consumed
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  d = twenty->TryAcquire("n", 10);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  const std::string key = absl::StrCat("{", prefix(), "n}:b0");
  const std::string state = client().Run({"GET", key}).str;
  d = window->TryAcquire("n");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInternal) << d.status();
  EXPECT_THAT(d.status().message(),
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
  auto d = good->TryAcquire("neg", -1);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  // Beyond what the scripts take: refused before a round trip, saying the
  // range (it was an INTERNAL error from the script's reply).
  for (int64_t cost : {(int64_t{1} << 50) + 1, int64_t{1} << 62, INT64_MAX}) {
    d = good->TryAcquire("huge", cost);
    ASSERT_FALSE(d.ok()) << cost;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << cost;
    EXPECT_THAT(d.status().message(),
                HasSubstr("it must be between 0 and 1125899906842624"));
    auto r = good->Reserve("huge", cost, absl::Seconds(1));
    ASSERT_FALSE(r.ok()) << cost;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << cost;
  }
  // A key longer than max_key_bytes (default 1 KiB) never becomes a Redis
  // key.
  d = good->TryAcquire(std::string(1025, 'k'));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(),
              HasSubstr("key is 1025 bytes; it must be at most "
                        "DirectLimiterOptions.max_key_bytes (1024)"));
  EXPECT_TRUE(Keys("*kkkkkkkk*").empty());
  d = good->TryAcquire(std::string(1024, 'k'));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  options.max_key_bytes = 65537;
  l = DirectLimiter::Create(LimitSpec::Gcra(1, absl::Seconds(1)), options);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("DirectLimiterOptions.max_key_bytes is 65537"));
  // 2^50 itself reaches Redis, which denies it (it can never fit).
  d = good->TryAcquire("huge", int64_t{1} << 50);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->retry_after_ns, kNever);
}

TEST_F(DirectLimiterTest, ServerTimeNotClientTime) {
  // Decisions use Redis TIME: the reset of a fresh fixed window agrees
  // with the server's clock. Windows start when the test does, so no
  // window boundary falls between the call and the TIME below.
  const LimitSpec spec = Anchored(LimitSpec::FixedWindow(1, absl::Seconds(10)));
  const int64_t offset_us =
      absl::ToInt64Microseconds(spec.bands[0].window_offset);
  auto limiter = Make(spec);
  auto d = limiter->TryAcquire("time");
  ASSERT_TRUE(d.ok());
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
  EXPECT_NEAR(d->reset_after_ns / 1000, predicted_reset_us, 1000000);
}

}  // namespace
}  // namespace tokenlease
