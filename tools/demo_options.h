// Flags of `tokenlease demo`.
#ifndef TOKENLEASE_TOOLS_DEMO_OPTIONS_H_
#define TOKENLEASE_TOOLS_DEMO_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tokenlease/spec.h"

namespace tokenlease::tools {

inline constexpr int kMaxThreads = 64;
inline constexpr int64_t kMaxKeys = int64_t{1} << 20;

struct DemoOptions {
  Algorithm algorithm = Algorithm::kTokenBucket;
  int64_t limit = 10000;
  absl::Duration period = absl::Seconds(1);
  int64_t burst = 0;  // 0: the limit
  bool burst_set = false;
  int threads = 2;
  absl::Duration duration = absl::Seconds(5);
  // Requests per second over all threads; 0 = as fast as possible; unset =
  // 10 x the limit's rate.
  std::optional<double> offered;
  int64_t keys = 1;
  bool handle = false;
  bool help = false;
};

// Parses `args` (the arguments after "demo"). Accepts --name=value,
// --name value, and for --handle also --handle=true|false and --nohandle.
// Returns InvalidArgument for an unknown flag, a malformed value, a
// positional argument, or a tool setting out of range. Limit settings
// (limit, period, burst) are left to the library's ValidateSpec.
absl::Status ParseDemoFlags(const std::vector<std::string>& args,
                            DemoOptions* options);

// The --help text.
std::string DemoUsage();

// The flag spelling of an algorithm ("token_bucket", "sliding_counter", ...).
const char* AlgorithmFlagName(Algorithm a);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_OPTIONS_H_
