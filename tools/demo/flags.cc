// The absl flags of `tokenlease demo`: their definitions, help strings and
// defaults (taken from DemoOptions), their conversion into DemoOptions with
// range checks, and their pass-through to the instance processes.
#include "demo/flags.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "demo/targets.h"

namespace tokenlease::tools {
namespace {

template <typename E>
struct Choice {
  const char* name;
  E value;
};

constexpr Choice<Mode> kModes[] = {{"leased", Mode::kLeased},
                                   {"local", Mode::kLocal},
                                   {"direct", Mode::kDirect}};
constexpr Choice<KeyDist> kKeyDists[] = {{"hot", KeyDist::kHot},
                                         {"zipf", KeyDist::kZipf}};
constexpr Choice<Pacing> kPacings[] = {{"tick", Pacing::kTick},
                                       {"sleep", Pacing::kSleep},
                                       {"spin", Pacing::kSpin},
                                       {"busy", Pacing::kBusy}};
constexpr Choice<ColdKeyPolicy> kColdKeyPolicies[] = {
    {"deny", ColdKeyPolicy::kDeny},
    {"wait", ColdKeyPolicy::kWait},
    {"local_share", ColdKeyPolicy::kLocalShare}};
constexpr Choice<FailureMode> kFailureModes[] = {
    {"fail_closed", FailureMode::kFailClosed},
    {"fail_open", FailureMode::kFailOpen},
    {"fail_local", FailureMode::kFailLocal}};
constexpr Choice<OutageUsage> kOutageUsages[] = {
    {"forget", OutageUsage::kForget}, {"charge", OutageUsage::kCharge}};
constexpr Choice<OutageKind> kOutageKinds[] = {{"stop", OutageKind::kStop},
                                               {"kill", OutageKind::kKill}};
constexpr Choice<Algorithm> kAlgorithms[] = {
    {"token_bucket", Algorithm::kTokenBucket},
    {"gcra", Algorithm::kGcra},
    {"fixed_window", Algorithm::kFixedWindow},
    {"sliding_counter", Algorithm::kSlidingWindowCounter},
    {"sliding_log", Algorithm::kSlidingWindowLog}};

template <typename E>
const char* NameOf(absl::Span<const Choice<E>> choices, E value) {
  for (const Choice<E>& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

// "a, b or c", for messages and help strings.
template <typename E>
std::string Alternatives(absl::Span<const Choice<E>> choices) {
  std::vector<std::string> names;
  for (const Choice<E>& c : choices) names.push_back(c.name);
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " or ", last);
}

template <typename E>
absl::Status ParseChoice(absl::string_view flag, absl::string_view value,
                         absl::Span<const Choice<E>> choices, E* out) {
  for (const Choice<E>& c : choices) {
    if (value == c.name) {
      *out = c.value;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, " is '", value, "'; it must be ", Alternatives(choices)));
}

const DemoOptions kDefaults;

}  // namespace

const char* ModeName(Mode m) { return NameOf<Mode>(kModes, m); }
const char* KeyDistName(KeyDist k) { return NameOf<KeyDist>(kKeyDists, k); }
const char* ColdKeyPolicyName(ColdKeyPolicy p) {
  return NameOf<ColdKeyPolicy>(kColdKeyPolicies, p);
}
const char* AlgorithmFlagName(Algorithm a) {
  return NameOf<Algorithm>(kAlgorithms, a);
}
const char* PacingName(Pacing p) { return NameOf<Pacing>(kPacings, p); }
const char* OutageKindName(OutageKind k) {
  return NameOf<OutageKind>(kOutageKinds, k);
}

}  // namespace tokenlease::tools

// Defined outside any namespace (absl's rule). Defaults come from
// DemoOptions so that the two cannot disagree.
using tokenlease::tools::kDefaults;

ABSL_FLAG(std::string, scenario, tokenlease::tools::KeyDistName(kDefaults.keys),
          "hot: every decision on one key (limit 10,000/s, burst 1,000 unless "
          "--limit/--burst say otherwise); zipf: --zipf_keys keys drawn from "
          "a Zipf distribution, each with its own limit (100/s, burst 100), "
          "rank 0 charted as the hot key");
ABSL_FLAG(std::string, keys, tokenlease::tools::KeyDistName(kDefaults.keys),
          "the same as --scenario (for older command lines)");
ABSL_FLAG(std::string, mode, tokenlease::tools::ModeName(kDefaults.mode),
          "leased: a LeasedLimiter per instance shares the limit through "
          "Redis; local: a Limiter per instance with limit/N, nothing shared, "
          "no Redis; direct: one Redis script call per decision");
ABSL_FLAG(int, instances, kDefaults.instances,
          "instance processes sharing the limit, 1 to 64; 0: one per CPU "
          "left after redis-server's, at least 2 and at most 4 (the banner "
          "says what was chosen)");
ABSL_FLAG(int, threads, kDefaults.threads,
          "load threads per instance, 1 to 64; 0: the CPUs left after "
          "redis-server's divided over the instances, at least 1");
ABSL_FLAG(int64_t, limit, kDefaults.limit,
          "the shared limit per second (per key with --scenario=zipf), a "
          "token bucket; 0: 10,000 (hot) or 100 (zipf)");
ABSL_FLAG(int64_t, burst, kDefaults.burst,
          "the token bucket's burst; 0: --limit / 10 (hot: a tenth of a "
          "second, so half-second windows show the rate, not the bucket) or "
          "--limit (zipf)");
ABSL_FLAG(double, offered, kDefaults.offered,
          "decisions per second offered over all threads, paced on an "
          "absolute schedule; 0: 5 x the limit on the hottest key");
ABSL_FLAG(double, seconds, kDefaults.seconds,
          "length of the run in seconds, more than 0 and at most 3600");
ABSL_FLAG(int, zipf_keys, kDefaults.zipf_keys,
          "number of keys for --scenario=zipf, 1 to 1e8");
ABSL_FLAG(double, zipf_s, kDefaults.zipf_s,
          "Zipf exponent s for --scenario=zipf, more than 0");
ABSL_FLAG(int, window_ms, kDefaults.window_ms,
          "reporting window in ms, 1 to 60000: a live row, a CSV row and a "
          "chart step per window");
ABSL_FLAG(std::string, csv, kDefaults.csv,
          "per-window CSV file; auto: "
          "$TMPDIR/tokenlease_demo_<mode>_<scenario>_<time>.csv (/tmp without "
          "TMPDIR); empty: none");
ABSL_FLAG(std::string, chart, kDefaults.chart,
          "SVG chart of the hot key's admitted rate per window, global and "
          "per instance, against the limit, the outage shaded; auto: the "
          "CSV's name with .svg; empty: none");
ABSL_FLAG(std::string, url, kDefaults.url,
          "Redis server for leased and direct mode, e.g. "
          "redis://127.0.0.1:6379; empty: $TOKENLEASE_REDIS_URL (keeps a "
          "password off the command line), else start a private "
          "redis-server on a free 127.0.0.1 port for the run");
ABSL_FLAG(bool, use_handle, kDefaults.use_handle,
          "leased and local mode: decide the hot key through a handle "
          "resolved once");
ABSL_FLAG(std::string, pacing, tokenlease::tools::PacingName(kDefaults.pacing),
          "tick: wake once per --tick_us and make the calls due since back "
          "to back (offers the rate without a wake-up per call, and leaves "
          "the cores to Redis); sleep: give the core away until ~20 us "
          "before each call; spin: busy-wait, yielding when the call is > 20 "
          "us away, so every load thread holds a core; busy: busy-wait with "
          "a pause instruction only, never sleeping or yielding (no system "
          "call from a load thread: for tracing the decision path)");
ABSL_FLAG(int, tick_us, kDefaults.tick_us,
          "--pacing=tick: microseconds between a load thread's wake-ups, 10 "
          "to 100000");
ABSL_FLAG(int, sample_every, kDefaults.sample_every,
          "time every Nth decision of a thread with steady_clock, 1 or more");
ABSL_FLAG(int, lease_ttl_ms, kDefaults.lease_ttl_ms,
          "leased mode: LeaseOptions::lease_ttl in ms");
ABSL_FLAG(int, idle_evict_ms, kDefaults.idle_evict_ms,
          "leased mode: LeaseOptions::idle_evict in ms; at least 2 x "
          "--lease_ttl_ms is used");
ABSL_FLAG(double, max_lease_fraction, kDefaults.max_lease_fraction,
          "leased mode: LeaseOptions::max_lease_fraction, the largest lease "
          "as a fraction of the burst");
ABSL_FLAG(std::string, cold_key_policy,
          tokenlease::tools::ColdKeyPolicyName(kDefaults.cold_key_policy),
          "leased mode: LeaseOptions::cold_key_policy, deny, wait or "
          "local_share");
ABSL_FLAG(double, local_share, kDefaults.local_share,
          "leased mode: LeaseOptions::local_share, the fraction of the burst "
          "a key without a lease may admit locally with "
          "--cold_key_policy=local_share (default: the library's)");
ABSL_FLAG(int, charge_delay_ms, kDefaults.charge_delay_ms,
          "leased mode: LeaseOptions::charge_delay in ms, how long after a "
          "key's first admission from its local credit it is charged to "
          "Redis (0 .. --lease_ttl_ms; default: the library's)");
ABSL_FLAG(std::string, algorithm,
          tokenlease::tools::AlgorithmFlagName(kDefaults.algorithm),
          "local mode: token_bucket, gcra, fixed_window, sliding_counter or "
          "sliding_log; leased and direct mode use token_bucket");
ABSL_FLAG(std::string, failure_mode,
          tokenlease::FailureModeName(kDefaults.failure_mode),
          "what decides while Redis cannot (leased mode; direct mode too): "
          "fail_local (the default here, because it is the one that keeps "
          "the limit: each instance enforces its share, limit / instances, "
          "alone, and leasing resumes when Redis is back), fail_closed "
          "(deny: the library's default, safe but the service stops) or "
          "fail_open (admit everything: the limit is off)");
ABSL_FLAG(int, fallback_instances, kDefaults.fallback_instances,
          "leased mode: LeasedLimiterOptions::fallback_instances for "
          "fail_local (0: --instances)");
ABSL_FLAG(std::string, outage_usage,
          kDefaults.outage_usage == tokenlease::OutageUsage::kCharge ? "charge"
                                                                     : "forget",
          "leased mode: LeasedLimiterOptions::outage_usage; charge (the "
          "default here): what fail_local or fail_open admitted is charged "
          "to Redis when it is back, so the whole run stays near limit x "
          "duration; forget (the library's default): it is not, and the "
          "bucket that refilled while Redis was away hands out one more "
          "burst after the outage");
ABSL_FLAG(bool, discover_instances, kDefaults.discover_instances,
          "leased mode: the instances count each other in Redis "
          "(LeasedLimiterOptions::instance_group) for fail_local's share; "
          "false: the share is of --fallback_instances");
ABSL_FLAG(bool, start_empty, kDefaults.start_empty,
          "leased mode: LeasedLimiterOptions::start_empty (after Redis lost "
          "its data, e.g. --outage_kind=kill, keys without state count as "
          "drained at the restart instead of full)");
ABSL_FLAG(bool, outage, kDefaults.outage,
          "take the private redis-server away in the middle of the run "
          "(--outage_kind) and bring it back; --outage=false: no outage. "
          "Left on by default, it is skipped with --url or --mode=local "
          "(there is no private server to take away)");
ABSL_FLAG(double, outage_at, kDefaults.outage_at,
          "seconds into the run at which the outage starts, within "
          "--seconds; 0: 40% of --seconds");
ABSL_FLAG(double, outage_seconds, kDefaults.outage_seconds,
          "how long the outage lasts, in seconds; 0: 20% of --seconds");
ABSL_FLAG(std::string, outage_kind,
          tokenlease::tools::OutageKindName(kDefaults.outage_kind),
          "stop (SIGSTOP, then SIGCONT: a frozen server) or kill (kill -9, "
          "then restarted empty on the same port)");
ABSL_FLAG(bool, live, kDefaults.live,
          "print a row per window as it closes (on a terminal, with a "
          "progress bar and the instances' health kept at the bottom); "
          "--nolive or --live=false: only the summary");

namespace tokenlease::tools {
namespace {

absl::Status InRange(absl::string_view flag, int64_t value, int64_t lo,
                     int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--", flag, " is ", value, "; it must be between ", lo, " and ", hi));
}

absl::Status Check(bool ok, absl::string_view message) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(message);
}

// The checks that concern the load's size and shape.
absl::Status ValidateLoad(const DemoOptions& o) {
  absl::Status s = InRange("instances", o.instances, 1, kMaxInstances);
  s.Update(InRange("threads", o.threads, 1, kMaxThreads));
  s.Update(Check(
      o.limit >= o.instances,
      absl::StrCat("--limit is ", o.limit,
                   "; it must be at least --instances (", o.instances, ")")));
  s.Update(Check(o.burst >= 1, absl::StrCat("--burst is ", o.burst,
                                            "; it must be at least 1")));
  s.Update(Check(std::isfinite(o.offered) && o.offered > 0,
                 absl::StrCat("--offered is ", o.offered,
                              "; it must be more than 0 (0 on the command "
                              "line: 5 x the limit)")));
  s.Update(Check(
      o.seconds > 0 && o.seconds <= kMaxSeconds,
      absl::StrCat("--seconds is ", o.seconds,
                   "; it must be more than 0 and at most ", kMaxSeconds)));
  s.Update(InRange("window_ms", o.window_ms, 1, kMaxWindowMs));
  s.Update(InRange("tick_us", o.tick_us, 10, 100'000));
  s.Update(InRange("zipf_keys", o.zipf_keys, 1, kMaxZipfKeys));
  s.Update(Check(o.zipf_s > 0, absl::StrCat("--zipf_s is ", o.zipf_s,
                                            "; it must be more than 0")));
  s.Update(InRange("sample_every", o.sample_every, 1, 1'000'000'000));
  s.Update(InRange("fallback_instances", o.fallback_instances, 0, 65536));
  if (!o.outage) return s;
  s.Update(Check(o.outage_at > 0 && o.outage_at < o.seconds,
                 absl::StrCat("--outage_at is ", o.outage_at,
                              "; it must be within --seconds (", o.seconds,
                              "); --outage=false for no outage")));
  s.Update(Check(
      o.outage_seconds > 0 && o.outage_seconds <= kMaxSeconds,
      absl::StrCat("--outage_seconds is ", o.outage_seconds,
                   "; it must be more than 0 and at most ", kMaxSeconds)));
  return s;
}

// The checks that concern the limiters.
absl::Status ValidateLimiter(const DemoOptions& o) {
  absl::Status s = InRange("lease_ttl_ms", o.lease_ttl_ms, 1, 3'600'000);
  s.Update(InRange("idle_evict_ms", o.idle_evict_ms, 1, 86'400'000));
  s.Update(Check(o.max_lease_fraction > 0 && o.max_lease_fraction <= 1,
                 absl::StrCat("--max_lease_fraction is ", o.max_lease_fraction,
                              "; it must be more than 0 and at most 1")));
  s.Update(InRange("charge_delay_ms", o.charge_delay_ms, 0,
                   std::max(o.lease_ttl_ms, 0)));
  s.Update(Check(o.local_share > 0 && o.local_share <= 1,
                 absl::StrCat("--local_share is ", o.local_share,
                              "; it must be more than 0 and at most 1")));
  if (o.algorithm != Algorithm::kTokenBucket && o.mode != Mode::kLocal) {
    s.Update(absl::InvalidArgumentError(absl::StrCat(
        "--algorithm is ", AlgorithmFlagName(o.algorithm),
        "; leased and direct mode use token_bucket (use --mode=local)")));
  }
  if (s.ok() && o.mode == Mode::kLocal) {
    const absl::Status spec = ValidateSpec(LocalSpec(o));
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the limit of one instance (--limit / --instances, --algorithm) is "
          "invalid: ",
          spec.message()));
    }
  }
  return s;
}

}  // namespace

absl::Status ValidateOptions(const DemoOptions& o) {
  absl::Status s = ValidateLoad(o);
  if (s.ok()) s = ValidateLimiter(o);  // LocalSpec needs instances >= 1
  return s;
}

namespace {

// The flag names on the command line (RecordCommandLine). absl keeps this
// too, but does not expose it in the Abseil of Debian 12.
absl::flat_hash_set<std::string>& GivenFlags() {
  static auto* given = new absl::flat_hash_set<std::string>();  // never freed
  return *given;
}

bool GivenOnCommandLine(absl::string_view name) {
  return GivenFlags().contains(name);
}

// --scenario, or its older spelling --keys when only that was given.
absl::Status ParseScenario(KeyDist* out) {
  absl::Status s = ParseChoice<KeyDist>(
      "scenario", absl::GetFlag(FLAGS_scenario), kKeyDists, out);
  KeyDist keys = *out;
  s.Update(ParseChoice<KeyDist>("keys", absl::GetFlag(FLAGS_keys), kKeyDists,
                                &keys));
  if (!s.ok() || !GivenOnCommandLine("keys")) return s;
  if (!GivenOnCommandLine("scenario")) {
    *out = keys;
  } else if (keys != *out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scenario is '", KeyDistName(*out), "' but --keys is '",
        KeyDistName(keys), "'; give one of them (--keys is its old name)"));
  }
  return s;
}

// "%.17g": a double passed to an instance comes back bit for bit.
std::string Exact(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace

absl::StatusOr<DemoOptions> OptionsFromFlags() {
  DemoOptions o;
  absl::Status s =
      ParseChoice<Mode>("mode", absl::GetFlag(FLAGS_mode), kModes, &o.mode);
  s.Update(ParseScenario(&o.keys));
  s.Update(ParseChoice<Pacing>("pacing", absl::GetFlag(FLAGS_pacing), kPacings,
                               &o.pacing));
  s.Update(ParseChoice<FailureMode>("failure_mode",
                                    absl::GetFlag(FLAGS_failure_mode),
                                    kFailureModes, &o.failure_mode));
  s.Update(ParseChoice<OutageUsage>("outage_usage",
                                    absl::GetFlag(FLAGS_outage_usage),
                                    kOutageUsages, &o.outage_usage));
  s.Update(ParseChoice<OutageKind>("outage_kind",
                                   absl::GetFlag(FLAGS_outage_kind),
                                   kOutageKinds, &o.outage_kind));
  s.Update(ParseChoice<ColdKeyPolicy>("cold_key_policy",
                                      absl::GetFlag(FLAGS_cold_key_policy),
                                      kColdKeyPolicies, &o.cold_key_policy));
  s.Update(ParseChoice<Algorithm>("algorithm", absl::GetFlag(FLAGS_algorithm),
                                  kAlgorithms, &o.algorithm));
  if (!s.ok()) return s;
  o.instances = absl::GetFlag(FLAGS_instances);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.limit = absl::GetFlag(FLAGS_limit);
  o.burst = absl::GetFlag(FLAGS_burst);
  o.offered = absl::GetFlag(FLAGS_offered);
  o.seconds = absl::GetFlag(FLAGS_seconds);
  o.zipf_keys = absl::GetFlag(FLAGS_zipf_keys);
  o.zipf_s = absl::GetFlag(FLAGS_zipf_s);
  o.window_ms = absl::GetFlag(FLAGS_window_ms);
  o.csv = absl::GetFlag(FLAGS_csv);
  o.chart = absl::GetFlag(FLAGS_chart);
  o.url = absl::GetFlag(FLAGS_url);
  if (const char* env = std::getenv(kRedisUrlEnv); o.url.empty() && env) {
    o.url = env;  // keeps a password off the command line
  }
  o.use_handle = absl::GetFlag(FLAGS_use_handle);
  o.tick_us = absl::GetFlag(FLAGS_tick_us);
  o.sample_every = absl::GetFlag(FLAGS_sample_every);
  o.lease_ttl_ms = absl::GetFlag(FLAGS_lease_ttl_ms);
  o.idle_evict_ms = absl::GetFlag(FLAGS_idle_evict_ms);
  o.max_lease_fraction = absl::GetFlag(FLAGS_max_lease_fraction);
  o.local_share = absl::GetFlag(FLAGS_local_share);
  o.charge_delay_ms = absl::GetFlag(FLAGS_charge_delay_ms);
  o.live = absl::GetFlag(FLAGS_live);
  o.fallback_instances = absl::GetFlag(FLAGS_fallback_instances);
  o.discover_instances = absl::GetFlag(FLAGS_discover_instances);
  o.start_empty = absl::GetFlag(FLAGS_start_empty);
  o.outage = absl::GetFlag(FLAGS_outage);
  o.outage_at = absl::GetFlag(FLAGS_outage_at);
  o.outage_seconds = absl::GetFlag(FLAGS_outage_seconds);
  return o;
}

void RecordCommandLine(int argc, char** argv) {
  GivenFlags().clear();
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;  // the rest are arguments
    if (!absl::ConsumePrefix(&arg, "-")) continue;
    absl::ConsumePrefix(&arg, "-");
    const absl::string_view name = arg.substr(0, arg.find('='));
    GivenFlags().insert(std::string(name));
    // --nofoo sets the boolean --foo.
    if (absl::StartsWith(name, "no")) {
      GivenFlags().insert(std::string(name.substr(2)));
    }
  }
}

bool OutageFlagsGiven() {
  return GivenOnCommandLine("outage") || GivenOnCommandLine("outage_at") ||
         GivenOnCommandLine("outage_seconds") ||
         GivenOnCommandLine("outage_kind");
}

std::vector<std::pair<std::string, std::string>> ResolvedFlagValues(
    const DemoOptions& o) {
  return {{"scenario", KeyDistName(o.keys)},
          {"keys", KeyDistName(o.keys)},
          {"instances", absl::StrCat(o.instances)},
          {"threads", absl::StrCat(o.threads)},
          {"limit", absl::StrCat(o.limit)},
          {"burst", absl::StrCat(o.burst)},
          {"offered", Exact(o.offered)},
          {"outage", o.outage ? "true" : "false"},
          {"outage_at", Exact(o.outage_at)},
          {"outage_seconds", Exact(o.outage_seconds)}};
}

namespace {

// The demo's flags are the ones defined in this file.
bool IsDemoFlagFile(absl::string_view filename) {
  return absl::EndsWith(filename, "demo/flags.cc");
}

}  // namespace

std::vector<std::string> DemoFlagArgs(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> args;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsDemoFlagFile(flag->Filename())) continue;
    std::string value = flag->CurrentValue();
    for (const auto& [o_name, o_value] : overrides) {
      if (o_name == name) value = o_value;
    }
    args.push_back(absl::StrCat("--", name, "=", value));
  }
  std::sort(args.begin(), args.end());
  return args;
}

void ConfigureDemoUsage() {
  absl::SetProgramUsageMessage(
      "demo [flags]\n\n"
      "The live demo of tokenlease: instance processes share one rate limit\n"
      "through Redis, and Redis goes away in the middle of the run.\n\n"
      "With no flags: a private redis-server on a free 127.0.0.1 port; "
      "instances\nsized to this machine's CPUs share one hot key limited to "
      "10,000/s (burst\n1,000) in leased mode, offered 5 x that for 20 s; "
      "from 8 s to 12 s the\nserver is stopped (SIGSTOP) and each instance "
      "enforces its share of the\nlimit alone (fail_local) until leasing "
      "resumes. A live view twice a second,\nthen a summary per phase (before, "
      "during, after the outage), a CSV and an\nSVG chart.\n\n"
      "Scenarios: --scenario=hot (one key; the default) or zipf (100,000 keys"
      "\nwith a limit of 100/s each). --outage=false: no outage; "
      "--failure_mode=\nfail_closed or fail_open: the other answers to an "
      "outage; --mode=direct or\nlocal: the other ways to decide.\n\n"
      "Ctrl-C stops early and prints the summary of what ran; a second "
      "Ctrl-C\nkills the instances (exit 130). Exit code: 0 when the run "
      "completed (also\nif a bound was exceeded: BOUND EXCEEDED lines say so), "
      "1 if it could not\nrun or on a flag absl cannot parse, 2 on a flag "
      "value out of range.");
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = IsDemoFlagFile;
  config.contains_help_flags = IsDemoFlagFile;
  config.normalize_filename = [](absl::string_view f) {
    return IsDemoFlagFile(f) ? std::string("tools/demo/flags.cc")
                             : std::string(f);
  };
  absl::SetFlagsUsageConfig(config);
}

}  // namespace tokenlease::tools
