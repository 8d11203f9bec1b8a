// `tokenlease check`: one direct-mode decision (DirectLimiter::TryAcquire)
// against a Redis server, for scripts and operators. Exit status 0 when
// allowed, 1 when denied, 2 on a usage or Redis error (the message on
// stderr).
#ifndef TOKENLEASE_TOOLS_CLI_CHECK_H_
#define TOKENLEASE_TOOLS_CLI_CHECK_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/types/span.h"
#include "tokenlease/decision.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {

enum class CheckFormat { kHuman, kThrottle, kJson };

// What was decided, for the formats below.
struct CheckOutcome {
  Decision decision;
  std::string key;
  int64_t cost = 1;
  LimitSpec spec;
  // CL.THROTTLE's total limit: max_burst + 1 in the CL.THROTTLE form, else
  // the smallest capacity over the bands.
  int64_t limit = 0;
};

// One line: "allowed: remaining 4, retry after 0, reset after 200ms (key
// "user:42", cost 1, gcra(limit=5/1s, burst=5))".
std::string FormatHuman(const CheckOutcome& o);
// One JSON object on one line; retry_after_us is -1 for never.
std::string FormatJson(const CheckOutcome& o);

// Runs the command on `args` (what follows "check"), writing the result
// to `out` and errors to `err`; returns the exit status.
int RunCheck(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_CHECK_H_
