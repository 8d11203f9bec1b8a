// PrometheusWriter::Add for a leased limiter's snapshot (LeaseStats): the
// series of docs/metrics.md, on the writer of src/redis/prometheus_text.h.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis/prometheus_text.h"
#include "tokenlease/leased.h"
#include "tokenlease/metrics.h"

namespace tokenlease {

absl::Status PrometheusWriter::Add(std::string_view limit, const LeaseStats& s,
                                   bool with_connection) {
  internal::MetricFamilies& f = *families_;
  absl::StatusOr<internal::MetricLabels> labels = f.ClaimLimit(limit);
  if (!labels.ok()) return labels.status();
  const internal::MetricLabels& l = *labels;
  using S = DecisionSource;
  internal::AddDecisionSeries(f, l, s.decisions,
                              {{S::kLease, true},
                               {S::kLocalCredit, true},
                               {S::kFailOpen, true},
                               {S::kFallback, true},
                               {S::kShadow, true},
                               {S::kLease, false},
                               {S::kFallback, false},
                               {S::kKeyLimit, false},
                               {S::kInvalidArgument, false}});
  f.Counter("tokenlease_fail_closed_denials_total",
            "Denials because Redis could not decide and the failure mode is "
            "fail_closed (a part of the lease or direct denials).",
            l, s.fail_closed_denied);
  f.Counter("tokenlease_shadow_denials_total",
            "Requests shadow mode admitted that enforcing would have denied.",
            l, s.shadow_denied);
  f.Counter("tokenlease_redis_calls_total",
            "Script calls this limiter sent to Redis (leased mode: batch "
            "calls of 1 to 64 items).",
            l, s.batch_calls);
  f.Gauge("tokenlease_decisions_per_redis_call",
          "Decisions per script call since the limiter was created.", l,
          s.decisions_per_call);
  f.Counter("tokenlease_redis_call_errors_total",
            "Calls (leased mode: lease, release and charge items) that got "
            "no answer or an error from Redis.",
            l, s.redis_errors);
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
            "Charge calls for tokens admitted without a lease.", l, s.charges);
  f.Counter("tokenlease_tokens_charged_total",
            "Tokens admitted without a lease and charged to Redis.", l,
            s.tokens_charged);
  f.Counter("tokenlease_spare_misses_total",
            "New keys that allocated on the deciding thread.", l,
            s.spare_misses);
  f.Gauge("tokenlease_keys", "Keys in memory.", l,
          static_cast<int64_t>(s.keys));
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
  f.Gauge("tokenlease_instances",
          "Instances the fail_local share is divided by now.", l,
          int64_t{s.instances});
  f.Counter("tokenlease_announcements_total",
            "Instance announcements Redis answered.", l, s.announcements);
  f.Counter("tokenlease_announce_failures_total",
            "Instance announcements that failed.", l, s.announce_failures);
  if (with_connection) internal::AddConnectionSeries(f, l, s.redis);
  return absl::OkStatus();
}

}  // namespace tokenlease
