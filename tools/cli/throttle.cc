#include "cli/throttle.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace tokenlease::cli {
namespace {

constexpr int64_t kMaxLimit = int64_t{1} << 40;  // Band::limit and burst
constexpr int64_t kMaxCost = int64_t{1} << 50;   // a direct call's cost
// 5 x 366 days, the longest period a Band takes.
constexpr int64_t kMaxPeriodSeconds = int64_t{5} * 366 * 86400;

absl::Status ParseArg(absl::Span<const std::string> args, size_t i,
                      const char* name, int64_t lo, int64_t hi, int64_t* out) {
  if (!absl::SimpleAtoi(args[i], out) || *out < lo || *out > hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CL.THROTTLE argument ", i + 1, " (", name, ") is '", args[i],
        "'; it must be an integer from ", lo, " to ", hi));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ThrottleArgs> ParseThrottleArgs(
    absl::Span<const std::string> positional) {
  if (positional.size() != 4 && positional.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the CL.THROTTLE form takes 4 or 5 arguments, <key> <max_burst> "
        "<count per period> <period seconds> [<quantity>]; got ",
        positional.size()));
  }
  ThrottleArgs a;
  a.key = positional[0];
  absl::Status s =
      ParseArg(positional, 1, "max_burst", 0, kMaxLimit - 1, &a.max_burst);
  s.Update(ParseArg(positional, 2, "count per period", 1, kMaxLimit, &a.count));
  s.Update(ParseArg(positional, 3, "period in seconds", 1, kMaxPeriodSeconds,
                    &a.period_s));
  if (positional.size() == 5) {
    s.Update(ParseArg(positional, 4, "quantity", 0, kMaxCost, &a.quantity));
  }
  if (!s.ok()) return s;
  return a;
}

LimitSpec ThrottleSpec(const ThrottleArgs& args) {
  return LimitSpec::Gcra(args.count, absl::Seconds(args.period_s),
                         args.max_burst + 1);
}

int64_t CellSeconds(int64_t ns) {
  // Integer arithmetic: redis-cell truncates the seconds toward zero and
  // adds one for a positive millisecond part.
  const int64_t seconds = ns / 1'000'000'000;
  const int64_t millis = (ns % 1'000'000'000) / 1'000'000;
  return seconds + (millis > 0 ? 1 : 0);
}

ThrottleReply CellThrottleReply(const Decision& d, int64_t limit) {
  // The library's reply (fields, and -1 when no retry is needed), with
  // redis-cell's rounding of the two times.
  ThrottleReply r = ToThrottleReply(d, limit);
  if (r.retry_after_s != -1) r.retry_after_s = CellSeconds(d.retry_after_ns);
  r.reset_after_s = CellSeconds(d.reset_after_ns);
  return r;
}

std::string FormatThrottleReply(const ThrottleReply& r) {
  return absl::StrCat(r.limited, "\n", r.limit, "\n", r.remaining, "\n",
                      r.retry_after_s, "\n", r.reset_after_s, "\n");
}

}  // namespace tokenlease::cli
