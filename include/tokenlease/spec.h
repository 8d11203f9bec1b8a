// What a limit is: one or more bands, each an algorithm with a rate.
#ifndef TOKENLEASE_SPEC_H_
#define TOKENLEASE_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tokenlease {

// The admission algorithm of one band. docs/design.md gives the accuracy
// argument of each.
enum class Algorithm : uint8_t {
  // Capacity `burst`, gains `limit` tokens per `period` (smoothly or in whole
  // steps, see Refill). Starts full. Supports borrowing (Reserve).
  kTokenBucket,
  // Generic cell rate algorithm: a leaky bucket ("funnel") of `burst` drops
  // draining `limit` per `period`. Admits exactly what a smooth token bucket
  // admits; state is one theoretical arrival time. Supports borrowing.
  kGcra,
  // At most `limit` per window of `period`; windows are aligned (see
  // WindowAnchor). Known flaw: up to 2 x limit in any span of one period.
  kFixedWindow,
  // Previous window's count weighted by its overlap plus the current count.
  // O(1) memory; approximates a rolling window.
  kSlidingWindowCounter,
  // Exact rolling window over a bounded log of grants (see
  // Band::max_log_entries for the memory bound).
  kSlidingWindowLog,
};

// Returns a stable lower-case name ("token_bucket", "gcra", ...).
const char* AlgorithmName(Algorithm a);

// How a token bucket refills.
enum class Refill : uint8_t {
  kSmooth,    // continuously: one token every period / limit
  kStepwise,  // `limit` tokens at each whole `period` since the bucket began;
              // the un-elapsed part of a period carries over.
};

// Where fixed windows start.
enum class WindowAnchor : uint8_t {
  kAligned,       // at Unix epoch + window_offset + k * period (calendar-like)
  kFirstRequest,  // at the first request after the previous window ended
                  // (the classic INCR + EXPIRE counter)
};

// One rate constraint. All fields are validated by ValidateSpec().
struct Band {
  Algorithm algorithm = Algorithm::kTokenBucket;
  // Tokens per period. 1 <= limit <= 2^40.
  int64_t limit = 0;
  // 1 microsecond <= period <= 5 years; a whole number of nanoseconds.
  absl::Duration period = absl::Seconds(1);
  // Token bucket / GCRA capacity; 0 means `limit`. Ignored by window
  // algorithms (their capacity is `limit`).
  int64_t burst = 0;
  // Token bucket only.
  Refill refill = Refill::kSmooth;
  // Fixed window only.
  WindowAnchor anchor = WindowAnchor::kAligned;
  // Shifts aligned windows (fixed window, sliding counter) and log granules:
  // windows start at Unix epoch + window_offset + k * period. For calendar
  // days in UTC+8, use period 24h and window_offset -8h.
  absl::Duration window_offset = absl::ZeroDuration();
  // Sliding log only: grants are recorded at the start of their granule
  // (aligned like windows); 0 records exact nanoseconds. A granule of one
  // day turns "3 in any 7 days" into "3 in the last 7 calendar days".
  absl::Duration log_granularity = absl::ZeroDuration();
  // Sliding log only: the memory bound, in entries per key (0 means 256);
  // an entry is 16 bytes. One entry per grant, not per token. If `limit`
  // <= max_log_entries the log is exact. Otherwise each grant is recorded at
  // the end of its quantum of period / max_log_entries, so a token counts
  // for at most one quantum longer than exact: stricter, never looser.
  int32_t max_log_entries = 0;
};

// A limit: every band is checked, and a request is charged to all bands or
// to none.
struct LimitSpec {
  // One to four bands.
  std::vector<Band> bands;
  // How far a Reserve() may push token-bucket/GCRA bands into debt, as time
  // the caller will wait; 0 disables borrowing (Reserve() then only grants
  // what is available now). At most 1 year.
  absl::Duration max_borrow = absl::ZeroDuration();

  // Convenience constructors for the common single-band limits.
  static LimitSpec TokenBucket(int64_t limit, absl::Duration period,
                               int64_t burst = 0,
                               Refill refill = Refill::kSmooth);
  static LimitSpec Gcra(int64_t limit, absl::Duration period,
                        int64_t burst = 0);
  static LimitSpec FixedWindow(
      int64_t limit, absl::Duration period,
      absl::Duration window_offset = absl::ZeroDuration());
  static LimitSpec SlidingWindowCounter(int64_t limit, absl::Duration period);
  static LimitSpec SlidingWindowLog(int64_t limit, absl::Duration period);
};

// Returns OK, or InvalidArgument naming the field that is wrong, why, and
// what range is accepted (e.g. "bands[1].limit is 0; it must be between 1
// and 1099511627776").
absl::Status ValidateSpec(const LimitSpec& spec);

// A one-line human-readable description, e.g.
// "token_bucket(limit=100/1s, burst=100, smooth)".
std::string DescribeSpec(const LimitSpec& spec);

}  // namespace tokenlease

#endif  // TOKENLEASE_SPEC_H_
