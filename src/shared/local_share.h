// The local share of a shared limit (FailureMode::kFailLocal): what one of
// several instances enforces alone while Redis cannot decide, in leased and
// direct mode.
#ifndef TOKENLEASE_SRC_SHARED_LOCAL_SHARE_H_
#define TOKENLEASE_SRC_SHARED_LOCAL_SHARE_H_

#include <cstdint>

#include "tokenlease/spec.h"

namespace tokenlease::internal {

// `spec` with every band's limit and burst divided by `instances`, rounded
// down, at least 1 (periods and every other field kept): what one of
// `instances` instances enforces alone. `spec` must be valid.
LimitSpec ShareOfLimit(const LimitSpec& spec, int32_t instances);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_SHARED_LOCAL_SHARE_H_
