#include "core/options_checks.h"

#include "absl/strings/str_cat.h"
#include "base/absl_view.h"

namespace tokenlease::internal {

absl::Status ValidateKeySpace(std::string_view owner, int64_t max_keys,
                              int32_t shards) {
  if (absl::Status s = CheckInteger(absl::StrCat(AbslView(owner), ".max_keys"),
                                    max_keys, 1, int64_t{1} << 30);
      !s.ok()) {
    return s;
  }
  if (shards < 1 || shards > 4096 || (shards & (shards - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(owner), ".shards is ", shards,
                     "; it must be a power of two between 1 and 4096"));
  }
  return absl::OkStatus();
}

absl::Status CheckMaxKeyBytes(std::string_view owner, int32_t max_key_bytes) {
  return CheckInteger(absl::StrCat(AbslView(owner), ".max_key_bytes"),
                      max_key_bytes, 1, 65536);
}

absl::Status CheckKeySize(std::string_view owner, std::string_view key,
                          int32_t max_key_bytes) {
  if (key.size() <= static_cast<size_t>(max_key_bytes)) [[likely]] {
    return absl::OkStatus();
  }
  // The key itself is not echoed: it may be large, and it is user data.
  return absl::InvalidArgumentError(absl::StrCat(
      "key is ", key.size(), " bytes; it must be at most ", AbslView(owner),
      ".max_key_bytes (", max_key_bytes,
      "): use a shorter key (a hash of a long one) or raise the option"));
}

absl::Status CheckDuration(std::string_view field, absl::Duration value,
                           absl::Duration lo, absl::Duration hi) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(field), " is ", absl::FormatDuration(value),
                     "; it must be between ", absl::FormatDuration(lo), " and ",
                     absl::FormatDuration(hi)));
  }
  return absl::OkStatus();
}

absl::Status CheckFraction(std::string_view field, double value, double lo,
                           double hi, bool open_low) {
  const bool low_ok = open_low ? value > lo : value >= lo;
  if (!low_ok || !(value <= hi)) {  // !(<=) also rejects NaN
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(field), " is ", value, "; it must be in ",
                     open_low ? "(" : "[", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckInteger(std::string_view field, int64_t value, int64_t lo,
                          int64_t hi) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(field), " is ", value, "; it must be between ",
                     lo, " and ", hi));
  }
  return absl::OkStatus();
}

absl::Status ValidateLimiterOptions(const LimiterOptions& options,
                                    std::string_view owner) {
  return FirstError({
      ValidateKeySpace(owner, options.max_keys, options.shards),
      CheckMaxKeyBytes(owner, options.max_key_bytes),
  });
}

absl::Status FirstError(std::initializer_list<absl::Status> checks) {
  for (const absl::Status& s : checks) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace tokenlease::internal
