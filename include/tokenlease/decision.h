// The answer to "may this request go ahead?".
#ifndef TOKENLEASE_DECISION_H_
#define TOKENLEASE_DECISION_H_

#include <cstdint>

#include "absl/time/time.h"

namespace tokenlease {

// Where a decision was made.
enum class DecisionSource : uint8_t {
  kLocal,            // the in-process engine (Limiter), from its own state
  kLease,            // leased mode: tokens this instance leased from Redis
  kDirect,           // direct mode: one exact script call on Redis
  kFallback,         // this instance's local share of a shared limit, while
                     // Redis cannot decide (FailureMode::kFailLocal)
  kKeyLimit,         // denied: the key registry is at max_keys and no key
                     // is idle
  kInvalidArgument,  // denied: bad input (a negative or too large cost, a
                     // key longer than max_key_bytes, a handle that is
                     // empty or belongs to another limiter, Reserve on a
                     // limit that cannot borrow); retry_after is kNever
  kLocalCredit,      // leased mode, a key without a lease: admitted from its
                     // local credit, charged to the shared limit afterwards
  kFailOpen,         // admitted because Redis cannot decide
                     // (FailureMode::kFailOpen)
  kShadow,           // shadow mode: would have been denied, admitted anyway
  kFailClosed,       // denied because Redis cannot decide
                     // (FailureMode::kFailClosed); retry_after is when
                     // asking again may find it answering
};

// Returns a stable lower-case name ("local", "key_limit", ...).
const char* DecisionSourceName(DecisionSource s);

// Sentinel for "this request can never be admitted as asked" (e.g. a cost
// above the burst).
inline constexpr int64_t kNever = -1;

// The result of one admission decision, in every mode. A plain value: copy
// freely. Decisions never carry an error status: bad input and a shared
// store that cannot decide are decisions too, told apart by `source`
// (docs/design.md, "The contract").
struct Decision {
  // True if the request was admitted and charged.
  bool allowed = false;
  DecisionSource source = DecisionSource::kLocal;
  // Whole tokens left after this decision in the tightest band (0 if none).
  int64_t remaining = 0;
  // 0 when allowed; otherwise the time after which the same request would
  // be admitted if nothing else arrives, or kNever.
  int64_t retry_after_ns = 0;
  // Time until the limit is back at its initial, unused state (bucket full,
  // window over, log empty) if nothing else arrives.
  int64_t reset_after_ns = 0;

  absl::Duration retry_after() const {
    return retry_after_ns == kNever ? absl::InfiniteDuration()
                                    : absl::Nanoseconds(retry_after_ns);
  }
  absl::Duration reset_after() const {
    return absl::Nanoseconds(reset_after_ns);
  }
};

// The reply shape of the well-known Redis throttle module
// (limited, limit, remaining, retry_after_s, reset_after_s), so that users of
// that module can switch. retry_after_s is -1 when allowed; seconds round up.
struct ThrottleReply {
  int64_t limited;
  int64_t limit;
  int64_t remaining;
  int64_t retry_after_s;
  int64_t reset_after_s;
};

// Converts `d` (a decision on a limit whose first band has `limit` burst or
// window size) into the throttle module's five integers.
ThrottleReply ToThrottleReply(const Decision& d, int64_t limit);

// The result of Reserve (Limiter, DirectLimiter).
struct Reservation {
  // True if tokens were taken; the caller must then wait `wait_ns` before
  // acting. False: nothing was charged (decision.source says why).
  bool granted = false;
  int64_t wait_ns = 0;
  // The underlying decision (remaining, reset_after, source).
  Decision decision;

  absl::Duration wait() const { return absl::Nanoseconds(wait_ns); }
};

}  // namespace tokenlease

#endif  // TOKENLEASE_DECISION_H_
