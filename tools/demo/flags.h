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

// The scenario (--scenario, alias --keys): one hot key, or Zipf-distributed
// keys with a limit per key (rank 0 is the hottest).
enum class KeyDist { kHot, kZipf };

// How a load thread waits for its next call: tick (wake once per --tick_us
// and make the calls due since back to back: the rate is offered without a
// wake-up per call), sleep (until ~20 us before each call), spin (yields
// the core when the call is far, else pauses) or busy (only pauses: no
// system call at all, so every load thread holds a core; for tracing the
// decision path's own system calls).
enum class Pacing { kTick, kSleep, kSpin, kBusy };

// --outage_kind: how the private redis-server is taken away during the
// outage.
enum class OutageKind {
  kStop,  // SIGSTOP, SIGCONT at the end: a frozen server, data kept
  kKill,  // kill -9, restarted empty on the same port at the end
};

inline constexpr int kMaxInstances = 64;
inline constexpr int kMaxThreads = 64;
inline constexpr int kMaxZipfKeys = 100'000'000;
inline constexpr double kMaxSeconds = 3600;
inline constexpr int kMaxWindowMs = 60'000;
// --csv=auto and --chart=auto: a file under $TMPDIR named after the run
// (report.h).
inline constexpr char kAuto[] = "auto";

// The defaults a scenario gives the fields left at 0 (ResolveOptions).
// hot: one key at 10,000/s with a burst of 1,000 (a tenth of a second, so
// that a chart of half-second windows shows the rate, not the bucket);
// zipf: 100,000 keys at 100/s each with a burst of 100 (the per-key
// workload of docs/benchmarks.md). Both offer the hottest key
// kOverload x its limit.
inline constexpr int64_t kHotLimit = 10'000;
inline constexpr int64_t kHotBurstDivisor = 10;
inline constexpr int64_t kZipfLimit = 100;
inline constexpr double kOverload = 5;
// The outage's default place in the run: it starts kOutageStart x --seconds
// in and lasts kOutageLength x --seconds (8 s to 12 s of the default 20 s).
inline constexpr double kOutageStart = 0.4;
inline constexpr double kOutageLength = 0.2;

// Everything the demo reads from its flags. The defaults here are the
// flags' defaults (flags.cc uses them). Fields marked "0: chosen" are
// filled in by ResolveOptions before a run; every other function takes
// resolved options.
struct DemoOptions {
  Mode mode = Mode::kLeased;
  KeyDist keys = KeyDist::kHot;  // --scenario
  int instances = 0;             // 0: chosen by the machine (sizing.h)
  int threads = 0;               // per instance; 0: chosen by the machine
  int64_t limit = 0;             // per second (per key); 0: the scenario's
  int64_t burst = 0;             // token bucket burst; 0: the scenario's
  // Decisions per second offered over all threads; 0: kOverload x the
  // limit on the hottest key.
  double offered = 0;
  double seconds = 20;
  int zipf_keys = 100000;
  double zipf_s = 1.1;
  int window_ms = 500;
  std::string csv = kAuto;    // "" writes none
  std::string chart = kAuto;  // "" draws none
  std::string url;            // "" starts a private redis-server
  bool use_handle = false;
  Pacing pacing = Pacing::kTick;
  int tick_us = 1000;
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
  // While Redis cannot decide (leased mode, and direct mode during the
  // outage): fail_local keeps enforcing the limit, split over the
  // instances, which is what the outage is there to show.
  FailureMode failure_mode = FailureMode::kFailLocal;
  int fallback_instances = 0;  // 0: --instances
  // Instances count each other (LeasedLimiterOptions::instance_group);
  // fallback_instances is then the count until the first announcement.
  bool discover_instances = true;
  // LeasedLimiterOptions::start_empty: after a data loss (--outage_kind=
  // kill), keys without state count as drained at the restart.
  bool start_empty = false;
  // What fail_local admitted is charged when Redis is back, so the whole
  // run stays near limit x duration (the library's default is kForget).
  OutageUsage outage_usage = OutageUsage::kCharge;
  // The private redis-server is taken away (outage_kind) at outage_at s
  // into the run for outage_seconds (0: chosen, kOutageStart and
  // kOutageLength). False: no outage.
  bool outage = true;
  double outage_at = 0;
  double outage_seconds = 0;
  OutageKind outage_kind = OutageKind::kStop;
  // The fallback share's instance count: fallback_instances, else all.
  int FallbackInstances() const {
    return fallback_instances > 0 ? fallback_instances : instances;
  }
  // The offered rate (resolved options).
  double OfferedRate() const { return offered; }
  // The outage's end, in seconds into the run (with `outage`).
  double OutageEnd() const { return outage_at + outage_seconds; }
};

// The flag spellings of the choices ("leased", "zipf", "local_share", ...).
const char* ModeName(Mode m);
const char* KeyDistName(KeyDist k);
const char* ColdKeyPolicyName(ColdKeyPolicy p);
const char* AlgorithmFlagName(Algorithm a);
const char* PacingName(Pacing p);
const char* OutageKindName(OutageKind k);

// OK, or InvalidArgument naming the flag, its value and the accepted range,
// e.g. "--instances is -1; it must be between 1 and 64". Takes resolved
// options (ResolveOptions). Pure: tests call it with hand-made options.
absl::Status ValidateOptions(const DemoOptions& o);

// Reads the parsed flags (after absl::ParseCommandLine) into options, with
// the fields left to the machine and the scenario still 0
// (ResolveOptions fills them); InvalidArgument for a choice flag with an
// unknown value, or --scenario and --keys that disagree.
absl::StatusOr<DemoOptions> OptionsFromFlags();

// Notes which flags the command line names, for --scenario against --keys
// and OutageFlagsGiven. Call with main's arguments before parsing them.
// Flags read from a --flagfile are not seen: they count as not given.
void RecordCommandLine(int argc, char** argv);

// True if an outage flag (--outage, --outage_at, --outage_seconds,
// --outage_kind) was given on the command line: the parent then refuses to
// run without a private redis-server to take away, instead of quietly
// running without the outage.
bool OutageFlagsGiven();

// The flag values that make an instance process run exactly the parent's
// resolved options (what the machine and the scenario chose, the outage
// the parent could drive), as (flag name, value) overrides for
// DemoFlagArgs.
std::vector<std::pair<std::string, std::string>> ResolvedFlagValues(
    const DemoOptions& o);

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
