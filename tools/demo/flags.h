// The flags of `tokenlease demo` and the options they turn into. The absl
// flags are defined in flags.cc and read only there: the rest of the demo
// sees a validated DemoOptions, and the instance processes get the same
// flags back through DemoFlagArgs().
#ifndef TOKENLEASE_TOOLS_DEMO_FLAGS_H_
#define TOKENLEASE_TOOLS_DEMO_FLAGS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tokenlease/leased.h"
#include "tokenlease/spec.h"

namespace tokenlease::tools {

// Where the decisions are made: a LeasedLimiter per instance sharing the
// limit through Redis, a local Limiter per instance with limit/N (nothing
// shared), or one Redis script call per decision.
enum class Mode { kLeased, kLocal, kDirect };

// One hot key, or Zipf-distributed keys (rank 0 is the hottest).
enum class KeyDist { kHot, kZipf };

// How a load thread waits for its next call: sleep (gives the core away),
// spin (yields the core when the call is far, else pauses) or busy (only
// pauses: no system call at all, so every load thread holds a core; for
// tracing the decision path's own system calls).
enum class Pacing { kSleep, kSpin, kBusy };

// --outage_kind: how the private redis-server is taken away at --outage_at.
enum class OutageKind {
  kStop,  // SIGSTOP, SIGCONT at the end: a frozen server, data kept
  kKill,  // kill -9, restarted empty on the same port at the end
};

inline constexpr int kMaxInstances = 64;
inline constexpr int kMaxThreads = 64;
inline constexpr int kMaxZipfKeys = 100'000'000;
inline constexpr double kMaxSeconds = 3600;
inline constexpr int kMaxWindowMs = 60'000;
// --csv=auto: a file under $TMPDIR named after the run (report.h).
inline constexpr char kCsvAuto[] = "auto";

// Everything the demo reads from its flags. The defaults here are the
// flags' defaults (flags.cc uses them), i.e. the README's demo.
struct DemoOptions {
  Mode mode = Mode::kLeased;
  int instances = 4;
  int threads = 2;        // per instance
  int64_t limit = 10000;  // per second, burst = limit
  // Decisions per second offered over all threads; 0 means 10 x limit.
  double offered = 0;
  double seconds = 20;
  KeyDist keys = KeyDist::kHot;
  int zipf_keys = 100000;
  double zipf_s = 1.1;
  int window_ms = 500;
  std::string csv = kCsvAuto;  // "" writes none
  std::string url;             // "" starts a private redis-server
  bool use_handle = false;
  Pacing pacing = Pacing::kSleep;
  int sample_every = 64;
  int lease_ttl_ms = 1000;
  int idle_evict_ms = 30000;
  double max_lease_fraction = 0.1;
  ColdKeyPolicy cold_key_policy = LeaseOptions{}.cold_key_policy;
  double local_share = LeaseOptions{}.local_share;
  int charge_delay_ms =
      static_cast<int>(absl::ToInt64Milliseconds(LeaseOptions{}.charge_delay));
  Algorithm algorithm = Algorithm::kTokenBucket;  // --mode=local only
  bool live = true;
  FailureMode failure_mode = FailureMode::kFailClosed;  // leased mode
  int fallback_instances = 0;                           // 0: --instances
  // Instances count each other (LeasedLimiterOptions::instance_group);
  // fallback_instances is then the count until the first announcement.
  bool discover_instances = true;
  // LeasedLimiterOptions::start_empty: after a data loss (--outage_kind=
  // kill), keys without state count as drained at the restart.
  bool start_empty = false;
  OutageUsage outage_usage = OutageUsage::kForget;
  // Seconds into the run at which the private redis-server is taken away
  // (outage_kind) for outage_seconds; 0: no outage.
  double outage_at = 0;
  double outage_seconds = 5;
  OutageKind outage_kind = OutageKind::kStop;
  // The fallback share's instance count: fallback_instances, else all.
  int FallbackInstances() const {
    return fallback_instances > 0 ? fallback_instances : instances;
  }

  // The offered rate with the default applied.
  double OfferedRate() const {
    return offered > 0 ? offered : 10.0 * static_cast<double>(limit);
  }
};

// The flag spellings of the choices ("leased", "zipf", "local_share", ...).
const char* ModeName(Mode m);
const char* KeyDistName(KeyDist k);
const char* ColdKeyPolicyName(ColdKeyPolicy p);
const char* AlgorithmFlagName(Algorithm a);
const char* PacingName(Pacing p);
const char* OutageKindName(OutageKind k);

// OK, or InvalidArgument naming the flag, its value and the accepted range,
// e.g. "--instances is 0; it must be between 1 and 64". Pure: tests call it
// with hand-made options.
absl::Status ValidateOptions(const DemoOptions& o);

// Reads the parsed flags (after absl::ParseCommandLine) into options and
// validates them.
absl::StatusOr<DemoOptions> OptionsFromFlags();

// The environment variable that carries the Redis URL to an instance (and
// that --url falls back to): a URL may hold a password, and a command line
// is readable by every user of the machine (ps), an environment only by
// the process's own user.
inline constexpr char kRedisUrlEnv[] = "TOKENLEASE_REDIS_URL";

// "--name=value" for every demo flag as currently set, sorted by name, with
// the values in `overrides` (flag name, value) in place of the parsed ones.
// The parent passes these to its instance processes, which parse them with
// the same flag definitions.
std::vector<std::string> DemoFlagArgs(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// Sets the usage message and makes --help list the demo's flags (and only
// them; --helpfull lists absl's too). Call before absl::ParseCommandLine.
void ConfigureDemoUsage();

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_FLAGS_H_
