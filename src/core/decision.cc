#include "tokenlease/decision.h"

namespace tokenlease {

const char* DecisionSourceName(DecisionSource s) {
  switch (s) {
    case DecisionSource::kLocal:
      return "local";
    case DecisionSource::kLease:
      return "lease";
    case DecisionSource::kDirect:
      return "direct";
    case DecisionSource::kFallback:
      return "fallback";
    case DecisionSource::kKeyLimit:
      return "key_limit";
    case DecisionSource::kInvalidArgument:
      return "invalid_argument";
    case DecisionSource::kLocalCredit:
      return "local_credit";
    case DecisionSource::kFailOpen:
      return "fail_open";
    case DecisionSource::kShadow:
      return "shadow";
    case DecisionSource::kFailClosed:
      return "fail_closed";
  }
  return "unknown";
}

namespace {
int64_t CeilSeconds(int64_t ns) { return (ns + 999'999'999) / 1'000'000'000; }
}  // namespace

ThrottleReply ToThrottleReply(const Decision& d, int64_t limit) {
  ThrottleReply r;
  r.limited = d.allowed ? 0 : 1;
  r.limit = limit;
  r.remaining = d.remaining;
  r.retry_after_s = d.allowed || d.retry_after_ns == kNever
                        ? -1
                        : CeilSeconds(d.retry_after_ns);
  r.reset_after_s = CeilSeconds(d.reset_after_ns);
  return r;
}

}  // namespace tokenlease
