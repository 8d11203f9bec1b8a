#include "shared/shared_checks.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/absl_view.h"
#include "core/options_checks.h"
#include "redis/instance_census.h"
#include "redis/script_call.h"
#include "shared/local_share.h"
#include "tokenlease/limiter.h"

namespace tokenlease {

const char* FailureModeName(FailureMode m) {
  switch (m) {
    case FailureMode::kFailClosed:
      return "fail_closed";
    case FailureMode::kFailOpen:
      return "fail_open";
    case FailureMode::kFailLocal:
      return "fail_local";
  }
  return "unknown";
}

absl::Status SharedLimitOptions::Validate() const {
  return internal::ValidateSharedOptions(*this, "SharedLimitOptions");
}

namespace internal {
namespace {

std::string Field(std::string_view owner, std::string_view field) {
  return absl::StrCat(AbslView(owner), ".", AbslView(field));
}

// The largest fallback count a share must be valid for.
int32_t MostInstances(const SharedLimitOptions& options) {
  return options.instance_group.empty() ? options.fallback_instances
                                        : InstanceCensus::kMaxInstances;
}

int64_t Mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// Why band `i` of `spec` cannot take over the state band `i` of `old`
// wrote, or "" if it can.
std::string BandChange(const Band& was, const Band& now) {
  if (was.algorithm != now.algorithm) {
    return absl::StrCat("its algorithm changes from ",
                        AlgorithmName(was.algorithm), " to ",
                        AlgorithmName(now.algorithm));
  }
  const int64_t period = absl::ToInt64Nanoseconds(now.period);
  const bool same_period = was.period == now.period;
  const bool same_offset =
      Mod(absl::ToInt64Nanoseconds(was.window_offset), period) ==
      Mod(absl::ToInt64Nanoseconds(now.window_offset), period);
  switch (now.algorithm) {
    case Algorithm::kTokenBucket:
      if (was.refill != now.refill) return "its refill style changes";
      return "";
    case Algorithm::kGcra:
      return "";
    case Algorithm::kFixedWindow:
      if (!same_period || was.anchor != now.anchor || !same_offset) {
        return "its window changes length or alignment";
      }
      return "";
    case Algorithm::kSlidingWindowCounter:
      if (!same_period || !same_offset) {
        return "its window changes length or alignment";
      }
      return "";
    case Algorithm::kSlidingWindowLog: {
      const int32_t was_entries =
          was.max_log_entries == 0 ? 256 : was.max_log_entries;
      const int32_t now_entries =
          now.max_log_entries == 0 ? 256 : now.max_log_entries;
      // Quantised logs record quantum indexes, exact ones times: the
      // entries in Redis mean one or the other.
      if (!same_period || !same_offset ||
          was.log_granularity != now.log_granularity ||
          was_entries != now_entries ||
          (was.limit <= was_entries) != (now.limit <= now_entries)) {
        return "its log changes period, alignment, granularity or entry "
               "bound";
      }
      return "";
    }
  }
  return "";
}

}  // namespace

absl::Status ValidateSharedOptions(const SharedLimitOptions& o,
                                   std::string_view owner) {
  return FirstError({
      ValidateLimiterOptions(o, owner),
      ValidateKeyPrefix(Field(owner, "key_prefix"), o.key_prefix),
      static_cast<uint8_t>(o.failure_mode) >
              static_cast<uint8_t>(FailureMode::kFailLocal)
          ? absl::InvalidArgumentError(absl::StrCat(
                Field(owner, "failure_mode"), " is ",
                static_cast<int>(o.failure_mode),
                "; it must be kFailClosed, kFailOpen or kFailLocal"))
          : absl::OkStatus(),
      CheckInteger(Field(owner, "fallback_instances"), o.fallback_instances, 1,
                   InstanceCensus::kMaxInstances),
      o.instance_group.empty()
          ? absl::OkStatus()
          : ValidateKeyPrefix(Field(owner, "instance_group"), o.instance_group),
      CheckDuration(Field(owner, "announce_ttl"), o.announce_ttl,
                    absl::Milliseconds(100), absl::Minutes(10)),
      static_cast<uint8_t>(o.outage_usage) >
              static_cast<uint8_t>(OutageUsage::kCharge)
          ? absl::InvalidArgumentError(
                absl::StrCat(Field(owner, "outage_usage"), " is ",
                             static_cast<int>(o.outage_usage),
                             "; it must be kForget or kCharge"))
          : absl::OkStatus(),
      CheckDuration(Field(owner, "stats_interval"), o.stats_interval,
                    absl::Milliseconds(1), absl::Hours(1)),
      o.connection == nullptr ? o.redis.Validate() : absl::OkStatus(),
  });
}

absl::Status CheckSharedLimit(const LimitSpec& spec,
                              const SharedLimitOptions& o,
                              std::string_view owner, LimiterMode mode) {
  if (absl::Status s = ValidateScriptSpec(spec); !s.ok()) return s;
  for (size_t i = 0; o.start_empty && i < spec.bands.size(); ++i) {
    if (spec.bands[i].algorithm == Algorithm::kSlidingWindowLog) {
      return absl::InvalidArgumentError(absl::StrCat(
          Field(owner, "start_empty"), " is true, but bands[", i,
          "] is a sliding_log limit, whose state cannot start drained; use "
          "start_empty = false for it"));
    }
  }
  if (o.start_empty) {
    const std::string url =
        o.connection != nullptr ? o.connection->endpoint() : o.redis.url;
    if (absl::StartsWith(url, "redis+cluster://")) {
      return absl::InvalidArgumentError(absl::StrCat(
          Field(owner, "start_empty"),
          " is true, but the endpoint is a Redis Cluster, where no data-loss "
          "marker is kept (each node would need its own); use start_empty = "
          "false, or a single or sentinel endpoint (docs/operations.md)"));
    }
  }
  if (o.outage_usage == OutageUsage::kCharge) {
    if (mode == LimiterMode::kDirect) {
      return absl::InvalidArgumentError(absl::StrCat(
          Field(owner, "outage_usage"),
          " is kCharge, but a direct limiter keeps no usage between calls to "
          "charge later; use OutageUsage::kForget, or leased mode"));
    }
    for (size_t i = 0; i < spec.bands.size(); ++i) {
      const Algorithm a = spec.bands[i].algorithm;
      if (a != Algorithm::kTokenBucket && a != Algorithm::kGcra) {
        return absl::InvalidArgumentError(absl::StrCat(
            Field(owner, "outage_usage"), " is kCharge, but bands[", i,
            "] is a ", AlgorithmName(a),
            " limit: an outage's usage would be charged to a window after "
            "the one it was admitted in; use OutageUsage::kForget for window "
            "limits"));
      }
    }
  }
  if (o.failure_mode == FailureMode::kFailLocal) {
    // The share must be a limit the local engine can keep exactly: the
    // configured count's, and with discovery the smallest share too.
    LimiterOptions local = o;
    for (int32_t instances : {o.fallback_instances, MostInstances(o)}) {
      absl::StatusOr<std::unique_ptr<Limiter>> share =
          Limiter::Create(ShareOfLimit(spec, instances), local);
      if (!share.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            Field(owner, "failure_mode"),
            " is kFailLocal, but the share of 1 of ", instances,
            " instances is no limit the local engine takes (",
            share.status().message(), "); choose another fallback_instances",
            o.instance_group.empty() ? "" : " or no instance_group"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSpecUpdate(const LimitSpec& old, const LimitSpec& spec,
                             const SharedLimitOptions& options,
                             std::string_view who, LimiterMode mode) {
  if (absl::Status s = CheckSharedLimit(spec, options, who, mode); !s.ok()) {
    return s;
  }
  if (old.bands.size() != spec.bands.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        AbslView(who), ": the spec has ", spec.bands.size(),
        " bands; it must keep the ", old.bands.size(),
        " of the spec in force (Redis could not take the keys' state over): "
        "give a limit with other bands its own key_prefix"));
  }
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    const std::string why = BandChange(old.bands[i], spec.bands[i]);
    if (!why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          AbslView(who), ": bands[", i, "] cannot be updated: ", why,
          ", and Redis could not take the keys' state over (docs/"
          "lua-protocol.md, \"The stamp\"); give the new limit its own "
          "key_prefix"));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace tokenlease
