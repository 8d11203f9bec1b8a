#include "demo_options.h"

#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace tokenlease::tools {
namespace {

constexpr std::pair<const char*, Algorithm> kAlgorithms[] = {
    {"token_bucket", Algorithm::kTokenBucket},
    {"gcra", Algorithm::kGcra},
    {"fixed_window", Algorithm::kFixedWindow},
    {"sliding_counter", Algorithm::kSlidingWindowCounter},
    {"sliding_log", Algorithm::kSlidingWindowLog},
};

absl::Status BadValue(absl::string_view name, absl::string_view value,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "invalid value \"%s\" for --%s: %s", value, name, expected));
}

absl::Status ParseInt(absl::string_view name, absl::string_view value,
                      int64_t* out) {
  if (!absl::SimpleAtoi(value, out)) {
    return BadValue(name, value, "expected an integer");
  }
  return absl::OkStatus();
}

absl::Status ParseDuration(absl::string_view name, absl::string_view value,
                           absl::Duration* out) {
  if (!absl::ParseDuration(value, out)) {
    return BadValue(name, value,
                    "expected a duration such as 1s, 250ms, 1m30s");
  }
  return absl::OkStatus();
}

absl::Status ParseBool(absl::string_view name, absl::string_view value,
                       bool* out) {
  if (!absl::SimpleAtob(value, out)) {
    return BadValue(name, value, "expected true or false");
  }
  return absl::OkStatus();
}

absl::Status ParseAlgorithm(absl::string_view value, Algorithm* out) {
  for (const auto& [name, algorithm] : kAlgorithms) {
    if (value == name) {
      *out = algorithm;
      return absl::OkStatus();
    }
  }
  return BadValue("algorithm", value,
                  "expected token_bucket, gcra, fixed_window, "
                  "sliding_counter or sliding_log");
}

// Applies one flag whose value is known. `name` has no leading dashes.
absl::Status ApplyFlag(absl::string_view name, absl::string_view value,
                       DemoOptions* o) {
  if (name == "algorithm") return ParseAlgorithm(value, &o->algorithm);
  if (name == "limit") return ParseInt(name, value, &o->limit);
  if (name == "period") return ParseDuration(name, value, &o->period);
  if (name == "burst") {
    o->burst_set = true;
    return ParseInt(name, value, &o->burst);
  }
  if (name == "duration") {
    absl::Status s = ParseDuration(name, value, &o->duration);
    if (s.ok() && (o->duration <= absl::ZeroDuration() ||
                   o->duration > absl::Hours(24))) {
      return BadValue(name, value, "must be more than 0 and at most 24h");
    }
    return s;
  }
  if (name == "threads") {
    int64_t n = 0;
    absl::Status s = ParseInt(name, value, &n);
    if (!s.ok()) return s;
    if (n < 1 || n > kMaxThreads) {
      return BadValue(name, value,
                      absl::StrCat("must be between 1 and ", kMaxThreads));
    }
    o->threads = static_cast<int>(n);
    return absl::OkStatus();
  }
  if (name == "offered") {
    double x = 0;
    if (!absl::SimpleAtod(value, &x) || !std::isfinite(x) || x < 0) {
      return BadValue(name, value,
                      "expected requests per second, 0 or more (0 means as "
                      "fast as possible)");
    }
    o->offered = x;
    return absl::OkStatus();
  }
  if (name == "keys") {
    absl::Status s = ParseInt(name, value, &o->keys);
    if (s.ok() && (o->keys < 1 || o->keys > kMaxKeys)) {
      return BadValue(name, value,
                      absl::StrCat("must be between 1 and ", kMaxKeys));
    }
    return s;
  }
  if (name == "handle") return ParseBool(name, value, &o->handle);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag --", name, " (see `tokenlease demo --help`)"));
}

bool IsKnownValueFlag(absl::string_view name) {
  for (const char* f : {"algorithm", "limit", "period", "burst", "duration",
                        "threads", "offered", "keys"}) {
    if (name == f) return true;
  }
  return false;
}

}  // namespace

const char* AlgorithmFlagName(Algorithm a) {
  for (const auto& [name, algorithm] : kAlgorithms) {
    if (algorithm == a) return name;
  }
  return "unknown";
}

absl::Status ParseDemoFlags(const std::vector<std::string>& args,
                            DemoOptions* options) {
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg == "--") {
      if (i + 1 < args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected argument \"", args[i + 1],
                         "\"; `tokenlease demo` takes only flags"));
      }
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", arg,
                       "\"; `tokenlease demo` takes only flags"));
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    if (arg == "help" || arg == "h") {
      options->help = true;
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq != absl::string_view::npos) {
      absl::Status s =
          ApplyFlag(arg.substr(0, eq), arg.substr(eq + 1), options);
      if (!s.ok()) return s;
      continue;
    }
    if (arg == "handle") {
      options->handle = true;
    } else if (arg == "nohandle") {
      options->handle = false;
    } else if (IsKnownValueFlag(arg)) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", arg, " needs a value"));
      }
      absl::Status s = ApplyFlag(arg, args[++i], options);
      if (!s.ok()) return s;
    } else {
      return ApplyFlag(arg, "", options);  // reports the unknown flag
    }
  }
  return absl::OkStatus();
}

std::string DemoUsage() {
  return absl::StrFormat(
      R"(Usage: tokenlease demo [flags]

Runs one limit in this process under load from several threads. Every 0.5 s
it prints the offered and admitted rates, the limit's rate, their ratio and
the p50/p99 latency of TryAcquire over the interval; at the end, a per-thread
summary and a check that no key was admitted more than the limit allows.

Flags:
  --algorithm=NAME  token_bucket, gcra, fixed_window, sliding_counter or
                    sliding_log (default token_bucket)
  --limit=N         tokens per period, per key (default 10000)
  --period=D        the limit's period, e.g. 1s, 250ms, 1m (default 1s)
  --burst=N         token_bucket/gcra capacity; 0 means the limit (default 0)
  --threads=N       worker threads, 1 to %d (default 2)
  --duration=D      how long to run, e.g. 5s (default 5s)
  --offered=N       requests per second over all threads, paced on a
                    deadline schedule; 0 means as fast as possible
                    (default 10 x the limit's rate)
  --keys=N          number of keys, each with its own limit, chosen
                    uniformly per request; 1 is one hot key; at most %d
                    (default 1)
  --handle          call TryAcquire with pre-resolved KeyHandles instead of
                    string keys (default false)
  --help            print this help

Exit status: 0 on success, 1 if the bound check fails, 2 on a usage error or
an invalid limit.
)",
      kMaxThreads, kMaxKeys);
}

}  // namespace tokenlease::tools
