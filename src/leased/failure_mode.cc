#include "leased/failure_mode.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tokenlease {

namespace internal {

absl::Status CheckFailureOptions(const LimitSpec& spec,
                                 const LeasedLimiterOptions& options) {
  if (static_cast<uint8_t>(options.failure_mode) >
      static_cast<uint8_t>(FailureMode::kFailLocal)) {
    return absl::InvalidArgumentError(
        absl::StrCat("LeasedLimiterOptions.failure_mode is ",
                     static_cast<int>(options.failure_mode),
                     "; it must be kFailClosed, kFailOpen or kFailLocal"));
  }
  for (size_t i = 0; options.start_empty && i < spec.bands.size(); ++i) {
    if (spec.bands[i].algorithm == Algorithm::kSlidingWindowLog) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LeasedLimiterOptions.start_empty is true, but bands[", i,
          "] is a sliding_log limit, whose state cannot start drained; use "
          "start_empty = false for it"));
    }
  }
  if (options.outage_usage == OutageUsage::kForget) return absl::OkStatus();
  if (options.outage_usage != OutageUsage::kCharge) {
    return absl::InvalidArgumentError(
        absl::StrCat("LeasedLimiterOptions.outage_usage is ",
                     static_cast<int>(options.outage_usage),
                     "; it must be kForget or kCharge"));
  }
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    const Algorithm a = spec.bands[i].algorithm;
    if (a != Algorithm::kTokenBucket && a != Algorithm::kGcra) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LeasedLimiterOptions.outage_usage is kCharge, but bands[", i,
          "] is a ", AlgorithmName(a),
          " limit: an outage's usage would be charged to a window after the "
          "one it was admitted in; use OutageUsage::kForget for window "
          "limits"));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace tokenlease
