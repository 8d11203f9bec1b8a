// src/direct: DirectLimiter, the exact mode. Every decision is one call of
// the acquire script on Redis (the transport and the scripts' encoding are
// src/redis's; failure modes, shadow mode, instance discovery and the
// counts are src/shared's); nothing is held locally, so the shared limit is
// exact at the price of a round trip per decision.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/notification.h"
#include "core/limiter_core.h"
#include "core/options_checks.h"
#include "redis/redis_client.h"
#include "redis/script_call.h"
#include "redis/scripts.h"
#include "shared/census_driver.h"
#include "shared/failure_policy.h"
#include "shared/shared_checks.h"
#include "tokenlease/direct.h"

namespace tokenlease {

using internal::FailurePolicy;

namespace {
struct FailureDecision;
}  // namespace

absl::Status DirectLimiterOptions::Validate() const {
  return internal::FirstError({
      internal::ValidateSharedOptions(*this, "DirectLimiterOptions"),
      internal::CheckDuration("DirectLimiterOptions.timeout", timeout,
                              absl::ZeroDuration(), absl::Minutes(1)),
  });
}

class DirectLimiter::Impl {
 public:
  Impl(const LimitSpec& spec, const DirectLimiterOptions& options,
       std::shared_ptr<RedisConnection> connection)
      : options_(options),
        connection_(std::move(connection)),
        client_(internal::RedisConnectionAccess::Client(*connection_)),
        clock_(options.clock != nullptr ? options.clock : DefaultClock()),
        spec_(std::make_shared<const LimitSpec>(spec)),
        policy_(std::make_shared<FailurePolicy>(spec, options,
                                                connection_->options().log)),
        census_(internal::CensusDriver::Create(options, &client_,
                                               policy_->fallback())) {}

  // First: waits for a stats callback running on the client thread, and
  // stops it; then the census (its driver) withdraws the announcement.
  ~Impl() { stats_timer_.reset(); }

  absl::Status StartStatsTimer() {
    if (!options_.stats_callback) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<internal::RedisClient::Periodic>> timer =
        client_.Every(options_.stats_interval,
                      [this] { options_.stats_callback(Stats()); });
    if (!timer.ok()) return timer.status();
    stats_timer_ = *std::move(timer);
    return absl::OkStatus();
  }

  // Asks Redis for `cost` tokens of `key`, borrowing up to `max_wait_us`
  // when `reserve`; `done` gets the decision (Redis's, the failure mode's,
  // or kInvalidArgument), finished (shadow mode, counted).
  void Submit(std::string_view key, int64_t cost, bool reserve,
              int64_t max_wait_us, absl::Duration timeout,
              ReservationCallback done);
  // The same for a caller that waits: on a caller lane when one is idle
  // (RedisClient::CallOnLane), else through Submit.
  Reservation Blocking(std::string_view key, int64_t cost, bool reserve,
                       int64_t max_wait_us, absl::Duration timeout);

  absl::Status UpdateSpec(const LimitSpec& spec) {
    std::lock_guard<std::mutex> lock(update_mu_);
    if (absl::Status s = internal::CheckSpecUpdate(
            *CurrentSpec(), spec, options_, "DirectLimiter::UpdateSpec",
            LimiterMode::kDirect);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = policy_->UpdateSpec(spec); !s.ok()) return s;
    spec_.store(std::make_shared<const LimitSpec>(spec));
    return absl::OkStatus();
  }

  std::shared_ptr<const LimitSpec> CurrentSpec() const { return spec_.load(); }
  RedisConnection& connection() const { return *connection_; }

  SharedLimitStats Stats() const {
    SharedLimitStats s;
    s.mode = LimiterMode::kDirect;
    policy_->Fill(&s, /*share_keys=*/true);
    if (census_ != nullptr) census_->Fill(&s);
    s.redis = connection_->stats();
    return s;
  }

 private:
  std::optional<Reservation> Prepare(std::string_view key, int64_t cost,
                                     bool reserve, int64_t max_wait_us,
                                     absl::Duration* timeout,
                                     FailureDecision* fail,
                                     std::vector<std::string>* argv);

  const DirectLimiterOptions options_;
  const std::shared_ptr<RedisConnection> connection_;
  internal::RedisClient& client_;  // connection_'s
  Clock* const clock_;
  std::mutex update_mu_;  // serialises UpdateSpec
  // The spec calls are encoded with (UpdateSpec replaces it).
  std::atomic<std::shared_ptr<const LimitSpec>> spec_;
  // Shared with reply callbacks, which may run after this limiter is gone.
  const std::shared_ptr<FailurePolicy> policy_;
  const std::unique_ptr<internal::CensusDriver> census_;  // null: no group
  // Last: destroyed first, so the callback never sees a limiter being
  // destroyed. Null without a stats_callback.
  std::unique_ptr<internal::RedisClient::Periodic> stats_timer_;
};

namespace {

// What a call that got no decision returns: the failure mode's decision.
// Held by value (with the policy by shared_ptr): the reply may come after
// the limiter is gone. The key is copied only for the local share.
struct FailureDecision {
  std::shared_ptr<FailurePolicy> policy;
  std::string key;
  int64_t cost = 0;
  bool reserve = false;
  int64_t max_wait_us = 0;
  int64_t retry_ns = 0;

  Reservation operator()(const absl::Status& error, bool key_error) const {
    policy->NoteError(error, key_error);
    Reservation r;
    if (reserve) {
      r = policy->Reserve(key, cost, absl::Microseconds(max_wait_us), retry_ns);
    } else {
      r.decision = policy->Decide(key, cost, retry_ns);
    }
    policy->Finish(&r.decision);
    internal::SettleReservation(&r);
    return r;
  }
};

// The caller's reservation from Redis's reply to the acquire script, or
// from the error that stands for it: one function for both paths (the
// client thread's callback and a caller lane).
Reservation FromReply(absl::StatusOr<internal::RedisReply> reply,
                      const FailureDecision& fail) {
  if (!reply.ok()) return fail(reply.status(), false);
  absl::StatusOr<internal::AcquireResult> result =
      internal::ParseAcquireReply(*reply);
  if (!result.ok()) {
    // A reply that is an error for the key (a wrong type, a corrupt value,
    // another spec's state) or no acquire reply at all.
    return fail(result.status(), true);
  }
  Reservation r;
  r.decision = internal::ToDecision(*result, DecisionSource::kDirect);
  fail.policy->Finish(&r.decision);
  r.wait_ns = result->wait_us * 1000;
  internal::SettleReservation(&r);
  return r;
}

}  // namespace

// What Submit and Blocking share before the call: bad input and a
// connection that is down are decided here (the decision returned);
// otherwise `fail`, `timeout` and `argv` are set for the call.
std::optional<Reservation> DirectLimiter::Impl::Prepare(
    std::string_view key, int64_t cost, bool reserve, int64_t max_wait_us,
    absl::Duration* timeout, FailureDecision* fail,
    std::vector<std::string>* argv) {
  // Checked here, not by the script: bad input costs no round trip.
  if (cost < 0 || cost > internal::kMaxScriptCost ||
      key.size() > static_cast<size_t>(options_.max_key_bytes)) {
    Reservation r;
    r.decision = internal::LimiterCore::InvalidArgumentDecision();
    policy_->Finish(&r.decision);
    return r;
  }
  if (census_ != nullptr) census_->MaybeTick(clock_->NowNanos());
  if (*timeout <= absl::ZeroDuration()) *timeout = options_.timeout;
  fail->policy = policy_;
  if (policy_->fallback() != nullptr) fail->key = std::string(key);
  fail->cost = cost;
  fail->reserve = reserve;
  fail->max_wait_us = max_wait_us;
  fail->retry_ns = absl::ToInt64Nanoseconds(
      *timeout > absl::ZeroDuration() ? *timeout
                                      : connection_->options().command_timeout);
  // A connection that is down decides at once instead of making every
  // call wait for its deadline; the connection reconnects and probes on
  // its own, and calls go to Redis again once it answers.
  if (client_.HealthOfSlot(client_.cluster()
                               ? internal::LimitSlot(options_.key_prefix, key)
                               : 0) == RedisHealth::kDown) {
    const std::string why = client_.LastConnectError();
    return (*fail)(
        absl::UnavailableError(absl::StrCat(
            "Redis at ", connection_->endpoint(),
            client_.cluster() ? " (the primary of this key's slot)" : "",
            " is down (RedisHealth::kDown)", why.empty() ? "" : ": ", why)),
        false);
  }
  internal::AcquireArgs args;
  args.wanted = cost;
  args.minimum = cost;
  args.max_wait_us = max_wait_us;
  *argv = internal::AcquireArguments(*CurrentSpec(), options_.key_prefix, key,
                                     args);
  return std::nullopt;
}

void DirectLimiter::Impl::Submit(std::string_view key, int64_t cost,
                                 bool reserve, int64_t max_wait_us,
                                 absl::Duration timeout,
                                 ReservationCallback done) {
  FailureDecision fail;
  std::vector<std::string> argv;
  if (std::optional<Reservation> r =
          Prepare(key, cost, reserve, max_wait_us, &timeout, &fail, &argv)) {
    done(*r);
    return;
  }
  // Shared by the reply callback and the failure path below: SubmitScript
  // does not call its callback when it returns an error.
  auto shared = std::make_shared<ReservationCallback>(std::move(done));
  // Before the submit: the reply may come (and a caller read stats())
  // before SubmitScript returns.
  policy_->NoteCall();
  absl::Status queued = client_.SubmitScript(
      internal::kAcquireScript, std::move(argv),
      [shared, fail](absl::StatusOr<internal::RedisReply> reply) {
        (*shared)(FromReply(std::move(reply), fail));
      },
      timeout, options_.start_empty);
  if (!queued.ok()) (*shared)(fail(queued, false));
}

namespace {

// Waits for an asynchronous result (the client answers every command by
// its deadline, so the wait is bounded by it, and by shutdown_grace if the
// connection is being destroyed). Shared with the callback.
template <typename T>
struct Rendezvous {
  internal::Notification done;
  T result;
};

}  // namespace

Reservation DirectLimiter::Impl::Blocking(std::string_view key, int64_t cost,
                                          bool reserve, int64_t max_wait_us,
                                          absl::Duration timeout) {
  // Counted from here to the return, over both paths (BlockingCall).
  internal::RedisClient::BlockingCall counted(client_);
  FailureDecision fail;
  std::vector<std::string> argv;
  if (std::optional<Reservation> r =
          Prepare(key, cost, reserve, max_wait_us, &timeout, &fail, &argv)) {
    return *r;
  }
  // This thread does the round trip itself if a lane is idle: no hand-off
  // to the client thread and back.
  policy_->NoteCall();
  if (std::optional<absl::StatusOr<internal::RedisReply>> reply =
          client_.CallOnLane(internal::kAcquireScript, argv, timeout,
                             options_.start_empty)) {
    return FromReply(*std::move(reply), fail);
  }
  auto state = std::make_shared<Rendezvous<Reservation>>();
  absl::Status queued = client_.SubmitScript(
      internal::kAcquireScript, std::move(argv),
      [state, fail](absl::StatusOr<internal::RedisReply> reply) {
        state->result = FromReply(std::move(reply), fail);
        state->done.Notify();
      },
      timeout, options_.start_empty);
  if (!queued.ok()) return fail(queued, false);
  state->done.WaitForNotification();
  return state->result;
}

absl::StatusOr<std::unique_ptr<DirectLimiter>> DirectLimiter::Create(
    const LimitSpec& spec, const DirectLimiterOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = internal::CheckSharedLimit(
          spec, options, "DirectLimiterOptions", LimiterMode::kDirect);
      !s.ok()) {
    return s;
  }
  // After every check: a refused limiter opens no connection.
  absl::StatusOr<std::shared_ptr<RedisConnection>> connection =
      internal::GivenOrNewConnection(options.connection, options.redis);
  if (!connection.ok()) return connection.status();
  auto impl = std::make_unique<Impl>(spec, options, *std::move(connection));
  if (absl::Status s = impl->StartStatsTimer(); !s.ok()) return s;
  return std::unique_ptr<DirectLimiter>(new DirectLimiter(std::move(impl)));
}

DirectLimiter::DirectLimiter(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
DirectLimiter::~DirectLimiter() = default;

void DirectLimiter::TryAcquireAsync(std::string_view key, int64_t cost,
                                    DecisionCallback done,
                                    absl::Duration timeout) {
  impl_->Submit(
      key, cost, /*reserve=*/false, 0, timeout,
      [done = std::move(done)](Reservation r) mutable { done(r.decision); });
}

Decision DirectLimiter::TryAcquire(std::string_view key, int64_t cost,
                                   absl::Duration timeout) {
  return impl_->Blocking(key, cost, /*reserve=*/false, 0, timeout).decision;
}

void DirectLimiter::ReserveAsync(std::string_view key, int64_t cost,
                                 absl::Duration max_wait,
                                 ReservationCallback done,
                                 absl::Duration timeout) {
  if (max_wait < absl::ZeroDuration()) max_wait = absl::ZeroDuration();
  const int64_t max_wait_us =
      std::min(absl::ToInt64Microseconds(max_wait),
               absl::ToInt64Microseconds(impl_->CurrentSpec()->max_borrow));
  impl_->Submit(key, cost, /*reserve=*/true, max_wait_us, timeout,
                std::move(done));
}

Reservation DirectLimiter::Reserve(std::string_view key, int64_t cost,
                                   absl::Duration max_wait,
                                   absl::Duration timeout) {
  if (max_wait < absl::ZeroDuration()) max_wait = absl::ZeroDuration();
  const int64_t max_wait_us =
      std::min(absl::ToInt64Microseconds(max_wait),
               absl::ToInt64Microseconds(impl_->CurrentSpec()->max_borrow));
  return impl_->Blocking(key, cost, /*reserve=*/true, max_wait_us, timeout);
}

absl::Status DirectLimiter::UpdateSpec(const LimitSpec& spec) {
  return impl_->UpdateSpec(spec);
}
LimitSpec DirectLimiter::spec() const { return *impl_->CurrentSpec(); }
RedisConnection& DirectLimiter::connection() const {
  return impl_->connection();
}
SharedLimitStats DirectLimiter::stats() const { return impl_->Stats(); }

}  // namespace tokenlease
