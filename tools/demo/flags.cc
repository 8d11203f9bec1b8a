// The flag table of `tokenlease demo` (flags.h): one row per flag, from
// which the command line is parsed, the instances' flags are printed and
// --help is written; then the range checks and the sizing rule.
#include "demo/flags.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/marshalling.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "demo/format.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

using O = DemoOptions;

// --help: what the demo does, its exit codes, then each flag ("--name" at
// the start of a line; Usage adds its default) and what it is.
constexpr char kUsage[] = R"(Usage: tokenlease demo [flags]

The live demo of tokenlease: instance processes share one rate limit
through Redis, and Redis goes away in the middle of the run. With no
flags: a private redis-server on a free 127.0.0.1 port; instances sized
to this machine's CPUs share one hot key limited to 10,000/s (burst
1,000) in leased mode, offered 5 x that for 20 s; from 8 s to 12 s the
server is stopped (SIGSTOP) and each instance enforces its share of the
limit alone (fail_local) until leasing resumes. A live view twice a
second, then a summary per phase (before, during, after the outage), a
CSV and an SVG chart.

Ctrl-C stops early and prints the summary of what ran; a second Ctrl-C
kills the instances (exit 130). Exit code: 0 when the run completed (also
if a bound was exceeded: BOUND EXCEEDED lines say so), 1 if it could not
run, 2 on a flag or value it does not accept.

Flags:
--scenario
    hot: every decision on one key (10,000/s, burst 1,000 by default);
    zipf: --zipf_keys keys drawn from a Zipf distribution, each with its
    own limit (100/s, burst 100), rank 0 charted as the hot key
--keys
    the same as --scenario (its older name)
--mode
    leased: a LeasedLimiter per instance shares the limit through Redis;
    local: a Limiter per instance with limit/N, no Redis; direct: one
    Redis script call per decision
--instances
    instance processes, 1 to 64; 0: one per CPU left after redis-server's,
    2 to 4 (the banner says what was chosen)
--threads
    load threads per instance, 1 to 64; 0: the CPUs left after
    redis-server's divided over the instances, at least 1
--limit
    the limit per second (per key with --scenario=zipf), a token bucket;
    0: 10,000 (hot) or 100 (zipf)
--burst
    the token bucket's burst; 0: --limit / 10 (hot: half-second windows
    show the rate, not the bucket) or --limit (zipf)
--offered
    decisions per second offered over all threads, on an absolute
    schedule; 0: 5 x the limit on the hottest key
--seconds
    length of the run in seconds, more than 0 and at most 3600
--zipf_keys
    number of keys for --scenario=zipf, 1 to 1e8
--zipf_s
    Zipf exponent s for --scenario=zipf, more than 0
--window_ms
    reporting window in ms, 1 to 60000: a live row, a CSV row and a chart
    step each
--csv
    per-window CSV file; auto: $TMPDIR/tokenlease_demo_<mode>_<scenario>_
    <time>.csv (/tmp without TMPDIR); empty: none
--chart
    SVG chart of the hot key's admitted rate per window against the limit,
    the outage shaded; auto: the CSV's name with .svg; empty: none
--url
    Redis for leased and direct mode, e.g. redis://127.0.0.1:6379; empty:
    $TOKENLEASE_REDIS_URL (keeps a password off the command line), else a
    private redis-server on a free 127.0.0.1 port
--use_handle
    leased and local mode: decide the hot key through a handle resolved once
--pacing
    tick: wake once per --tick_us and make the calls due since (no wake-up
    per call; the cores stay with Redis); sleep: until ~20 us before each
    call; spin: busy-wait, yielding when a call is > 20 us away; busy:
    busy-wait with no system call (for tracing the decision path)
--tick_us
    --pacing=tick: microseconds between a thread's wake-ups, 10 to 100000
--sample_every
    time every Nth decision of a thread with steady_clock, 1 or more
--lease_ttl_ms
    leased mode: LeaseOptions::lease_ttl in ms
--idle_evict_ms
    leased mode: LeaseOptions::idle_evict in ms (at least 2 x lease_ttl)
--max_lease_fraction
    leased mode: LeaseOptions::max_lease_fraction (of the burst)
--cold_key_policy
    leased mode: LeaseOptions::cold_key_policy, deny, wait or local_share
--local_share
    leased mode: LeaseOptions::local_share (of the burst)
--charge_delay_ms
    leased mode: LeaseOptions::charge_delay in ms, 0 to --lease_ttl_ms
--algorithm
    local mode: token_bucket, gcra, fixed_window, sliding_counter or
    sliding_log (leased and direct mode use token_bucket)
--failure_mode
    what decides while Redis cannot: fail_local (the default here: each
    instance enforces limit / instances alone, so the limit holds),
    fail_closed (deny: the library's default) or fail_open (admit all)
--fallback_instances
    LeasedLimiterOptions::fallback_instances for fail_local (0: --instances)
--outage_usage
    leased mode: charge (the default here: what the failure mode admitted
    is charged to Redis when it is back) or forget (the library's default:
    the bucket that refilled meanwhile hands out one more burst)
--discover_instances
    the instances count each other in Redis (LeasedLimiterOptions::
    instance_group) for fail_local's share; false: --fallback_instances
--start_empty
    LeasedLimiterOptions::start_empty: after Redis lost its data
    (--outage_kind=kill), keys without state count as drained
--outage
    take the private redis-server away in the middle of the run; skipped by
    default with --url or --mode=local (no private server to take away)
--outage_at
    seconds into the run at which the outage starts; 0: 40% of --seconds
--outage_seconds
    how long the outage lasts, in seconds; 0: 20% of --seconds
--outage_kind
    stop (SIGSTOP, then SIGCONT) or kill (kill -9, then restarted empty)
--live
    a row per window as it closes (on a terminal with a progress bar and
    the instances' health); --nolive: only the summary
)";

struct Flag {
  std::string name;
  bool is_bool = false;
  bool alias = false;  // another name of a field (not passed on)
  std::function<bool(O&, absl::string_view, std::string*)> parse;
  std::function<std::string(const O&)> text;
};

template <typename T>
Flag Field(const char* name, T O::*field) {
  Flag f{name, std::is_same_v<T, bool>, false, {}, {}};
  f.parse = [field](O& o, absl::string_view v, std::string* error) {
    return absl::ParseFlag<T>(v, &(o.*field), error);
  };
  f.text = [field](const O& o) { return absl::UnparseFlag<T>(o.*field); };
  return f;
}

// A flag whose values are names: those of enum E's values 0, 1, ... (the
// library's too: flags_test checks they name the right values).
template <typename E, size_t N>
Flag Choice(const char* name, E O::*field, const char* const (&names)[N],
            bool alias = false) {
  Flag f{name, false, alias, {}, {}};
  f.parse = [field, &names](O& o, absl::string_view v, std::string* error) {
    std::string all;
    for (size_t i = 0; i < N; ++i) {
      if (v == names[i]) {
        o.*field = static_cast<E>(i);
        return true;
      }
      absl::StrAppend(&all, i == 0 ? "" : i + 1 < N ? ", " : " or ", names[i]);
    }
    *error = absl::StrCat("it must be ", all);
    return false;
  };
  f.text = [field, &names](const O& o) {
    return std::string(names[static_cast<size_t>(o.*field)]);
  };
  return f;
}

constexpr const char* kModes[] = {"leased", "local", "direct"};
constexpr const char* kKeyDists[] = {"hot", "zipf"};
constexpr const char* kPacings[] = {"tick", "sleep", "spin", "busy"};
constexpr const char* kOutageKinds[] = {"stop", "kill"};
constexpr const char* kColdKeyPolicies[] = {"local_share", "deny", "wait"};
constexpr const char* kFailureModes[] = {"fail_closed", "fail_open",
                                         "fail_local"};
constexpr const char* kOutageUsages[] = {"forget", "charge"};
constexpr const char* kAlgorithms[] = {"token_bucket", "gcra", "fixed_window",
                                       "sliding_counter", "sliding_log"};

const std::vector<Flag>& Flags() {
  static const auto* flags = new std::vector<Flag>{
      // never freed
      Choice("scenario", &O::keys, kKeyDists),
      Choice("keys", &O::keys, kKeyDists, /*alias=*/true),
      Choice("mode", &O::mode, kModes),
      Field("instances", &O::instances),
      Field("threads", &O::threads),
      Field("limit", &O::limit),
      Field("burst", &O::burst),
      Field("offered", &O::offered),
      Field("seconds", &O::seconds),
      Field("zipf_keys", &O::zipf_keys),
      Field("zipf_s", &O::zipf_s),
      Field("window_ms", &O::window_ms),
      Field("csv", &O::csv),
      Field("chart", &O::chart),
      Field("url", &O::url),
      Field("use_handle", &O::use_handle),
      Choice("pacing", &O::pacing, kPacings),
      Field("tick_us", &O::tick_us),
      Field("sample_every", &O::sample_every),
      Field("lease_ttl_ms", &O::lease_ttl_ms),
      Field("idle_evict_ms", &O::idle_evict_ms),
      Field("max_lease_fraction", &O::max_lease_fraction),
      Choice("cold_key_policy", &O::cold_key_policy, kColdKeyPolicies),
      Field("local_share", &O::local_share),
      Field("charge_delay_ms", &O::charge_delay_ms),
      Choice("algorithm", &O::algorithm, kAlgorithms),
      Choice("failure_mode", &O::failure_mode, kFailureModes),
      Field("fallback_instances", &O::fallback_instances),
      Choice("outage_usage", &O::outage_usage, kOutageUsages),
      Field("discover_instances", &O::discover_instances),
      Field("start_empty", &O::start_empty),
      Field("outage", &O::outage),
      Field("outage_at", &O::outage_at),
      Field("outage_seconds", &O::outage_seconds),
      Choice("outage_kind", &O::outage_kind, kOutageKinds),
      Field("live", &O::live),
      // Internal: set by the parent on an instance (not in --help).
      Field("instance", &O::instance),
      Field("fd", &O::fd),
      Field("prefix", &O::prefix),
  };
  return *flags;
}

const Flag* Find(absl::string_view name) {
  for (const Flag& f : Flags()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

}  // namespace

const char* ModeName(Mode m) { return kModes[static_cast<int>(m)]; }
const char* KeyDistName(KeyDist k) { return kKeyDists[static_cast<int>(k)]; }

absl::StatusOr<CommandLine> ParseFlags(const std::vector<std::string>& args) {
  CommandLine c;
  absl::flat_hash_map<std::string, std::string> raw;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") {
      return Invalid(absl::StrCat("unexpected argument '", arg,
                                  "'; the demo takes only flags"));
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    if (arg == "help" || arg == "h" || arg == "helpfull" || arg == "?") {
      c.help = true;
      return c;
    }
    const size_t eq = arg.find('=');
    const absl::string_view name = arg.substr(0, eq);
    std::string value = eq == arg.npos ? "" : std::string(arg.substr(eq + 1));
    const Flag* f = Find(name);
    const Flag* negated = absl::StartsWith(name, "no") && eq == arg.npos
                              ? Find(name.substr(2))
                              : nullptr;
    if (f == nullptr && negated != nullptr && negated->is_bool) {
      f = negated;
      value = "false";  // --noname
    } else if (f == nullptr) {
      return Invalid(absl::StrCat("unknown flag --", name));
    } else if (eq == arg.npos && f->is_bool) {
      value = "true";
    } else if (eq == arg.npos) {
      if (i + 1 == args.size()) {
        return Invalid(absl::StrCat("--", name, " needs a value"));
      }
      value = args[++i];
    }
    std::string error;
    if (!f->parse(c.options, value, &error)) {
      return Invalid(absl::StrCat("--", f->name, " is '", value, "'; ",
                                  error.empty() ? "it does not parse" : error));
    }
    c.given.insert(f->name);
    raw[f->name] = value;
  }
  if (c.given.contains("keys") && c.given.contains("scenario") &&
      raw["keys"] != raw["scenario"]) {
    return Invalid(absl::StrCat(
        "--scenario is '", raw["scenario"], "' but --keys is '", raw["keys"],
        "'; give one of them (--keys is its old name)"));
  }
  if (const char* env = std::getenv(kRedisUrlEnv);
      c.options.url.empty() && env != nullptr) {
    c.options.url = env;  // keeps a password off the command line
  }
  return c;
}

std::vector<std::string> FlagArgs(const DemoOptions& o) {
  std::vector<std::string> args;
  for (const Flag& f : Flags()) {
    if (!f.alias) {
      args.push_back(absl::StrCat("--", f.name, "=", f.text(o)));
    }
  }
  return args;
}

std::string FlagText(const DemoOptions& o, absl::string_view name) {
  const Flag* f = Find(name);
  return f == nullptr ? "" : f->text(o);
}

std::string Usage() {
  std::string out;
  for (absl::string_view line : absl::StrSplit(kUsage, '\n')) {
    const Flag* f = absl::ConsumePrefix(&line, "--") ? Find(line) : nullptr;
    if (f == nullptr) {
      absl::StrAppend(&out, line, "\n");
      continue;
    }
    const std::string v = f->text(DemoOptions());
    absl::StrAppend(&out, "  --", line, " (default: ", v.empty() ? "\"\"" : v,
                    ")\n");
  }
  return out;
}

namespace {

absl::Status InRange(absl::string_view flag, int64_t value, int64_t lo,
                     int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return Invalid(absl::StrCat("--", flag, " is ", value,
                              "; it must be between ", lo, " and ", hi));
}

absl::Status Check(bool ok, absl::string_view message) {
  return ok ? absl::OkStatus() : Invalid(message);
}

// "--<flag> is <v>; it must be more than 0 and at most <max>".
absl::Status Positive(absl::string_view flag, double v, double max) {
  return Check(v > 0 && v <= max,
               absl::StrCat("--", flag, " is ", v, "; it must be more than 0",
                            std::isinf(max) ? "" : " and at most ",
                            std::isinf(max) ? "" : absl::StrCat(max)));
}

}  // namespace

absl::Status ValidateOptions(const DemoOptions& o) {
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
  s.Update(Positive("seconds", o.seconds, 3600));
  s.Update(InRange("window_ms", o.window_ms, 1, 60'000));
  s.Update(InRange("tick_us", o.tick_us, 10, 100'000));
  s.Update(InRange("zipf_keys", o.zipf_keys, 1, 100'000'000));
  s.Update(Positive("zipf_s", o.zipf_s, INFINITY));
  s.Update(InRange("sample_every", o.sample_every, 1, 1'000'000'000));
  s.Update(InRange("fallback_instances", o.fallback_instances, 0, 65536));
  if (o.outage) {
    s.Update(Check(o.outage_at > 0 && o.outage_at < o.seconds,
                   absl::StrCat("--outage_at is ", o.outage_at,
                                "; it must be within --seconds (", o.seconds,
                                "); --outage=false for no outage")));
    s.Update(Positive("outage_seconds", o.outage_seconds, 3600));
  }
  s.Update(InRange("lease_ttl_ms", o.lease_ttl_ms, 1, 3'600'000));
  s.Update(InRange("idle_evict_ms", o.idle_evict_ms, 1, 86'400'000));
  s.Update(Positive("max_lease_fraction", o.max_lease_fraction, 1));
  s.Update(InRange("charge_delay_ms", o.charge_delay_ms, 0,
                   std::max(o.lease_ttl_ms, 0)));
  s.Update(Positive("local_share", o.local_share, 1));
  if (o.algorithm != Algorithm::kTokenBucket && o.mode != Mode::kLocal) {
    s.Update(Invalid(absl::StrCat(
        "--algorithm is ", AlgorithmName(o.algorithm),
        "; leased and direct mode use token_bucket (use --mode=local)")));
  }
  if (s.ok() && o.mode == Mode::kLocal) {
    if (absl::Status spec = ValidateSpec(LocalSpec(o)); !spec.ok()) {
      return Invalid(absl::StrCat(
          "the limit of one instance (--limit / --instances, --algorithm) is "
          "invalid: ",
          spec.message()));
    }
  }
  return s;
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return CPU_COUNT(&set);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

LoadPlan PlanLoad(int cpus, int instances, Mode mode) {
  const int spare = std::max(1, cpus - 1);
  LoadPlan p;
  p.instances = instances > 0 ? instances : std::clamp(spare, 2, 4);
  p.threads =
      std::clamp(spare / p.instances,
                 mode == Mode::kDirect ? kDirectThreads : 1, kMaxThreads);
  return p;
}

DemoOptions ResolveOptions(DemoOptions o, int cpus) {
  const bool hot = o.keys == KeyDist::kHot;
  const LoadPlan plan = PlanLoad(cpus, o.instances, o.mode);
  if (o.instances == 0) o.instances = plan.instances;
  if (o.threads == 0) o.threads = plan.threads;
  if (o.limit == 0) o.limit = hot ? kHotLimit : kZipfLimit;
  if (o.burst == 0) {
    // The local mode and fail_local split the burst over the instances:
    // each needs at least one token of it.
    o.burst = hot ? std::max<int64_t>(o.limit / kHotBurstDivisor, o.instances)
                  : o.limit;
  }
  if (o.offered == 0) {
    o.offered = kOverload * static_cast<double>(o.limit) / ZipfP0(o);
  }
  if (o.outage && o.outage_at == 0) o.outage_at = kOutageStart * o.seconds;
  if (o.outage && o.outage_seconds == 0) {
    o.outage_seconds = kOutageLength * o.seconds;
  }
  return o;
}

std::string DescribeChoices(const DemoOptions& requested, const DemoOptions& r,
                            int cpus) {
  std::string out = absl::StrFormat(
      "load: %d instance process%s%s x %d load thread%s%s", r.instances,
      r.instances == 1 ? "" : "es",
      requested.instances > 0 ? " (--instances)" : "", r.threads,
      r.threads == 1 ? "" : "s", requested.threads > 0 ? " (--threads)" : "");
  if (requested.instances == 0 || requested.threads == 0) {
    absl::StrAppendFormat(
        &out,
        "; chosen for the %d CPU%s this process may use: one instance per "
        "CPU left after redis-server's (2 to 4), %s",
        cpus, cpus == 1 ? "" : "s",
        r.mode == Mode::kDirect
            ? absl::StrFormat("at least %d load threads each (a direct "
                              "decision waits, asleep, for its reply)",
                              kDirectThreads)
            : "at most one load thread per spare CPU");
  }
  if (r.pacing == Pacing::kTick) {
    absl::StrAppendFormat(
        &out,
        "\npacing: tick; each load thread wakes every %s and makes the calls "
        "due since back to back: nothing spins, so redis-server and the "
        "reconcilers keep their CPU\n",
        ShortNs(int64_t{r.tick_us} * 1000));
  } else {
    absl::StrAppendFormat(&out, "\npacing: %s (--pacing)\n",
                          FlagText(r, "pacing"));
  }
  const double p0 = ZipfP0(r);
  absl::StrAppendFormat(
      &out, "offered: %s/s %s = %.1f x the limit on %s\n",
      Commas(static_cast<int64_t>(r.offered)),
      requested.offered > 0 ? "(--offered)" : "(chosen)",
      p0 * r.offered / static_cast<double>(r.limit),
      r.keys == KeyDist::kHot
          ? "the hot key"
          : absl::StrFormat("the hottest key (p = %.4f: %s/s)", p0,
                            Commas(static_cast<int64_t>(p0 * r.offered))));
  return out;
}

}  // namespace tokenlease::tools
