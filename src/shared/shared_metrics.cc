// PrometheusWriter::Add for a limit shared through Redis (SharedLimitStats,
// either mode): the series every mode has (core/prometheus_text.h), those of
// both Redis modes, leased mode's own, and the connection's. docs/metrics.md
// lists them.
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/prometheus_text.h"
#include "tokenlease/metrics.h"
#include "tokenlease/shared_limit.h"

namespace tokenlease {
namespace internal {
namespace {

void AddSharedSeries(MetricFamilies& f, const MetricLabels& l,
                     const SharedLimitStats& s) {
  f.Counter("tokenlease_redis_calls_total",
            "Script calls this limiter sent to Redis (leased mode: batch "
            "calls of 1 to 64 items).",
            l, s.redis_calls);
  f.Gauge("tokenlease_decisions_per_redis_call",
          "Decisions per script call since the limiter was created.", l,
          s.decisions_per_call);
  f.Counter("tokenlease_redis_errors_total",
            "Requests (leased mode: lease, charge and return items) that got "
            "no answer or an error from Redis.",
            l, s.redis_errors);
  f.Counter("tokenlease_redis_key_errors_total",
            "Requests Redis answered with an error for the key (a wrong "
            "type, a corrupt value, another spec's state).",
            l, s.key_errors);
  f.Gauge("tokenlease_instances",
          "Instances the fail_local share is divided by now.", l,
          int64_t{s.instances});
  f.Counter("tokenlease_announcements_total",
            "Instance announcements Redis answered.", l, s.announcements);
  f.Counter("tokenlease_announce_failures_total",
            "Instance announcements that failed.", l, s.announce_failures);
}

void AddLeaseSeries(MetricFamilies& f, const MetricLabels& l,
                    const LeaseStats& s) {
  f.Counter("tokenlease_lease_requests_total", "Lease requests sent.", l,
            s.lease_requests);
  f.Counter("tokenlease_leases_granted_total",
            "Lease requests answered with tokens.", l, s.leases_granted);
  f.Counter("tokenlease_lease_refusals_total",
            "Lease requests Redis answered with nothing.", l,
            s.denied_by_redis);
  f.Counter("tokenlease_leases_expired_total",
            "Leases that reached their lifetime.", l, s.leases_expired);
  f.Counter("tokenlease_leases_returned_total",
            "Leases returned before their lifetime (ReturnAll, the limiter's "
            "end).",
            l, s.leases_returned);
  f.Counter("tokenlease_tokens_granted_total", "Tokens received in leases.", l,
            s.tokens_granted);
  f.Counter("tokenlease_tokens_expired_total",
            "Tokens expired leases still held (given back).", l,
            s.tokens_expired);
  f.Counter("tokenlease_tokens_returned_total",
            "Tokens Redis took back from returned and expired leases.", l,
            s.tokens_returned);
  f.Counter("tokenlease_charges_total",
            "Charge items for tokens admitted without a lease.", l, s.charges);
  f.Counter("tokenlease_tokens_charged_total",
            "Tokens admitted without a lease and charged to Redis.", l,
            s.tokens_charged);
  f.Counter("tokenlease_spare_misses_total",
            "New keys that allocated on the deciding thread.", l,
            s.spare_misses);
  f.Gauge("tokenlease_near_limit_keys",
          "Keys holding a lease or a refusal whose last reply said at most "
          "(1 - near_limit_fraction) x burst is left.",
          l, static_cast<int64_t>(s.near_limit_keys));
  f.Gauge("tokenlease_held_tokens",
          "Tokens of unexpired leases this instance may still spend.", l,
          s.held_tokens);
  f.Gauge("tokenlease_credit_tokens",
          "Unspent local credit of keys without a lease.", l, s.credit_tokens);
  f.Gauge("tokenlease_uncharged_tokens",
          "Tokens admitted that Redis has not been charged for yet.", l,
          s.uncharged_tokens);
  f.Gauge("tokenlease_overshoot_tokens",
          "Worst-case overshoot of the shared limit from this instance now: "
          "held + credit + uncharged tokens.",
          l, s.overshoot_tokens);
}

void AddConnectionSeries(MetricFamilies& f, const MetricLabels& labels,
                         const RedisStats& s) {
  f.Counter("tokenlease_redis_commands_total",
            "Commands written to Redis by the limiter's connection (resends "
            "included).",
            labels, s.commands_sent);
  f.Counter("tokenlease_redis_replies_total",
            "Replies received in time (error replies included).", labels,
            s.replies);
  f.Counter("tokenlease_redis_timeouts_total",
            "Commands failed with DeadlineExceeded.", labels, s.timeouts);
  f.Counter("tokenlease_redis_late_replies_total",
            "Replies that came after their command timed out.", labels,
            s.late_replies);
  f.Counter("tokenlease_redis_connects_total",
            "Connections whose login and PING were answered.", labels,
            s.connects);
  f.Counter("tokenlease_redis_connect_failures_total",
            "Connect or login attempts that failed.", labels,
            s.connect_failures);
  f.Counter("tokenlease_redis_script_reloads_total",
            "NOSCRIPT replies answered by resending the script as EVAL.",
            labels, s.script_reloads);
  f.Counter("tokenlease_redis_flushes_total",
            "Pipelined writes (commands_total / flushes_total is the mean "
            "pipeline depth).",
            labels, s.flushes);
  f.Counter("tokenlease_redis_resets_total",
            "Connections reset because nothing answered for dead_after.",
            labels, s.resets);
  f.Counter("tokenlease_redis_data_losses_total",
            "Times Redis was seen to have lost its tokenlease state.", labels,
            s.data_losses);
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
  internal::MetricFamilies& f = *families_;
  absl::StatusOr<internal::MetricLabels> labels = f.ClaimLimit(limit);
  if (!labels.ok()) return labels.status();
  internal::AddLimiterSeries(f, *labels, s);
  internal::AddSharedSeries(f, *labels, s);
  if (s.mode == LimiterMode::kLeased) {
    internal::AddLeaseSeries(f, *labels, s.lease);
  }
  if (with_connection) internal::AddConnectionSeries(f, *labels, s.redis);
  return absl::OkStatus();
}

}  // namespace tokenlease
