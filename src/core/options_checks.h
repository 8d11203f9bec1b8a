// Range checks shared by every options struct's Validate(), so that each
// error reads the same way: "<Struct>.<field> is <value>; it must be ...".
#ifndef TOKENLEASE_SRC_CORE_OPTIONS_CHECKS_H_
#define TOKENLEASE_SRC_CORE_OPTIONS_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tokenlease/limiter.h"

namespace tokenlease::internal {

// The key-space fields every limiter shares: max_keys in [1, 2^30] and
// shards a power of two in [1, 4096]. `owner` names the struct.
absl::Status ValidateKeySpace(std::string_view owner, int64_t max_keys,
                              int32_t shards);

// `field` (e.g. "LeaseOptions.tick") within [lo, hi].
absl::Status CheckDuration(std::string_view field, absl::Duration value,
                           absl::Duration lo, absl::Duration hi);

// `field` within [lo, hi], or (lo, hi] when `open_low`; NaN fails.
absl::Status CheckFraction(std::string_view field, double value, double lo,
                           double hi, bool open_low);

// `field` within [lo, hi].
absl::Status CheckInteger(std::string_view field, int64_t value, int64_t lo,
                          int64_t hi);

// max_key_bytes of any options struct: within [1, 65536]. `owner` names
// the struct.
absl::Status CheckMaxKeyBytes(std::string_view owner, int32_t max_key_bytes);

// The error for a key longer than `owner`.max_key_bytes, or OK.
absl::Status CheckKeySize(std::string_view owner, std::string_view key,
                          int32_t max_key_bytes);

// LimiterOptions' fields, named as fields of `owner` (the struct the user
// filled: "LeasedLimiterOptions.max_keys is 0; ...").
absl::Status ValidateLimiterOptions(const LimiterOptions& options,
                                    std::string_view owner);

// The first error of `checks`, or OK.
absl::Status FirstError(std::initializer_list<absl::Status> checks);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_OPTIONS_CHECKS_H_
