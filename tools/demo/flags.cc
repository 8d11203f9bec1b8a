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
#include <vector>

#include "absl/flags/marshalling.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "demo/report.h"
#include "demo/targets.h"
#include "demo/workload.h"

namespace tokenlease::tools {
namespace {

using O = DemoOptions;

// What --help prints above the flags.
constexpr char kUsage[] = R"(Usage: tokenlease demo [flags]

The live demo of tokenlease: instance processes share one rate limit
through Redis, and Redis goes away in the middle of the run (by default a
private redis-server, stopped from 40% to 60% of the run; fail_local). A
live row per window, then a summary per phase with its bounds, a CSV and
an SVG chart. Ctrl-C stops early and prints the summary; a second Ctrl-C
kills the instances (exit 130). Exit code: 0 when the run completed (also
if a bound was exceeded: BOUND EXCEEDED lines say so), 1 if it could not
run, 2 on a flag or value it does not accept.

Flags (0: chosen by the machine or the scenario):
)";

// The values a number may take once resolved: [lo, hi], or (lo, hi] if
// open.
struct Range {
  double lo = -INFINITY, hi = INFINITY;
  bool open = false;
};

// A row of the table: help nullptr for the internal flags (not in --help).
struct Flag {
  std::string name;
  const char* help = nullptr;
  Range range;
  bool is_bool = false, alias = false;
  std::function<bool(O&, absl::string_view, std::string*)> parse;
  std::function<std::string(const O&)> text;
  std::function<double(const O&)> number;  // numbers only
};

template <typename T>
Flag Field(const char* name, T O::*field, Range range, const char* help) {
  Flag f{name, help, range, std::is_same_v<T, bool>, false, {}, {}, {}};
  f.parse = [field](O& o, absl::string_view v, std::string* error) {
    return absl::ParseFlag<T>(v, &(o.*field), error);
  };
  f.text = [field](const O& o) { return absl::UnparseFlag<T>(o.*field); };
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    f.number = [field](const O& o) { return static_cast<double>(o.*field); };
  }
  return f;
}
template <typename T>
Flag Field(const char* name, T O::*field, const char* help) {
  return Field(name, field, Range{}, help);
}

// A flag whose values are names: those of enum E's values 0, 1, ... (the
// library's too: flags_test checks they name the right values).
template <typename E, size_t N>
Flag Choice(const char* name, E O::*field, const char* const (&names)[N],
            const char* help, bool alias = false) {
  Flag f{name, help, Range{}, false, alias, {}, {}, {}};
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
constexpr const char* kRedisKinds[] = {"single", "cluster"};
constexpr const char* kColdKeyPolicies[] = {"local_share", "deny", "wait"};
constexpr const char* kFailureModes[] = {"fail_closed", "fail_open",
                                         "fail_local"};
constexpr const char* kOutageUsages[] = {"forget", "charge"};
constexpr const char* kAlgorithms[] = {"token_bucket", "gcra", "fixed_window",
                                       "sliding_counter", "sliding_log"};

const std::vector<Flag>& Flags() {
  static const auto* flags = new std::vector<Flag>{
      // never freed
      Choice("scenario", &O::keys, kKeyDists,
             "hot: one key, 10,000/s; zipf: --zipf_keys keys, 100/s each"),
      Choice("keys", &O::keys, kKeyDists, "--scenario's older name",
             /*alias=*/true),
      Choice("mode", &O::mode, kModes,
             "leased (LeasedLimiter), local (limit / N each), direct"),
      Field("instances", &O::instances, {1, kMaxInstances},
            "instance processes; 0: one per spare CPU, 2 to 4"),
      Field("threads", &O::threads, {1, kMaxThreads},
            "load threads per instance; 0: spare CPUs / instances"),
      Field("limit", &O::limit, {1},
            "token bucket, per second (per key: zipf); 0: 10,000 or 100"),
      Field("burst", &O::burst, {1},
            "token bucket burst; 0: --limit / 10 (hot) or --limit (zipf)"),
      Field("offered", &O::offered, {0, INFINITY, true},
            "decisions/s over all threads; 0: 5 x the hottest key's limit"),
      Field("seconds", &O::seconds, {0, 3600, true}, "length of the run"),
      Field("zipf_keys", &O::zipf_keys, {1, 1e8}, "keys of --scenario=zipf"),
      Field("zipf_s", &O::zipf_s, {0, INFINITY, true}, "its Zipf exponent"),
      Field("window_ms", &O::window_ms, {1, 60000},
            "a live row, a CSV row and a chart step per window"),
      Field("csv", &O::csv,
            "per-window CSV; auto: in $TMPDIR (or /tmp) named after the run"),
      Field("chart", &O::chart,
            "SVG chart of the hot key's rate; auto: the CSV's name, .svg"),
      Field("url", &O::url,
            "Redis URL; empty: $TOKENLEASE_REDIS_URL, else a private server"),
      Choice("redis", &O::redis, kRedisKinds,
             "the private Redis: single, or cluster (3 primaries + replicas)"),
      Field("tls", &O::tls,
            "the private Redis over TLS, client certificates required "
            "(rediss://)"),
      Field("tls_ca_file", &O::tls_ca_file,
            "with a rediss:// --url: the CA file (PEM); empty: the system's"),
      Field("tls_cert_file", &O::tls_cert_file,
            "with a rediss:// --url: a client certificate (PEM)"),
      Field("tls_key_file", &O::tls_key_file,
            "with a rediss:// --url: its key (PEM)"),
      Field("use_handle", &O::use_handle,
            "leased and local mode: decide the hot key through a handle"),
      Choice("pacing", &O::pacing, kPacings,
             "tick (wake every --tick_us), sleep, spin or busy (no syscall)"),
      Field("tick_us", &O::tick_us, {10, 100000},
            "--pacing=tick: microseconds between wake-ups"),
      Field("sample_every", &O::sample_every, {1, 1e9},
            "time every Nth decision of a thread with steady_clock"),
      Field("lease_ttl_ms", &O::lease_ttl_ms, {1, 3.6e6},
            "leased mode: LeaseOptions::lease_ttl in ms"),
      Field("idle_evict_ms", &O::idle_evict_ms, {1, 8.64e7},
            "leased mode: LeaseOptions::idle_evict in ms (>= 2 x lease_ttl)"),
      Field("max_lease_fraction", &O::max_lease_fraction, {0, 1, true},
            "leased mode: LeaseOptions::max_lease_fraction (of the burst)"),
      Choice("cold_key_policy", &O::cold_key_policy, kColdKeyPolicies,
             "leased mode: LeaseOptions::cold_key_policy"),
      Field("local_share", &O::local_share, {0, 1, true},
            "leased mode: LeaseOptions::local_share (of the burst)"),
      Field("charge_delay_ms", &O::charge_delay_ms, {0, 3.6e6},
            "leased mode: LeaseOptions::charge_delay in ms, <= lease_ttl"),
      Field("slice_threshold", &O::slice_threshold, {0, 1e12},
            "leased mode: LeaseOptions::slice_threshold (tokens; 0: never)"),
      Field("slice_single_thread", &O::slice_single_thread,
            "leased mode: LeaseOptions::slice_single_thread"),
      Field("cluster_low_water", &O::cluster_low_water, {0, 1, true},
            "leased mode, --redis=cluster: LeaseOptions::cluster_low_water"),
      Choice("algorithm", &O::algorithm, kAlgorithms,
             "--mode=local's algorithm (the others use token_bucket)"),
      Choice("failure_mode", &O::failure_mode, kFailureModes,
             "Redis away: fail_local (limit / N each), fail_closed, fail_open"),
      Field("fallback_instances", &O::fallback_instances, {0, 65536},
            "fail_local's N until counted (0: --instances)"),
      Choice("outage_usage", &O::outage_usage, kOutageUsages,
             "leased mode: charge what the outage admitted, or forget it"),
      Field("discover_instances", &O::discover_instances,
            "count the instances in Redis for fail_local's N"),
      Field("start_empty", &O::start_empty,
            "LeasedLimiterOptions::start_empty: new keys count as drained"),
      Field("outage", &O::outage,
            "take the private redis-server away (not with --url, local mode)"),
      Field("outage_at", &O::outage_at,
            "seconds into the run the outage starts; 0: 40% (cluster: ends by "
            "80%)"),
      Field("outage_seconds", &O::outage_seconds,
            "seconds the outage lasts; 0: 20% of --seconds (cluster: at least "
            "6)"),
      Choice("outage_kind", &O::outage_kind, kOutageKinds,
             "stop (SIGSTOP, SIGCONT) or kill (-9, restart); cluster: kill, "
             "either\nof the hot key's primary (a SIGSTOP past ~2 s fails over "
             "too)"),
      Field("live", &O::live,
            "a row per window as it closes; --nolive: only the summary"),
      // Internal: set by the parent on an instance.
      Field("instance", &O::instance, nullptr),
      Field("fd", &O::fd, nullptr),
      Field("prefix", &O::prefix, nullptr),
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
  }
  if (const char* env = std::getenv(kRedisUrlEnv);
      c.options.url.empty() && env != nullptr) {
    c.options.url = env;  // keeps a password off the command line
  }
  // A cluster's outage is a primary's kill -9 unless told otherwise: the
  // failover is what it shows.
  if (c.options.redis == RedisKind::kCluster &&
      !c.given.contains("outage_kind")) {
    c.options.outage_kind = OutageKind::kKill;
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
  std::string out = kUsage;
  for (const Flag& f : Flags()) {
    if (f.help == nullptr) continue;
    const std::string v = f.text(DemoOptions());
    absl::StrAppend(&out, "  --", f.name, " (default: ", v.empty() ? "\"\"" : v,
                    ")\n      ",
                    absl::StrReplaceAll(f.help, {{"\n", "\n      "}}), "\n");
  }
  return out;
}

absl::Status ValidateOptions(const DemoOptions& o) {
  for (const Flag& f : Flags()) {
    const double v = f.number ? f.number(o) : 0;
    const Range& r = f.range;
    if (!f.number || ((r.open ? v > r.lo : v >= r.lo) && v <= r.hi)) continue;
    // The ranges' ends are whole numbers.
    const std::string lo = absl::StrCat(static_cast<int64_t>(r.lo)),
                      hi = absl::StrCat(static_cast<int64_t>(r.hi));
    return Invalid(absl::StrCat(
        "--", f.name, " is ", f.text(o), "; it must be ",
        std::isinf(r.hi) ? absl::StrCat(r.open ? "more than " : "at least ", lo)
        : r.open         ? absl::StrCat("more than ", lo, " and at most ", hi)
                         : absl::StrCat("between ", lo, " and ", hi)));
  }
  auto check = [](bool ok, absl::string_view why) {
    return ok ? absl::OkStatus() : Invalid(why);
  };
  absl::Status s = check(
      o.limit >= o.instances,
      absl::StrCat("--limit is ", o.limit,
                   "; it must be at least --instances (", o.instances, ")"));
  s.Update(check(o.charge_delay_ms <= o.lease_ttl_ms,
                 absl::StrCat("--charge_delay_ms is ", o.charge_delay_ms,
                              "; it must be at most --lease_ttl_ms (",
                              o.lease_ttl_ms, ")")));
  if (o.outage) {
    s.Update(check(o.outage_at > 0 && o.outage_at < o.seconds,
                   absl::StrCat("--outage_at is ", o.outage_at,
                                "; it must be within --seconds (", o.seconds,
                                "); --outage=false for no outage")));
    s.Update(check(o.outage_seconds > 0 && o.outage_seconds <= 3600,
                   absl::StrCat("--outage_seconds is ", o.outage_seconds,
                                "; it must be more than 0 and at most 3600")));
  }
  // (An instance gets the parent's cluster in $TOKENLEASE_REDIS_URL.)
  s.Update(check(o.redis == RedisKind::kSingle || o.instance >= 0 ||
                     (o.url.empty() && o.mode != Mode::kLocal),
                 "--redis=cluster starts a private cluster for leased or "
                 "direct mode: drop --url (or $TOKENLEASE_REDIS_URL), "
                 "--mode=local or --redis"));
  s.Update(check(
      !o.tls || o.instance >= 0 || (o.url.empty() && o.mode != Mode::kLocal),
      "--tls starts a private Redis with TLS for leased or direct "
      "mode: drop --url (or $TOKENLEASE_REDIS_URL) or --mode=local "
      "(for a Redis of your own: a rediss:// --url)"));
  s.Update(check((o.tls_ca_file + o.tls_cert_file + o.tls_key_file).empty() ||
                     o.instance >= 0 ||
                     (!o.tls && absl::StartsWith(o.url, "rediss")),
                 "--tls_ca_file, --tls_cert_file and --tls_key_file go with a "
                 "rediss:// --url (--tls makes its own)"));
  s.Update(
      check(o.algorithm == Algorithm::kTokenBucket || o.mode == Mode::kLocal,
            absl::StrCat("--algorithm is ", AlgorithmName(o.algorithm),
                         "; leased and direct mode use token_bucket (use "
                         "--mode=local)")));
  // The lease flags together, as the limiter will check them.
  if (s.ok() && o.mode == Mode::kLeased) s = MakeLeaseOptions(o).Validate();
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
  // hot: a tenth of a second (so half-second windows show the rate, not
  // the bucket), but a token for each instance (local mode and fail_local
  // split it); zipf: a second.
  if (o.burst == 0) {
    o.burst = hot ? std::max<int64_t>(o.limit / 10, o.instances) : o.limit;
  }
  if (o.offered == 0) {
    o.offered = kOverload * static_cast<double>(o.limit) / ZipfP0(o);
  }
  // The outage from 40% to 60% of the run: 8-12 s of the default 20 s. A
  // cluster's outage lasts past the failover (the replica takes over 3-5 s
  // after the kill), and ends by 80% of the run, so that the run shows
  // leasing after it too.
  const bool cluster = o.redis == RedisKind::kCluster;
  if (o.outage && o.outage_seconds == 0) {
    o.outage_seconds = std::max(0.2 * o.seconds, cluster ? 6.0 : 0.0);
  }
  if (o.outage && o.outage_at == 0) {
    o.outage_at = cluster ? std::clamp(0.8 * o.seconds - o.outage_seconds,
                                       0.1 * o.seconds, 0.4 * o.seconds)
                          : 0.4 * o.seconds;
  }
  return o;
}

std::string DescribeChoices(const DemoOptions& requested, const DemoOptions& r,
                            int cpus) {
  const double p0 = ZipfP0(r);
  return absl::StrFormat(
      "load: %d instance%s x %d thread%s (%s), %s pacing%s; offered %s/s (%s) "
      "= %.1f x the limit on the %s\n",
      r.instances, r.instances == 1 ? "" : "s", r.threads,
      r.threads == 1 ? "" : "s",
      requested.instances > 0 && requested.threads > 0
          ? "--instances, --threads"
          : absl::StrCat("chosen for ", cpus, " CPU", cpus == 1 ? "" : "s"),
      FlagText(r, "pacing"),
      // Tick pacing: no wake-up per call, so the cores stay with Redis.
      r.pacing == Pacing::kTick
          ? absl::StrCat(" (a wake-up every ",
                         ShortNs(int64_t{r.tick_us} * 1000), ")")
          : "",
      Commas(static_cast<int64_t>(r.offered)),
      requested.offered > 0 ? "--offered" : "chosen",
      p0 * r.offered / static_cast<double>(r.limit),
      r.keys == KeyDist::kHot ? "hot key"
                              : absl::StrFormat("hottest key (p = %.4f)", p0));
}

}  // namespace tokenlease::tools
