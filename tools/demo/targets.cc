// The decision maker of an instance (targets.h): the only file that calls
// the limiters.
#include "demo/targets.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"
#include "tokenlease/limiter.h"
#include "tokenlease/metrics.h"
#include "tokenlease/redis.h"

namespace tokenlease::tools {
namespace {

constexpr absl::Duration kPeriod = absl::Seconds(1);

// Health has RedisHealth's values (and kNone for no connection).
Health ToHealth(RedisHealth h) { return static_cast<Health>(h); }

// The connection's health transitions (RedisOptions::on_health_change, on
// its client thread), kept for the monitor thread; the callback holds the
// log, which so outlives the connection's callbacks. It only appends under
// a mutex, so it never makes the client thread wait for long.
struct HealthLog {
  std::mutex mu;
  std::vector<HealthEvent> events;

  static std::shared_ptr<HealthLog> AttachTo(RedisOptions& options) {
    auto log = std::make_shared<HealthLog>();
    options.on_health_change = [log](const RedisHealthEvent& e) {
      std::lock_guard<std::mutex> lock(log->mu);
      log->events.push_back(
          {SteadyNs(), ToHealth(e.from), ToHealth(e.to), e.reason});
    };
    return log;
  }
};

// "M" lines of a Prometheus text (the comments left out).
std::string MetricLines(const std::string& text) {
  std::string out;
  for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (l[0] != '#') absl::StrAppend(&out, "M ", l, "\n");
  }
  return out;
}

}  // namespace

LeaseOptions MakeLeaseOptions(const DemoOptions& o) {
  LeaseOptions l;
  l.lease_ttl = absl::Milliseconds(o.lease_ttl_ms);
  l.min_batch = std::min(l.min_batch, l.lease_ttl);
  l.idle_evict = std::max(absl::Milliseconds(o.idle_evict_ms), 2 * l.lease_ttl);
  l.max_lease_fraction = o.max_lease_fraction;
  l.slice_threshold = static_cast<int64_t>(o.slice_threshold);
  l.slice_single_thread = o.slice_single_thread;
  l.cluster_low_water = o.cluster_low_water;
  l.cold_key_policy = o.cold_key_policy;
  l.local_share = o.local_share;
  l.charge_delay = absl::Milliseconds(o.charge_delay_ms);
  return l;
}

struct Target::Impl {
  explicit Impl(const KeySet& k) : keys(k) {}
  const KeySet& keys;
  std::unique_ptr<Limiter> local;
  std::unique_ptr<LeasedLimiter> leased;
  std::unique_ptr<DirectLimiter> direct;
  // Leased mode: kept past the limiter, for the commands of its shutdown.
  std::shared_ptr<RedisConnection> connection;
  RedisConnection* redis = nullptr;  // leased and direct mode
  std::shared_ptr<HealthLog> health;
  Limiter::Handle local_hot;  // --use_handle
  LeasedLimiter::Handle leased_hot;
};

Target::Target(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Target::~Target() = default;

absl::StatusOr<std::unique_ptr<Target>> Target::Create(
    const DemoOptions& o, const std::string& prefix, const KeySet& keys) {
  auto t = std::make_unique<Impl>(keys);
  const LimitSpec shared = LimitSpec::TokenBucket(o.limit, kPeriod, o.burst);
  if (o.mode == Mode::kLocal) {
    absl::StatusOr<std::unique_ptr<Limiter>> l = Limiter::Create(LocalSpec(o));
    if (!l.ok()) return l.status();
    t->local = *std::move(l);
    if (o.use_handle) {
      absl::StatusOr<Limiter::Handle> h = t->local->Resolve(keys.names[0]);
      if (!h.ok()) return h.status();
      t->local_hot = *std::move(h);
    }
  } else if (o.mode == Mode::kLeased) {
    RedisOptions redis;
    redis.url = o.url;
    redis.tls = TlsOptions(o);
    t->health = HealthLog::AttachTo(redis);
    absl::StatusOr<std::shared_ptr<RedisConnection>> c =
        RedisConnection::Create(redis);
    if (!c.ok()) return c.status();
    t->connection = *c;
    LeasedLimiterOptions options;
    options.connection = *c;
    options.key_prefix = prefix;
    options.lease = MakeLeaseOptions(o);
    options.failure_mode = o.failure_mode;
    options.fallback_instances = o.FallbackInstances();
    // Under the run's prefix: runs sharing a Redis count apart.
    if (o.discover_instances) options.instance_group = "demo";
    options.outage_usage = o.outage_usage;
    options.start_empty = o.start_empty;
    absl::StatusOr<std::unique_ptr<LeasedLimiter>> l =
        LeasedLimiter::Create(shared, options);
    if (!l.ok()) return l.status();
    t->leased = *std::move(l);
    t->redis = t->connection.get();
    if (o.use_handle) {
      absl::StatusOr<LeasedLimiter::Handle> h =
          t->leased->Resolve(keys.names[0]);
      if (!h.ok()) return h.status();
      t->leased_hot = *std::move(h);
    }
  } else {
    DirectLimiterOptions options;
    options.redis.url = o.url;
    options.redis.tls = TlsOptions(o);
    options.redis.command_timeout = absl::Seconds(2);
    // A call that gets no reply by the time the connection would be judged
    // down gets the failure mode's decision then (docs/operations.md),
    // instead of holding its load thread for the command timeout.
    options.timeout = options.redis.down_after;
    t->health = HealthLog::AttachTo(options.redis);
    options.key_prefix = prefix;
    options.failure_mode = o.failure_mode;
    options.fallback_instances = o.FallbackInstances();
    if (o.discover_instances) options.instance_group = "demo";
    options.start_empty = o.start_empty;
    absl::StatusOr<std::unique_ptr<DirectLimiter>> l =
        DirectLimiter::Create(shared, options);
    if (!l.ok()) return l.status();
    t->direct = *std::move(l);
    t->redis = &t->direct->connection();
  }
  return std::unique_ptr<Target>(new Target(std::move(t)));
}

bool Target::Decide(size_t i) {
  Impl& t = *impl_;
  if (t.local != nullptr) {
    return (i == 0 && t.local_hot.valid()
                ? t.local->TryAcquire(t.local_hot, 1)
                : t.local->TryAcquire(t.keys.names[i], 1))
        .allowed;
  }
  if (t.leased != nullptr) {
    return (i == 0 && t.leased_hot.valid()
                ? t.leased->TryAcquire(t.leased_hot, 1)
                : t.leased->TryAcquire(t.keys.names[i], 1))
        .allowed;
  }
  return t.direct->TryAcquire(t.keys.names[i], 1).allowed;
}

int64_t Target::Keys() {
  if (impl_->local != nullptr) return impl_->local->key_count();
  if (impl_->leased != nullptr) {
    return static_cast<int64_t>(impl_->leased->stats().keys);
  }
  return 0;
}

int64_t Target::CommandsSent() {
  if (impl_->redis == nullptr) return 0;
  // A direct call made on a caller lane is written by the calling thread,
  // not counted in commands_sent.
  const RedisStats s = impl_->redis->stats();
  return static_cast<int64_t>(s.commands_sent + s.lane_calls);
}

Health Target::CurrentHealth() {
  return impl_->redis == nullptr ? Health::kNone
                                 : ToHealth(impl_->redis->health());
}

std::vector<HealthEvent> Target::TakeHealthEvents() {
  if (impl_->health == nullptr) return {};
  std::lock_guard<std::mutex> lock(impl_->health->mu);
  return std::exchange(impl_->health->events, {});
}

std::string Target::Stop(int64_t* commands) {
  Impl& t = *impl_;
  PrometheusWriter w;
  if (t.leased != nullptr) w.Add("demo", t.leased->stats()).IgnoreError();
  if (t.direct != nullptr) w.Add("demo", t.direct->stats()).IgnoreError();
  t.local_hot = Limiter::Handle();
  t.leased_hot = LeasedLimiter::Handle();
  t.leased.reset();  // returns every lease
  *commands = CommandsSent();
  return MetricLines(w.Text());
}

RedisTlsOptions TlsOptions(const DemoOptions& o) {
  RedisTlsOptions t;
  t.ca_file = o.tls_ca_file;
  t.cert_file = o.tls_cert_file;
  t.key_file = o.tls_key_file;
  return t;
}

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

}  // namespace tokenlease::tools
