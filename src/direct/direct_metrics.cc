// PrometheusWriter::Add for a direct limiter's snapshot (DirectStats): the
// series of docs/metrics.md, on the writer of src/redis/prometheus_text.h.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "redis/prometheus_text.h"
#include "tokenlease/direct.h"
#include "tokenlease/metrics.h"

namespace tokenlease {

absl::Status PrometheusWriter::Add(std::string_view limit, const DirectStats& s,
                                   bool with_connection) {
  internal::MetricFamilies& f = *families_;
  absl::StatusOr<internal::MetricLabels> labels = f.ClaimLimit(limit);
  if (!labels.ok()) return labels.status();
  const internal::MetricLabels& l = *labels;
  using S = DecisionSource;
  internal::AddDecisionSeries(f, l, s.decisions,
                              {{S::kDirect, true},
                               {S::kFailOpen, true},
                               {S::kFallback, true},
                               {S::kDirect, false},
                               {S::kFallback, false}});
  f.Counter("tokenlease_fail_closed_denials_total",
            "Denials because Redis could not decide and the failure mode is "
            "fail_closed (a part of the lease or direct denials).",
            l, s.fail_closed_denied);
  f.Counter("tokenlease_redis_calls_total",
            "Script calls this limiter sent to Redis (leased mode: batch "
            "calls of 1 to 64 items).",
            l, s.redis_calls);
  f.Gauge("tokenlease_decisions_per_redis_call",
          "Decisions per script call since the limiter was created.", l,
          s.decisions_per_call);
  f.Counter("tokenlease_redis_call_errors_total",
            "Calls (leased mode: lease, release and charge items) that got "
            "no answer or an error from Redis.",
            l, s.redis_failures);
  f.Counter("tokenlease_redis_key_errors_total",
            "Direct calls Redis answered with an error for the key (a wrong "
            "type, a corrupt value).",
            l, s.key_errors);
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
