// The three targets of an instance (targets.h).
#include "demo/targets.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"
#include "tokenlease/limiter.h"
#include "tokenlease/redis.h"

namespace tokenlease::tools {
namespace {

constexpr absl::Duration kPeriod = absl::Seconds(1);

// The limit shared through Redis: a token bucket of --limit per second with
// --burst.
LimitSpec SharedSpec(const DemoOptions& o) {
  return LimitSpec::TokenBucket(o.limit, kPeriod, o.burst);
}

Health ToHealth(RedisHealth h) {
  switch (h) {
    case RedisHealth::kHealthy:
      return Health::kHealthy;
    case RedisHealth::kDegraded:
      return Health::kDegraded;
    case RedisHealth::kDown:
      break;
  }
  return Health::kDown;
}

// Collects a connection's health transitions (RedisOptions::
// on_health_change, on its client thread) for the monitor thread. The
// callback only appends under a mutex held for a push_back, so it never
// makes the client thread wait for long.
class HealthLog {
 public:
  // Installs the recorder on `options`; the log outlives the connection's
  // callbacks through the shared_ptr the callback holds.
  static std::shared_ptr<HealthLog> AttachTo(RedisOptions& options) {
    auto log = std::make_shared<HealthLog>();
    options.on_health_change = [log](const RedisHealthEvent& e) {
      log->Add(
          HealthEvent{SteadyNs(), ToHealth(e.from), ToHealth(e.to), e.reason});
    };
    return log;
  }

  std::vector<HealthEvent> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(events_, {});
  }

 private:
  void Add(HealthEvent e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }

  std::mutex mu_;
  std::vector<HealthEvent> events_;
};

// The connection's counters of the "C" line, with `during_run` as the
// commands sent during the run.
FinalStats ConnectionStats(const RedisStats& r, uint64_t during_run) {
  FinalStats f;
  f.commands_sent = r.commands_sent;
  f.replies = r.replies;
  f.flushes = r.flushes;
  f.commands_at_end_of_run = during_run;
  f.timeouts = r.timeouts;
  f.resets = static_cast<int64_t>(r.resets);
  f.late_replies = static_cast<int64_t>(r.late_replies);
  return f;
}

// The local and leased targets: decisions by key name, or for the hot key
// through a handle resolved once (--use_handle). Limiter and LeasedLimiter
// share this shape.
template <typename L, typename H>
class HandleTarget : public Target {
 public:
  int Decide(size_t i) override {
    if (i == 0 && handle_.valid()) {
      return limiter_->TryAcquire(handle_, 1).allowed ? 1 : 0;
    }
    return limiter_->TryAcquire(keys_.names[i], 1).allowed ? 1 : 0;
  }

 protected:
  HandleTarget(const KeySet& keys, std::unique_ptr<L> limiter)
      : keys_(keys), limiter_(std::move(limiter)) {}

  // Makes `t` ready: resolves the hot key's handle if asked to.
  template <typename T>
  static absl::StatusOr<std::unique_ptr<Target>> Ready(std::unique_ptr<T> t,
                                                       bool use_handle) {
    if (use_handle) {
      absl::StatusOr<H> h = t->limiter_->Resolve(t->keys_.names[0]);
      if (!h.ok()) return h.status();
      t->handle_ = *std::move(h);
    }
    return t;
  }

  const KeySet& keys_;
  std::unique_ptr<L> limiter_;
  H handle_;
};

class LocalTarget : public HandleTarget<Limiter, KeyHandle> {
 public:
  static absl::StatusOr<std::unique_ptr<Target>> Create(const DemoOptions& o,
                                                        const KeySet& keys) {
    absl::StatusOr<std::unique_ptr<Limiter>> limiter =
        Limiter::Create(LocalSpec(o));
    if (!limiter.ok()) return limiter.status();
    return Ready(std::unique_ptr<LocalTarget>(
                     new LocalTarget(keys, *std::move(limiter))),
                 o.use_handle);
  }
  int64_t Keys() override { return limiter_->key_count(); }
  int64_t CommandsSent() override { return 0; }
  void Stop() override { handle_ = KeyHandle(); }
  FinalStats Final() override { return FinalStats{}; }

 private:
  using HandleTarget::HandleTarget;
};

class LeasedTarget : public HandleTarget<LeasedLimiter, LeaseHandle> {
 public:
  static absl::StatusOr<std::unique_ptr<Target>> Create(
      const DemoOptions& o, const std::string& prefix, const KeySet& keys) {
    RedisOptions redis;
    redis.url = o.url;
    std::shared_ptr<HealthLog> health = HealthLog::AttachTo(redis);
    absl::StatusOr<std::shared_ptr<RedisConnection>> connection =
        RedisConnection::Create(redis);
    if (!connection.ok()) return connection.status();
    LeasedLimiterOptions options;
    options.connection = *connection;
    options.key_prefix = prefix;
    options.lease = MakeLeaseOptions(o);
    options.failure_mode = o.failure_mode;
    options.fallback_instances = o.FallbackInstances();
    // Under the run's prefix: runs sharing a Redis count apart.
    if (o.discover_instances) options.instance_group = "demo";
    options.outage_usage = o.outage_usage;
    options.start_empty = o.start_empty;
    absl::StatusOr<std::unique_ptr<LeasedLimiter>> limiter =
        LeasedLimiter::Create(SharedSpec(o), options);
    if (!limiter.ok()) return limiter.status();
    return Ready(
        std::unique_ptr<LeasedTarget>(new LeasedTarget(
            keys, *connection, std::move(health), *std::move(limiter))),
        o.use_handle);
  }
  int64_t Keys() override {
    return static_cast<int64_t>(limiter_->stats().keys);
  }
  int64_t CommandsSent() override {
    return static_cast<int64_t>(connection_->stats().commands_sent);
  }
  Health CurrentHealth() override { return ToHealth(connection_->health()); }
  std::vector<HealthEvent> TakeHealthEvents() override {
    return health_->Take();
  }
  void Stop() override {
    // Counters as the run ended, then the destructor returns every lease.
    before_ = limiter_->stats();
    handle_ = LeaseHandle();
    limiter_.reset();
  }
  FinalStats Final() override {
    // Lease counters as the run ended, connection counters now (after the
    // shutdown's returns).
    const LeaseStats& s = before_;
    FinalStats f = ConnectionStats(connection_->stats(), s.redis.commands_sent);
    f.lease_requests = s.lease_requests;
    f.tokens_granted = s.tokens_granted;
    f.tokens_returned = s.tokens_returned;
    f.denied_by_redis = s.denied_by_redis;
    f.charges = s.charges;
    f.tokens_charged = s.tokens_charged;
    f.redis_errors = s.redis_errors;
    f.keys = s.keys;
    f.spare_misses = s.spare_misses;
    return f;
  }

 private:
  LeasedTarget(const KeySet& keys, std::shared_ptr<RedisConnection> connection,
               std::shared_ptr<HealthLog> health,
               std::unique_ptr<LeasedLimiter> limiter)
      : HandleTarget(keys, std::move(limiter)),
        connection_(std::move(connection)),
        health_(std::move(health)) {}

  std::shared_ptr<RedisConnection> connection_;
  std::shared_ptr<HealthLog> health_;
  LeaseStats before_;
};

class DirectTarget : public Target {
 public:
  static absl::StatusOr<std::unique_ptr<Target>> Create(
      const DemoOptions& o, const std::string& prefix, const KeySet& keys) {
    DirectLimiterOptions options;
    options.redis.url = o.url;
    options.redis.command_timeout = absl::Seconds(2);
    // A call that gets no reply by the time the connection would be judged
    // down gets the failure mode's decision then (docs/operations.md: set a
    // short timeout with a mode), instead of holding its load thread for
    // the command timeout.
    options.timeout = options.redis.down_after;
    std::shared_ptr<HealthLog> health = HealthLog::AttachTo(options.redis);
    options.key_prefix = prefix;
    // While Redis is away the mode decides at once (and a call that was
    // waiting when it went gets the mode's answer at its deadline), so the
    // outage shows the mode rather than load threads stuck in calls.
    options.failure_mode = o.failure_mode;
    options.fallback_instances = o.FallbackInstances();
    if (o.discover_instances) options.instance_group = "demo";
    options.start_empty = o.start_empty;
    absl::StatusOr<std::unique_ptr<DirectLimiter>> limiter =
        DirectLimiter::Create(SharedSpec(o), options);
    if (!limiter.ok()) return limiter.status();
    return std::unique_ptr<Target>(
        new DirectTarget(keys, std::move(health), *std::move(limiter)));
  }
  int Decide(size_t i) override {
    absl::StatusOr<Decision> d = limiter_->TryAcquire(keys_.names[i], 1);
    if (!d.ok()) return -1;
    return d->allowed ? 1 : 0;
  }
  int64_t Keys() override { return 0; }
  int64_t CommandsSent() override {
    return static_cast<int64_t>(limiter_->connection().stats().commands_sent);
  }
  Health CurrentHealth() override {
    return ToHealth(limiter_->connection().health());
  }
  std::vector<HealthEvent> TakeHealthEvents() override {
    return health_->Take();
  }
  void Stop() override { stats_ = limiter_->connection().stats(); }
  FinalStats Final() override {
    return ConnectionStats(stats_, stats_.commands_sent);
  }

 private:
  DirectTarget(const KeySet& keys, std::shared_ptr<HealthLog> health,
               std::unique_ptr<DirectLimiter> limiter)
      : keys_(keys), health_(std::move(health)), limiter_(std::move(limiter)) {}

  const KeySet& keys_;
  std::shared_ptr<HealthLog> health_;
  std::unique_ptr<DirectLimiter> limiter_;
  RedisStats stats_;
};

}  // namespace

LimitSpec LocalSpec(const DemoOptions& o) {
  const int64_t per = o.limit / o.instances;
  const int64_t burst = std::max<int64_t>(1, o.burst / o.instances);
  switch (o.algorithm) {
    case Algorithm::kGcra:
      return LimitSpec::Gcra(per, kPeriod, burst);
    case Algorithm::kFixedWindow:
      return LimitSpec::FixedWindow(per, kPeriod);
    case Algorithm::kSlidingWindowCounter:
      return LimitSpec::SlidingWindowCounter(per, kPeriod);
    case Algorithm::kSlidingWindowLog:
      return LimitSpec::SlidingWindowLog(per, kPeriod);
    case Algorithm::kTokenBucket:
      break;
  }
  return LimitSpec::TokenBucket(per, kPeriod, burst);
}

LeaseOptions MakeLeaseOptions(const DemoOptions& o) {
  LeaseOptions l;
  l.lease_ttl = absl::Milliseconds(o.lease_ttl_ms);
  l.min_batch = std::min(l.min_batch, l.lease_ttl);
  l.idle_evict = std::max(absl::Milliseconds(o.idle_evict_ms), 2 * l.lease_ttl);
  l.max_lease_fraction = o.max_lease_fraction;
  l.cold_key_policy = o.cold_key_policy;
  l.local_share = o.local_share;
  l.charge_delay = absl::Milliseconds(o.charge_delay_ms);
  return l;
}

absl::StatusOr<std::unique_ptr<Target>> MakeTarget(const DemoOptions& o,
                                                   const std::string& prefix,
                                                   const KeySet& keys) {
  switch (o.mode) {
    case Mode::kLocal:
      return LocalTarget::Create(o, keys);
    case Mode::kLeased:
      return LeasedTarget::Create(o, prefix, keys);
    case Mode::kDirect:
      break;
  }
  return DirectTarget::Create(o, prefix, keys);
}

}  // namespace tokenlease::tools
