// PrometheusWriter::Add for a limit shared through Redis (SharedLimitStats,
// either mode): the series every mode has (core/prometheus_text.h), then
// this file's table of the Redis modes' series, leased mode's own and the
// connection's, then the connection's labelled series. docs/metrics.md
// lists them.
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/prometheus_text.h"
#include "tokenlease/metrics.h"
#include "tokenlease/shared_limit.h"

namespace tokenlease {
namespace internal {
namespace {

using S = SharedLimitStats;

// Which snapshots a series belongs to.
enum class Part : uint8_t {
  kShared,      // both Redis modes
  kLease,       // leased mode
  kConnection,  // with_connection
};

// One unlabelled series: a counter (`count`) or a gauge (`gauge`).
struct Series {
  Part part;
  const char* name;
  const char* help;
  uint64_t (*count)(const S&);
  double (*gauge)(const S&);
};

// Every unlabelled series, in the order they are written (docs/metrics.md
// has the same tables).
constexpr Series kSeries[] = {
    {Part::kShared, "tokenlease_redis_calls_total",
     "Script calls this limiter sent to Redis (leased mode: batch calls of 1 "
     "to 64 items).",
     [](const S& s) { return s.redis_calls; }, nullptr},
    {Part::kShared, "tokenlease_decisions_per_redis_call",
     "Decisions per script call since the limiter was created.", nullptr,
     [](const S& s) { return s.decisions_per_call; }},
    {Part::kShared, "tokenlease_redis_errors_total",
     "Requests (leased mode: lease, charge and return items) that got no "
     "answer or an error from Redis.",
     [](const S& s) { return s.redis_errors; }, nullptr},
    {Part::kShared, "tokenlease_redis_key_errors_total",
     "Requests Redis answered with an error for the key (a wrong type, a "
     "corrupt value, another spec's state).",
     [](const S& s) { return s.key_errors; }, nullptr},
    {Part::kShared, "tokenlease_instances",
     "Instances the fail_local share is divided by now.", nullptr,
     [](const S& s) { return static_cast<double>(s.instances); }},
    {Part::kShared, "tokenlease_announcements_total",
     "Instance announcements Redis answered.",
     [](const S& s) { return s.announcements; }, nullptr},
    {Part::kShared, "tokenlease_announce_failures_total",
     "Instance announcements that failed.",
     [](const S& s) { return s.announce_failures; }, nullptr},
    {Part::kLease, "tokenlease_lease_requests_total", "Lease requests sent.",
     [](const S& s) { return s.lease.lease_requests; }, nullptr},
    {Part::kLease, "tokenlease_leases_granted_total",
     "Lease requests answered with tokens.",
     [](const S& s) { return s.lease.leases_granted; }, nullptr},
    {Part::kLease, "tokenlease_lease_refusals_total",
     "Lease requests Redis answered with nothing.",
     [](const S& s) { return s.lease.denied_by_redis; }, nullptr},
    {Part::kLease, "tokenlease_leases_expired_total",
     "Leases that reached their lifetime.",
     [](const S& s) { return s.lease.leases_expired; }, nullptr},
    {Part::kLease, "tokenlease_leases_returned_total",
     "Leases returned before their lifetime (ReturnAll, the limiter's end).",
     [](const S& s) { return s.lease.leases_returned; }, nullptr},
    {Part::kLease, "tokenlease_tokens_granted_total",
     "Tokens received in leases.",
     [](const S& s) { return s.lease.tokens_granted; }, nullptr},
    {Part::kLease, "tokenlease_tokens_expired_total",
     "Tokens expired leases still held (given back).",
     [](const S& s) { return s.lease.tokens_expired; }, nullptr},
    {Part::kLease, "tokenlease_tokens_returned_total",
     "Tokens Redis took back from returned and expired leases.",
     [](const S& s) { return s.lease.tokens_returned; }, nullptr},
    {Part::kLease, "tokenlease_charges_total",
     "Charge items for tokens admitted without a lease.",
     [](const S& s) { return s.lease.charges; }, nullptr},
    {Part::kLease, "tokenlease_tokens_charged_total",
     "Tokens admitted without a lease and charged to Redis.",
     [](const S& s) { return s.lease.tokens_charged; }, nullptr},
    {Part::kLease, "tokenlease_spare_misses_total",
     "New keys that allocated on the deciding thread.",
     [](const S& s) { return s.lease.spare_misses; }, nullptr},
    {Part::kLease, "tokenlease_sliced_keys",
     "Hot keys whose lease is spread over per-thread slices.", nullptr,
     [](const S& s) { return double(s.lease.sliced_keys); }},
    {Part::kLease, "tokenlease_near_limit_keys",
     "Keys holding a lease or a refusal whose last reply said at most (1 - "
     "near_limit_fraction) x burst is left.",
     nullptr, [](const S& s) { return double(s.lease.near_limit_keys); }},
    {Part::kLease, "tokenlease_held_tokens",
     "Tokens of unexpired leases this instance may still spend.", nullptr,
     [](const S& s) { return double(s.lease.held_tokens); }},
    {Part::kLease, "tokenlease_credit_tokens",
     "Unspent local credit of keys without a lease.", nullptr,
     [](const S& s) { return double(s.lease.credit_tokens); }},
    {Part::kLease, "tokenlease_uncharged_tokens",
     "Tokens admitted that Redis has not been charged for yet.", nullptr,
     [](const S& s) { return double(s.lease.uncharged_tokens); }},
    {Part::kLease, "tokenlease_overshoot_tokens",
     "Worst-case overshoot of the shared limit from this instance now: held "
     "+ credit + uncharged tokens.",
     nullptr, [](const S& s) { return double(s.lease.overshoot_tokens); }},
    {Part::kConnection, "tokenlease_redis_commands_total",
     "Commands written to Redis by the limiter's connection (resends "
     "included).",
     [](const S& s) { return s.redis.commands_sent; }, nullptr},
    {Part::kConnection, "tokenlease_redis_replies_total",
     "Replies received in time (error replies included).",
     [](const S& s) { return s.redis.replies; }, nullptr},
    {Part::kConnection, "tokenlease_redis_timeouts_total",
     "Commands failed with DeadlineExceeded.",
     [](const S& s) { return s.redis.timeouts; }, nullptr},
    {Part::kConnection, "tokenlease_redis_late_replies_total",
     "Replies that came after their command timed out.",
     [](const S& s) { return s.redis.late_replies; }, nullptr},
    {Part::kConnection, "tokenlease_redis_connects_total",
     "Connections whose login and PING were answered.",
     [](const S& s) { return s.redis.connects; }, nullptr},
    {Part::kConnection, "tokenlease_redis_connect_failures_total",
     "Connect or login attempts that failed.",
     [](const S& s) { return s.redis.connect_failures; }, nullptr},
    {Part::kConnection, "tokenlease_redis_script_reloads_total",
     "NOSCRIPT replies answered by resending the script as EVAL.",
     [](const S& s) { return s.redis.script_reloads; }, nullptr},
    {Part::kConnection, "tokenlease_redis_flushes_total",
     "Pipelined writes (commands_total / flushes_total is the mean pipeline "
     "depth).",
     [](const S& s) { return s.redis.flushes; }, nullptr},
    {Part::kConnection, "tokenlease_redis_resets_total",
     "Connections reset because nothing answered for dead_after.",
     [](const S& s) { return s.redis.resets; }, nullptr},
    {Part::kConnection, "tokenlease_redis_data_losses_total",
     "Times Redis was seen to have lost its tokenlease state.",
     [](const S& s) { return s.redis.data_losses; }, nullptr},
    {Part::kConnection, "tokenlease_redis_moved_total",
     "Redis Cluster: MOVED redirects followed (the slot map is read again).",
     [](const S& s) { return s.redis.moved; }, nullptr},
    {Part::kConnection, "tokenlease_redis_asked_total",
     "Redis Cluster: ASK redirects followed (a slot being migrated).",
     [](const S& s) { return s.redis.asked; }, nullptr},
    {Part::kConnection, "tokenlease_redis_topology_refreshes_total",
     "Redis Cluster: slot map reads sent (CLUSTER SLOTS).",
     [](const S& s) { return s.redis.topology_refreshes; }, nullptr},
    {Part::kConnection, "tokenlease_redis_nodes",
     "Primaries the connection sends to (a cluster's, from its slot map; 1 "
     "elsewhere).",
     nullptr, [](const S& s) { return double(s.redis.nodes); }},
    {Part::kConnection, "tokenlease_redis_nodes_down",
     "Redis Cluster: primaries of the slot map that are down now.", nullptr,
     [](const S& s) { return double(s.redis.nodes_down); }},
    {Part::kConnection, "tokenlease_redis_sentinel_queries_total",
     "Sentinel: times the sentinels were asked for the primary.",
     [](const S& s) { return s.redis.sentinel_queries; }, nullptr},
    {Part::kConnection, "tokenlease_redis_role_refusals_total",
     "Sentinel: servers refused as no primary (ROLE, READONLY, LOADING).",
     [](const S& s) { return s.redis.role_refusals; }, nullptr},
    {Part::kConnection, "tokenlease_redis_lane_calls_total",
     "Direct mode: blocking calls answered on a caller lane (the caller's "
     "own synchronous connection).",
     [](const S& s) { return s.redis.lane_calls; }, nullptr},
    {Part::kConnection, "tokenlease_redis_lane_connects_total",
     "Direct mode: caller lanes connected and logged in.",
     [](const S& s) { return s.redis.lane_connects; }, nullptr},
    {Part::kConnection, "tokenlease_redis_lane_errors_total",
     "Direct mode: caller lane calls or connects that failed (the lane is "
     "closed).",
     [](const S& s) { return s.redis.lane_errors; }, nullptr},
    {Part::kConnection, "tokenlease_redis_lanes_open",
     "Direct mode: caller lanes connected now.", nullptr,
     [](const S& s) { return double(s.redis.lanes_open); }},
    {Part::kConnection, "tokenlease_redis_durability_waits_total",
     "Durable grants: WAIT commands sent after script writes.",
     [](const S& s) { return s.redis.durability_waits; }, nullptr},
    {Part::kConnection, "tokenlease_redis_not_durable_total",
     "Durable grants: script replies refused because too few replicas "
     "confirmed them in time.",
     [](const S& s) { return s.redis.not_durable; }, nullptr},
};

// The connection's labelled series: health, transitions, the round-trip
// histogram and the data-loss marker.
void AddConnectionDetail(MetricFamilies& f, const MetricLabels& labels,
                         const RedisStats& s) {
  static constexpr RedisHealth kStates[] = {
      RedisHealth::kHealthy, RedisHealth::kDegraded, RedisHealth::kDown};
  for (RedisHealth h : kStates) {
    MetricLabels l = labels;
    l.emplace_back("state", RedisHealthName(h));
    f.Gauge("tokenlease_redis_health",
            "1 for the connection's health state now, 0 for the others.", l,
            int64_t{s.health == h ? 1 : 0});
  }
  const uint64_t into[] = {s.healthy, s.degraded, s.down};
  for (size_t i = 0; i < 3; ++i) {
    MetricLabels l = labels;
    l.emplace_back("to", RedisHealthName(kStates[i]));
    f.Counter("tokenlease_redis_health_transitions_total",
              "Health transitions, by the state entered.", l, into[i]);
  }
  f.Histogram("tokenlease_redis_round_trip_seconds",
              "Round trips from a command's write to its reply, on the "
              "client thread.",
              labels, s.round_trip);
  if (s.state_since_us >= 0) {
    f.Gauge("tokenlease_redis_state_since_timestamp_seconds",
            "When this Redis's tokenlease state began (Unix time, Redis's "
            "clock): the data-loss marker.",
            labels, static_cast<double>(s.state_since_us) / 1e6);
  }
}

}  // namespace
}  // namespace internal

absl::Status PrometheusWriter::Add(std::string_view limit,
                                   const SharedLimitStats& s,
                                   bool with_connection) {
  using internal::Part;
  internal::MetricFamilies& f = *families_;
  absl::StatusOr<internal::MetricLabels> labels = f.ClaimLimit(limit);
  if (!labels.ok()) return labels.status();
  internal::AddLimiterSeries(f, *labels, s);
  for (const internal::Series& series : internal::kSeries) {
    if ((series.part == Part::kLease && s.mode != LimiterMode::kLeased) ||
        (series.part == Part::kConnection && !with_connection)) {
      continue;
    }
    if (series.count != nullptr) {
      f.Counter(series.name, series.help, *labels, series.count(s));
    } else {
      f.Gauge(series.name, series.help, *labels, series.gauge(s));
    }
  }
  if (with_connection) internal::AddConnectionDetail(f, *labels, s.redis);
  return absl::OkStatus();
}

}  // namespace tokenlease
