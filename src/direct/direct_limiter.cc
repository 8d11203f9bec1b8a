// src/direct: DirectLimiter, the exact mode. Every decision is one call of
// the acquire script on Redis (the transport and the scripts' encoding are
// src/redis's); nothing is held locally, so the shared limit is exact at
// the price of a round trip per decision.
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/notification.h"
#include "core/options_checks.h"
#include "redis/redis_client.h"
#include "redis/script_call.h"
#include "redis/scripts.h"
#include "tokenlease/direct.h"

namespace tokenlease {
namespace {

// Waits for an asynchronous result. The state is shared so that a callback
// arriving after the waiter gave up (it cannot: the client bounds every
// command by its deadline) would still be safe.
template <typename T>
struct Rendezvous {
  internal::Notification done;
  absl::StatusOr<T> result;
};

}  // namespace

absl::Status DirectLimiterOptions::Validate() const {
  return internal::FirstError({
      internal::ValidateKeyPrefix("DirectLimiterOptions.key_prefix",
                                  key_prefix),
      internal::CheckDuration("DirectLimiterOptions.timeout", timeout,
                              absl::ZeroDuration(), absl::Minutes(1)),
      internal::CheckMaxKeyBytes("DirectLimiterOptions", max_key_bytes),
      connection == nullptr ? redis.Validate() : absl::OkStatus(),
  });
}

absl::StatusOr<std::unique_ptr<DirectLimiter>> DirectLimiter::Create(
    const LimitSpec& spec, const DirectLimiterOptions& options) {
  if (absl::Status s = internal::ValidateScriptSpec(spec); !s.ok()) return s;
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<RedisConnection>> connection =
      internal::GivenOrNewConnection(options.connection, options.redis);
  if (!connection.ok()) return connection.status();
  return std::unique_ptr<DirectLimiter>(
      new DirectLimiter(spec, options, *std::move(connection)));
}

DirectLimiter::DirectLimiter(const LimitSpec& spec,
                             const DirectLimiterOptions& options,
                             std::shared_ptr<RedisConnection> connection)
    : spec_(spec), options_(options), connection_(std::move(connection)) {}

void DirectLimiter::Submit(std::string_view key, int64_t cost,
                           int64_t max_wait_us, absl::Duration timeout,
                           ReservationCallback done) {
  // Checked here, not by the script: a bad cost costs no round trip.
  if (cost < 0 || cost > internal::kMaxScriptCost) {
    done(absl::InvalidArgumentError(
        absl::StrCat("cost is ", cost, "; it must be between 0 and ",
                     internal::kMaxScriptCost, " (2^50, the scripts' limit)")));
    return;
  }
  if (absl::Status s = internal::CheckKeySize("DirectLimiterOptions", key,
                                              options_.max_key_bytes);
      !s.ok()) {
    done(std::move(s));
    return;
  }
  internal::AcquireArgs args;
  args.wanted = cost;
  args.minimum = cost;
  args.max_wait_us = max_wait_us;
  std::vector<std::string> argv =
      internal::AcquireArguments(spec_, options_.key_prefix, key, args);
  if (timeout <= absl::ZeroDuration()) timeout = options_.timeout;
  // The callback is shared between the submit and its failure path: Submit
  // does not call it when it returns an error.
  auto shared = std::make_shared<ReservationCallback>(std::move(done));
  absl::Status queued = connection_->client().SubmitScript(
      internal::kAcquireScript, std::move(argv),
      [shared](absl::StatusOr<internal::RedisReply> reply) {
        if (!reply.ok()) {
          (*shared)(reply.status());
          return;
        }
        absl::StatusOr<internal::AcquireResult> result =
            internal::ParseAcquireReply(*reply);
        if (!result.ok()) {
          (*shared)(result.status());
          return;
        }
        Reservation r;
        r.decision = internal::ToDecision(*result, DecisionSource::kDirect);
        r.granted = result->granted > 0;
        r.wait_ns = r.granted ? result->wait_us * 1000 : 0;
        (*shared)(r);
      },
      timeout);
  if (!queued.ok()) (*shared)(queued);
}

void DirectLimiter::TryAcquireAsync(std::string_view key, int64_t cost,
                                    DecisionCallback done,
                                    absl::Duration timeout) {
  Submit(key, cost, 0, timeout,
         [done = std::move(done)](absl::StatusOr<Reservation> r) mutable {
           if (!r.ok()) {
             done(r.status());
           } else {
             done(r->decision);
           }
         });
}

absl::StatusOr<Decision> DirectLimiter::TryAcquire(std::string_view key,
                                                   int64_t cost,
                                                   absl::Duration timeout) {
  auto state = std::make_shared<Rendezvous<Decision>>();
  TryAcquireAsync(
      key, cost,
      [state](absl::StatusOr<Decision> d) {
        state->result = std::move(d);
        state->done.Notify();
      },
      timeout);
  // The client answers every command by its deadline; this wait is bounded
  // by it (and by shutdown_grace if the connection is being destroyed).
  state->done.WaitForNotification();
  return std::move(state->result);
}

void DirectLimiter::ReserveAsync(std::string_view key, int64_t cost,
                                 absl::Duration max_wait,
                                 ReservationCallback done,
                                 absl::Duration timeout) {
  if (max_wait < absl::ZeroDuration()) max_wait = absl::ZeroDuration();
  const int64_t max_wait_us =
      std::min(absl::ToInt64Microseconds(max_wait),
               absl::ToInt64Microseconds(spec_.max_borrow));
  Submit(key, cost, max_wait_us, timeout, std::move(done));
}

absl::StatusOr<Reservation> DirectLimiter::Reserve(std::string_view key,
                                                   int64_t cost,
                                                   absl::Duration max_wait,
                                                   absl::Duration timeout) {
  auto state = std::make_shared<Rendezvous<Reservation>>();
  ReserveAsync(
      key, cost, max_wait,
      [state](absl::StatusOr<Reservation> r) {
        state->result = std::move(r);
        state->done.Notify();
      },
      timeout);
  state->done.WaitForNotification();
  return std::move(state->result);
}

}  // namespace tokenlease
