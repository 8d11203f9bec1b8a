// What a LeasedLimiter needs for its failure modes (leased.h, FailureMode)
// beyond the local share (core/local_share.h): the check that an outage's
// usage may be charged to the limit's bands.
#ifndef TOKENLEASE_SRC_LEASED_FAILURE_MODE_H_
#define TOKENLEASE_SRC_LEASED_FAILURE_MODE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/local_share.h"
#include "tokenlease/leased.h"
#include "tokenlease/spec.h"

namespace tokenlease::internal {

// OK, or InvalidArgument when `options` asks for something the spec cannot
// do (OutageUsage::kCharge with a window band) or names an unknown enum.
absl::Status CheckFailureOptions(const LimitSpec& spec,
                                 const LeasedLimiterOptions& options);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LEASED_FAILURE_MODE_H_
