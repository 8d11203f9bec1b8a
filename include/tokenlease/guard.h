// A small wrapper that applies a limit of any mode to a call, the C++
// counterpart of an annotation like `@RateLimit(period, threshold)` on a
// handler.
#ifndef TOKENLEASE_GUARD_H_
#define TOKENLEASE_GUARD_H_

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tokenlease/decision.h"

namespace tokenlease {

namespace guard_internal {
// `key` for a message: at most its first 64 bytes, and its size if longer.
inline std::string ShownKey(std::string_view key) {
  if (key.size() <= 64) return std::string(key);
  return absl::StrCat(std::string(key.substr(0, 64)), "... (", key.size(),
                      " bytes)");
}
}  // namespace guard_internal

// The status a denied `decision` on `key` maps to, naming the key (its
// first 64 bytes): InvalidArgument for bad input (kInvalidArgument);
// Unavailable when Redis could not decide and the limit fails closed
// (kFailClosed, "retry after ..."); otherwise ResourceExhausted, saying
// when to retry ("retry after 250ms", or that the cost never fits).
inline absl::Status DeniedStatus(std::string_view key,
                                 const Decision& decision) {
  const std::string shown = guard_internal::ShownKey(key);
  switch (decision.source) {
    case DecisionSource::kInvalidArgument:
      return absl::InvalidArgumentError(absl::StrCat(
          "rate limit on '", shown,
          "': invalid request (a negative or too large cost, a key longer "
          "than max_key_bytes: ",
          key.size(), " bytes here, or a handle from another limiter)"));
    case DecisionSource::kFailClosed:
      return absl::UnavailableError(absl::StrCat(
          "rate limit on '", shown,
          "': Redis cannot decide and the limit fails closed; retry after ",
          absl::FormatDuration(decision.retry_after())));
    case DecisionSource::kKeyLimit:
      return absl::ResourceExhaustedError(
          absl::StrCat("rate limit on '", shown,
                       "': the limiter holds max_keys keys and none is idle"));
    default:
      break;
  }
  if (decision.retry_after_ns == kNever) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "rate limit on '", shown,
        "': the cost exceeds what the limit can ever admit at once"));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("rate limit on '", shown, "': retry after ",
                   absl::FormatDuration(decision.retry_after())));
}

// A limiter of any mode: Limiter, DirectLimiter or LeasedLimiter (or
// anything else that decides by name the same way).
template <typename L>
concept DecidesByName = requires(L& limiter, std::string_view key,
                                 int64_t cost) {
  { limiter.TryAcquire(key, cost) } -> std::same_as<Decision>;
};

// Runs fn() only if `limiter` (any mode) admits `cost` for `key` now
// (direct mode: after its round trip). Returns fn's result (a value, or
// OkStatus for a void fn), or the DeniedStatus without calling fn. fn
// returning absl::Status or absl::StatusOr<T> is passed through as is.
template <DecidesByName L, typename Fn>
auto RateLimited(L& limiter, std::string_view key, Fn&& fn, int64_t cost = 1) {
  using R = std::invoke_result_t<Fn>;
  const Decision d = limiter.TryAcquire(key, cost);
  if constexpr (std::is_void_v<R>) {
    if (!d.allowed) return DeniedStatus(key, d);
    std::forward<Fn>(fn)();
    return absl::OkStatus();
  } else if constexpr (std::is_same_v<R, absl::Status>) {
    if (!d.allowed) return DeniedStatus(key, d);
    return std::forward<Fn>(fn)();
  } else {
    using Result = std::conditional_t<std::is_convertible_v<absl::Status, R>, R,
                                      absl::StatusOr<R>>;
    if (!d.allowed) return Result(DeniedStatus(key, d));
    return Result(std::forward<Fn>(fn)());
  }
}

}  // namespace tokenlease

#endif  // TOKENLEASE_GUARD_H_
