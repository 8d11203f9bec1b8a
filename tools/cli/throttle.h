// The reply and the arguments of redis-cell's CL.THROTTLE command
// (github.com/brandur/redis-cell), so that its users can switch to
// `tokenlease check --format=throttle` without changing what they parse:
//
//   CL.THROTTLE <key> <max_burst> <count per period> <period> [<quantity>]
//
// is GCRA with `count` tokens per `period` seconds and a capacity of
// max_burst + 1 (redis-cell's delay variation tolerance is max_burst + 1
// emission intervals), charging `quantity` (default 1; 0 only peeks).
// Its reply is five integers: limited (0/1), the total limit (max_burst +
// 1), remaining, retry_after seconds (-1 when allowed, and when the
// quantity can never fit) and reset_after seconds.
#ifndef TOKENLEASE_TOOLS_CLI_THROTTLE_H_
#define TOKENLEASE_TOOLS_CLI_THROTTLE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {

// The positional arguments of the CL.THROTTLE form.
struct ThrottleArgs {
  std::string key;
  int64_t max_burst = 0;
  int64_t count = 0;     // tokens per period
  int64_t period_s = 0;  // seconds
  int64_t quantity = 1;
};

// Parses 4 or 5 positional arguments. InvalidArgument naming the argument
// and its range (max_burst 0 .. 2^40 - 1, count 1 .. 2^40, period 1 s ..
// 5 years, quantity 0 .. 2^50).
absl::StatusOr<ThrottleArgs> ParseThrottleArgs(
    absl::Span<const std::string> positional);

// The limit CL.THROTTLE applies: GCRA, count per period_s seconds, burst
// max_burst + 1.
LimitSpec ThrottleSpec(const ThrottleArgs& args);

// A duration as redis-cell reports it: whole seconds, plus one if the
// millisecond part is not zero (its `as_seconds_f64() as i64`, then `+ 1`
// when `subsec_milliseconds() > 0`). So 1.5 s is 2, 1.0005 s is 1 (a part
// below a millisecond is dropped) and 0.4 ms is 0.
int64_t CellSeconds(int64_t ns);

// `d` as CL.THROTTLE's five integers, `limit` being the total limit
// (max_burst + 1; for a limit given by flags, SmallestCapacity). Unlike
// tokenlease::ToThrottleReply (decision.h), which rounds up any fraction
// of a second, this rounds exactly as redis-cell does (CellSeconds).
ThrottleReply CellThrottleReply(const Decision& d, int64_t limit);

// The reply as redis-cli prints an array of integers with --raw: one
// integer a line.
std::string FormatThrottleReply(const ThrottleReply& r);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_THROTTLE_H_
