// The options of `tokenlease demo` and the one table of its flags (a row:
// name, DemoOptions field, one line of help, the accepted range), parsed
// and printed with absl's flag syntax (absl::ParseFlag and UnparseFlag);
// --help is written from the rows, and the parent hands its resolved
// options to the instances as flags printed from them. Also the rule that
// sizes the load to the machine (ResolveOptions).
#ifndef TOKENLEASE_TOOLS_DEMO_FLAGS_H_
#define TOKENLEASE_TOOLS_DEMO_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tokenlease/leased.h"
#include "tokenlease/spec.h"

namespace tokenlease::tools {

// The flags' choices (flags.cc's rows say what each is).
enum class Mode { kLeased, kLocal, kDirect };
enum class KeyDist { kHot, kZipf };
enum class Pacing { kTick, kSleep, kSpin, kBusy };
enum class OutageKind { kStop, kKill };
enum class RedisKind { kSingle, kCluster };

const char* ModeName(Mode m);
const char* KeyDistName(KeyDist k);

inline constexpr int kMaxInstances = 64;
inline constexpr int kMaxThreads = 64;
// --csv=auto and --chart=auto: a file under $TMPDIR named after the run.
inline constexpr char kAuto[] = "auto";
// The scenarios' defaults for the fields left at 0 (ResolveOptions): the
// limit, and the overload of the hottest key.
inline constexpr int64_t kHotLimit = 10'000;
inline constexpr int64_t kZipfLimit = 100;
inline constexpr double kOverload = 5;

// The environment variable that carries the Redis URL to an instance (and
// that --url falls back to): a URL may hold a password, and a command line
// is readable by every user of the machine (ps), an environment only by
// the process's own user.
inline constexpr char kRedisUrlEnv[] = "TOKENLEASE_REDIS_URL";

// Everything the demo reads from its flags (flags.cc's rows say what each
// is); the defaults are the flags'. Fields left at 0 are filled in by
// ResolveOptions.
struct DemoOptions {
  Mode mode = Mode::kLeased;
  KeyDist keys = KeyDist::kHot;  // --scenario (alias --keys)
  int instances = 0;
  int threads = 0;  // per instance
  int64_t limit = 0;
  int64_t burst = 0;
  double offered = 0;  // decisions/s over all threads
  double seconds = 20;
  int zipf_keys = 100000;
  double zipf_s = 1.1;
  int window_ms = 500;
  std::string csv = kAuto;    // "" writes none
  std::string chart = kAuto;  // "" draws none
  std::string url;            // "": $TOKENLEASE_REDIS_URL, else private
  RedisKind redis = RedisKind::kSingle;  // the private Redis's shape
  bool tls = false;                      // the private Redis over mutual TLS
  // A rediss:// URL's CA and client certificate (--tls: the run's own).
  std::string tls_ca_file, tls_cert_file, tls_key_file;
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
  double slice_threshold = static_cast<double>(LeaseOptions{}.slice_threshold);
  bool slice_single_thread = LeaseOptions{}.slice_single_thread;
  double cluster_low_water = LeaseOptions{}.cluster_low_water;
  Algorithm algorithm = Algorithm::kTokenBucket;  // --mode=local only
  bool live = true;
  // fail_local keeps enforcing the limit during the outage, split over the
  // instances: what the outage is there to show.
  FailureMode failure_mode = FailureMode::kFailLocal;
  int fallback_instances = 0;  // 0: --instances
  bool discover_instances = true;
  bool start_empty = false;
  // What fail_local admitted is charged when Redis is back, so the whole
  // run stays near limit x duration (the library's default is kForget).
  OutageUsage outage_usage = OutageUsage::kCharge;
  bool outage = true;
  double outage_at = 0;
  double outage_seconds = 0;
  OutageKind outage_kind = OutageKind::kStop;
  // Internal flags, set by the parent on an instance process: its index,
  // its end of the socket to the parent, and the run's Redis key prefix.
  int instance = -1;
  int fd = -1;
  std::string prefix;

  int FallbackInstances() const {
    return fallback_instances > 0 ? fallback_instances : instances;
  }
  double OutageEnd() const { return outage_at + outage_seconds; }
  // An outage is run (resolved options): local mode has no Redis.
  bool HasOutage() const { return outage && mode != Mode::kLocal; }
};

// A parsed command line: the options as given (fields left to the machine
// still 0), the names of the flags it gave, and whether it asked for help.
struct CommandLine {
  DemoOptions options;
  absl::flat_hash_set<std::string> given;
  bool help = false;
};

// Parses the demo's flags (`args`: what follows "demo"): --name=value,
// --name value, --name and --noname for booleans, and --help. An empty
// --url falls back to $TOKENLEASE_REDIS_URL; --redis=cluster makes
// --outage_kind's default kill. InvalidArgument naming the
// flag for an unknown flag, a value that does not parse ("--mode is
// 'remote'; it must be leased, local or direct"), an argument that is no
// flag.
absl::StatusOr<CommandLine> ParseFlags(const std::vector<std::string>& args);

// "--name=value" for every flag but the aliases, printed from `o`: what
// makes an instance process run exactly these options.
std::vector<std::string> FlagArgs(const DemoOptions& o);

// The value of flag `name` in `o` as the command line spells it ("leased",
// "local_share"); "" for no such flag.
std::string FlagText(const DemoOptions& o, absl::string_view name);

// --help: what the demo does, its exit codes, and every flag with its
// default and help.
std::string Usage();

// OK, or InvalidArgument naming the flag, its value and the accepted range
// ("--instances is -1; it must be between 1 and 64"). Takes resolved
// options.
absl::Status ValidateOptions(const DemoOptions& o);

// The CPUs this process may run on (sched_getaffinity), at least 1.
int UsableCpus();

// The load for `cpus` CPUs (one CPU's share stays with redis-server and
// the parent): instances = the spare CPUs, 2 to 4 (one shows no sharing,
// more make the chart unreadable); threads = spare / instances, at least 1
// (direct mode: kDirectThreads, as a decision sleeps for a round trip). On
// 2 cores a fixed 4 x 2 spinning threads starved redis-server: what the
// demo shows must be tokenlease, not a starved CPU.
struct LoadPlan {
  int instances = 0;
  int threads = 0;
  bool operator==(const LoadPlan&) const = default;
};
inline constexpr int kDirectThreads = 4;
// `instances` > 0 fixes the count and spreads the threads over it.
LoadPlan PlanLoad(int cpus, int instances = 0, Mode mode = Mode::kLeased);

// `o` with every field left at 0 filled in: the load by PlanLoad(cpus), the
// limit, burst and offered rate by the scenario, the outage from --seconds.
// Fields already set are kept, so resolving twice changes nothing.
DemoOptions ResolveOptions(DemoOptions o, int cpus);

// The banner's line on the load, the pacing and the offered rate, and
// whether the flags or the machine chose them.
std::string DescribeChoices(const DemoOptions& requested,
                            const DemoOptions& resolved, int cpus);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_FLAGS_H_
