// src/direct: DirectLimiter, the exact mode. Every decision is one call of
// the acquire script on Redis (the transport and the scripts' encoding are
// src/redis's); nothing is held locally, so the shared limit is exact at
// the price of a round trip per decision.
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/notification.h"
#include "core/local_fallback.h"
#include "core/local_share.h"
#include "core/options_checks.h"
#include "redis/instance_census.h"
#include "redis/redis_client.h"
#include "redis/script_call.h"
#include "redis/scripts.h"
#include "tokenlease/direct.h"
#include "tokenlease/limiter.h"

namespace tokenlease {
namespace {

// Waits for an asynchronous result. The state is shared so that a callback
// arriving after the waiter gave up (it cannot: the client bounds every
// command by its deadline) would still be safe.
template <typename T>
struct Rendezvous {
  // On the client thread: keeps `r` for the waiter, then wakes it. An error
  // is kept as a new Status with a copy of its message, which shares no
  // reference-counted payload with the copies the client thread still
  // holds: the count lives in the system's Abseil, which ThreadSanitizer
  // does not see, so a payload freed by the client thread after the waiter
  // read it was reported as a race although the count orders the two.
  void Deliver(absl::StatusOr<T> r) {
    if (r.ok()) {
      result = std::move(r);
    } else {
      result = absl::Status(r.status().code(), r.status().message());
    }
    done.Notify();
  }

  internal::Notification done;
  absl::StatusOr<T> result;
};

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Instance discovery: the census, ticked by whichever call finds it due
// and takes the mutex (the census has one owner at a time).
struct DirectLimiter::Census {
  std::mutex mu;
  std::unique_ptr<internal::InstanceCensus> census;  // guarded by mu
  int64_t tick_every_ns = 0;
  // relaxed: a hint that spares calls the mutex; the mutex orders the rest.
  std::atomic<int64_t> next_tick_ns{INT64_MIN};
};

// relaxed: statistics, read by stats() only; nothing is published through
// them. Shared lines written with fetch_add: a direct decision costs a round
// trip, next to which a contended increment is nothing.
struct DirectLimiter::Counters {
  // relaxed (fetch_add on the thread that delivers the decision): a count.
  std::atomic<uint64_t> admitted[kDecisionSources] = {};
  std::atomic<uint64_t> denied[kDecisionSources] = {};
  std::atomic<uint64_t> redis_calls{0};  // relaxed: a count
  std::atomic<uint64_t> redis_failures{0};
  std::atomic<uint64_t> key_errors{0};
  std::atomic<uint64_t> fail_closed_denied{0};
  std::atomic<uint64_t> fail_open_admitted{0};
  std::atomic<uint64_t> fail_local_admitted{0};
  std::atomic<uint64_t> fail_local_denied{0};

  void Count(const Decision& d) {
    (d.allowed ? admitted : denied)[static_cast<int>(d.source)].fetch_add(
        1, std::memory_order_relaxed);
  }
};

// The stats callback, run on the connection's client thread.
struct DirectLimiter::StatsTimer {
  std::unique_ptr<internal::RedisClient::Periodic> periodic;
};

absl::Status DirectLimiterOptions::Validate() const {
  return internal::FirstError({
      internal::ValidateKeyPrefix("DirectLimiterOptions.key_prefix",
                                  key_prefix),
      internal::CheckDuration("DirectLimiterOptions.timeout", timeout,
                              absl::ZeroDuration(), absl::Minutes(1)),
      internal::CheckMaxKeyBytes("DirectLimiterOptions", max_key_bytes),
      failure_mode.has_value() &&
              static_cast<uint8_t>(*failure_mode) >
                  static_cast<uint8_t>(FailureMode::kFailLocal)
          ? absl::InvalidArgumentError(absl::StrCat(
                "DirectLimiterOptions.failure_mode is ",
                static_cast<int>(*failure_mode),
                "; it must be unset, kFailClosed, kFailOpen or kFailLocal"))
          : absl::OkStatus(),
      internal::CheckInteger("DirectLimiterOptions.fallback_instances",
                             fallback_instances, 1, 65536),
      instance_group.empty()
          ? absl::OkStatus()
          : internal::ValidateKeyPrefix("DirectLimiterOptions.instance_group",
                                        instance_group),
      internal::CheckDuration("DirectLimiterOptions.announce_ttl", announce_ttl,
                              absl::Milliseconds(100), absl::Minutes(10)),
      internal::CheckDuration("DirectLimiterOptions.stats_interval",
                              stats_interval, absl::Milliseconds(1),
                              absl::Hours(1)),
      connection == nullptr ? redis.Validate() : absl::OkStatus(),
  });
}

absl::StatusOr<std::unique_ptr<DirectLimiter>> DirectLimiter::Create(
    const LimitSpec& spec, const DirectLimiterOptions& options) {
  if (absl::Status s = internal::ValidateScriptSpec(spec); !s.ok()) return s;
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  for (size_t i = 0; options.start_empty && i < spec.bands.size(); ++i) {
    if (spec.bands[i].algorithm == Algorithm::kSlidingWindowLog) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DirectLimiterOptions.start_empty is true, but bands[", i,
          "] is a sliding_log limit, whose state cannot start drained; use "
          "start_empty = false for it"));
    }
  }
  std::shared_ptr<internal::LocalFallback> fallback;
  if (options.failure_mode == FailureMode::kFailLocal) {
    // Keys as long as Redis takes them (the share must decide every key
    // the limiter accepts).
    LimiterOptions local;
    local.max_key_bytes = options.max_key_bytes;
    // The configured count's share, and with discovery the smallest too.
    for (int32_t instances : {options.fallback_instances,
                              options.instance_group.empty()
                                  ? options.fallback_instances
                                  : internal::InstanceCensus::kMaxInstances}) {
      absl::StatusOr<std::unique_ptr<Limiter>> share =
          Limiter::Create(internal::ShareOfLimit(spec, instances), local);
      if (!share.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "DirectLimiterOptions.failure_mode is kFailLocal, but the share "
            "of 1 of ",
            instances, " instances is no limit the local engine takes: ",
            share.status().message()));
      }
    }
    fallback = std::make_shared<internal::LocalFallback>(
        spec, local, options.fallback_instances);
  }
  // After every check: a refused limiter opens no connection.
  absl::StatusOr<std::shared_ptr<RedisConnection>> connection =
      internal::GivenOrNewConnection(options.connection, options.redis);
  if (!connection.ok()) return connection.status();
  auto limiter = std::unique_ptr<DirectLimiter>(
      new DirectLimiter(spec, options, *std::move(connection)));
  limiter->fallback_ = std::move(fallback);
  if (!options.instance_group.empty()) {
    limiter->census_ = std::make_unique<Census>();
    limiter->census_->census = std::make_unique<internal::InstanceCensus>(
        &limiter->connection_->client(),
        internal::InstancesKey(options.key_prefix, options.instance_group),
        internal::RandomInstanceId(), options.announce_ttl,
        options.fallback_instances);
    // Often enough that a reply is folded in soon after it came.
    limiter->census_->tick_every_ns =
        absl::ToInt64Nanoseconds(options.announce_ttl) / 30;
  }
  if (options.stats_callback) {
    DirectLimiter* l = limiter.get();
    absl::StatusOr<std::unique_ptr<internal::RedisClient::Periodic>> timer =
        l->connection_->client().Every(options.stats_interval, [l] {
          l->options_.stats_callback(l->stats());
        });
    if (!timer.ok()) return timer.status();
    limiter->stats_timer_ = std::make_unique<StatsTimer>();
    limiter->stats_timer_->periodic = *std::move(timer);
  }
  return limiter;
}

DirectLimiter::~DirectLimiter() {
  // First: waits for a callback running on the client thread, and stops it.
  stats_timer_.reset();
  if (census_ == nullptr) return;
  std::lock_guard<std::mutex> lock(census_->mu);
  census_->census->Leave();
}

void DirectLimiter::TickCensus() {
  const int64_t now = SteadyNowNs();
  if (now < census_->next_tick_ns.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(census_->mu, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another call is ticking it
  census_->next_tick_ns.store(now + census_->tick_every_ns,
                              std::memory_order_relaxed);
  census_->census->Tick(now);
  if (fallback_ != nullptr) fallback_->SetInstances(census_->census->count());
}

DirectLimiter::DirectLimiter(const LimitSpec& spec,
                             const DirectLimiterOptions& options,
                             std::shared_ptr<RedisConnection> connection)
    : spec_(spec),
      options_(options),
      connection_(std::move(connection)),
      counters_(std::make_shared<Counters>()) {}

DirectStats DirectLimiter::stats() const {
  DirectStats s;
  for (int i = 0; i < kDecisionSources; ++i) {
    s.decisions.admitted[i] =
        counters_->admitted[i].load(std::memory_order_relaxed);
    s.decisions.denied[i] =
        counters_->denied[i].load(std::memory_order_relaxed);
  }
  s.redis_calls = counters_->redis_calls.load(std::memory_order_relaxed);
  s.decisions_per_call = s.redis_calls == 0
                             ? 0
                             : static_cast<double>(s.decisions.Total()) /
                                   static_cast<double>(s.redis_calls);
  s.redis_failures = counters_->redis_failures.load(std::memory_order_relaxed);
  s.key_errors = counters_->key_errors.load(std::memory_order_relaxed);
  s.fail_closed_denied =
      counters_->fail_closed_denied.load(std::memory_order_relaxed);
  s.fail_open_admitted =
      counters_->fail_open_admitted.load(std::memory_order_relaxed);
  s.fail_local_admitted =
      counters_->fail_local_admitted.load(std::memory_order_relaxed);
  s.fail_local_denied =
      counters_->fail_local_denied.load(std::memory_order_relaxed);
  s.instances = options_.fallback_instances;
  if (census_ != nullptr) {
    // Reads of atomics only: no need for the census's mutex.
    s.instances = census_->census->count();
    s.announcements = census_->census->answered();
    s.announce_failures = census_->census->failed();
  }
  // The count the share in force is of (the census's latest count reaches
  // it at the next call that holds the census).
  if (fallback_ != nullptr) s.instances = fallback_->instances();
  s.redis = connection_->stats();
  return s;
}

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
  if (census_ != nullptr) TickCensus();
  internal::AcquireArgs args;
  args.wanted = cost;
  args.minimum = cost;
  args.max_wait_us = max_wait_us;
  std::vector<std::string> argv =
      internal::AcquireArguments(spec_, options_.key_prefix, key, args);
  if (timeout <= absl::ZeroDuration()) timeout = options_.timeout;
  // What a call that got no decision returns: its error, or the failure
  // mode's decision (captured by value and shared_ptr: the reply may come
  // after this limiter is gone). The key is copied only for the local
  // share that needs it.
  auto fail =
      [mode = options_.failure_mode, fallback = fallback_, counters = counters_,
       key = fallback_ != nullptr ? std::string(key) : std::string(), cost,
       max_wait_us,
       retry_ns = absl::ToInt64Nanoseconds(
           timeout > absl::ZeroDuration()
               ? timeout
               : connection_->options().command_timeout)](
          absl::Status error, bool key_error) -> absl::StatusOr<Reservation> {
    counters->redis_failures.fetch_add(1, std::memory_order_relaxed);
    if (key_error) counters->key_errors.fetch_add(1, std::memory_order_relaxed);
    if (!mode.has_value()) return error;
    Reservation r;
    switch (*mode) {
      case FailureMode::kFailClosed:
        counters->fail_closed_denied.fetch_add(1, std::memory_order_relaxed);
        r.decision.source = DecisionSource::kDirect;
        r.decision.retry_after_ns = retry_ns;
        counters->Count(r.decision);
        return r;
      case FailureMode::kFailOpen:
        counters->fail_open_admitted.fetch_add(1, std::memory_order_relaxed);
        r.decision.allowed = true;
        r.decision.source = DecisionSource::kFailOpen;
        r.granted = true;
        counters->Count(r.decision);
        return r;
      case FailureMode::kFailLocal: {
        if (max_wait_us > 0) {
          absl::StatusOr<Reservation> res =
              fallback->Reserve(key, cost, absl::Microseconds(max_wait_us));
          if (!res.ok()) return res.status();
          r = *res;
        } else {
          r.decision = fallback->TryAcquire(key, cost);
          r.granted = r.decision.allowed;
        }
        r.decision.source = DecisionSource::kFallback;
        (r.granted ? counters->fail_local_admitted
                   : counters->fail_local_denied)
            .fetch_add(1, std::memory_order_relaxed);
        counters->Count(r.decision);
        return r;
      }
    }
    return error;
  };
  // Shared by the reply callback and the failure paths below: SubmitScript
  // does not call its callback when it returns an error.
  auto shared = std::make_shared<ReservationCallback>(std::move(done));
  // With a mode, a connection that is down decides at once instead of
  // making every call wait for its deadline; the connection reconnects and
  // probes on its own, and calls go to Redis again once it answers.
  if (options_.failure_mode.has_value() &&
      connection_->health() == RedisHealth::kDown) {
    (*shared)(fail(absl::UnavailableError(
                       absl::StrCat("Redis at ", connection_->endpoint(),
                                    " is down (RedisHealth::kDown)")),
                   false));
    return;
  }
  // Before the submit: the reply may come (and a caller read stats())
  // before SubmitScript returns.
  counters_->redis_calls.fetch_add(1, std::memory_order_relaxed);
  absl::Status queued = connection_->client().SubmitScript(
      internal::kAcquireScript, std::move(argv),
      [shared, fail,
       counters = counters_](absl::StatusOr<internal::RedisReply> reply) {
        if (!reply.ok()) {
          (*shared)(fail(reply.status(), false));
          return;
        }
        absl::StatusOr<internal::AcquireResult> result =
            internal::ParseAcquireReply(*reply);
        if (!result.ok()) {
          // A reply that is an error for the key (a wrong type, a corrupt
          // value) or no acquire reply at all.
          (*shared)(fail(result.status(), true));
          return;
        }
        Reservation r;
        r.decision = internal::ToDecision(*result, DecisionSource::kDirect);
        r.granted = result->granted > 0;
        r.wait_ns = r.granted ? result->wait_us * 1000 : 0;
        counters->Count(r.decision);
        (*shared)(r);
      },
      timeout, options_.start_empty);
  if (!queued.ok()) (*shared)(fail(queued, false));
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
      [state](absl::StatusOr<Decision> d) { state->Deliver(std::move(d)); },
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
      [state](absl::StatusOr<Reservation> r) { state->Deliver(std::move(r)); },
      timeout);
  state->done.WaitForNotification();
  return std::move(state->result);
}

}  // namespace tokenlease
