// src/shared: what direct and leased mode share above the Redis transport
// (the public shared_limit.h): the checks of the shared options and of a
// spec at Create and UpdateSpec (this file), the failure modes and shadow
// mode (failure_policy.h, with kFailLocal's engine in local_fallback.h),
// instance discovery's driver (census_driver.h), and the Prometheus series
// of SharedLimitStats (shared_metrics.cc). Direct and leased mode keep only
// what is theirs.
#ifndef TOKENLEASE_SRC_SHARED_SHARED_CHECKS_H_
#define TOKENLEASE_SRC_SHARED_SHARED_CHECKS_H_

#include <string_view>

#include "absl/status/status.h"
#include "tokenlease/metrics.h"
#include "tokenlease/shared_limit.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// SharedLimitOptions' fields (and LimiterOptions'), named as fields of
// `owner` ("DirectLimiterOptions.key_prefix is ...").
absl::Status ValidateSharedOptions(const SharedLimitOptions& options,
                                   std::string_view owner);

// What Create checks beyond the options' own ranges: the spec within the
// scripts' limits (ValidateScriptSpec), and options the spec or `mode`
// cannot honour: start_empty with a sliding-log band, OutageUsage::kCharge
// in direct mode or with a window band, a fail_local share (of
// fallback_instances, and with instance discovery of up to 65536) that is
// no valid local limit.
absl::Status CheckSharedLimit(const LimitSpec& spec,
                              const SharedLimitOptions& options,
                              std::string_view owner, LimiterMode mode);

// What UpdateSpec checks: `spec` passes CheckSharedLimit, and Redis can take
// the state `old` wrote over (docs/lua-protocol.md, "The stamp"): the same
// bands with the same algorithms and refill styles, windows of the same
// length and alignment, logs with the same granularity and entry bound.
// `who` names the method ("LeasedLimiter::UpdateSpec").
absl::Status CheckSpecUpdate(const LimitSpec& old, const LimitSpec& spec,
                             const SharedLimitOptions& options,
                             std::string_view who, LimiterMode mode);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_SHARED_SHARED_CHECKS_H_
