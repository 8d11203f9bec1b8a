#include "cli/check.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/common.h"
#include "cli/flag_table.h"
#include "cli/spec_flags.h"
#include "cli/throttle.h"
#include "tokenlease/direct.h"
#include "tokenlease/redis.h"

namespace tokenlease::cli {
namespace {

constexpr char kUsage[] =
    R"(Usage: tokenlease check --key=<key> --limit=<n> [--period=1s] [flags]
       tokenlease check [--format=throttle] <key> <max_burst> <count per period> <period seconds> [<quantity>]

One direct-mode decision on Redis: takes --cost tokens of --key if the limit
admits them now (DirectLimiter::TryAcquire: one atomic script call, timed by
the server's clock), and prints the decision. Services and other `check`
calls share the limit when --prefix, --key and the limit are the same.

The second form takes redis-cell's CL.THROTTLE arguments: GCRA with <count>
tokens per <period> seconds and a capacity of max_burst + 1, charging
<quantity> (default 1; 0 only looks). With --format=throttle the reply is
CL.THROTTLE's five integers, one a line: limited (0/1), total limit,
remaining, retry after (s, -1 if allowed or never), reset after (s).

Exit status: 0 allowed, 1 denied, 2 usage or Redis error (on stderr).)";

struct CheckFlags {
  SpecFlags spec;
  std::string key;
  int64_t cost = 1;
  RedisFlags redis;
  std::string format = "human";
};

void AddCheckFlags(CheckFlags* f, FlagTable* t) {
  AddSpecFlags(&f->spec, t);
  t->Add("key", &f->key, "the limited key (required in the flag form)");
  t->Add("cost", &f->cost,
         "tokens to take, 0 to 2^50; 0 only looks (admitted if the limit is "
         "not exhausted, nothing charged)");
  AddRedisFlags(
      &f->redis, t,
      "DirectLimiterOptions::key_prefix: the Redis keys are "
      "{<prefix><key>}:b<band>",
      "how long to wait for the connection and the decision, 1ms to 1m");
  t->Add("format", &f->format,
         "human (one line), throttle (CL.THROTTLE's five integers) or json "
         "(one object)");
}

// The request, from flags or from the CL.THROTTLE arguments.
struct CheckRequest {
  CheckOutcome outcome;  // key, cost, spec and limit filled in
  CheckFormat format = CheckFormat::kHuman;
  std::string prefix;
  std::string url;
  RedisTlsOptions tls;
  absl::Duration timeout;
};

absl::StatusOr<CheckFormat> ParseFormat(const std::string& f) {
  if (f == "human") return CheckFormat::kHuman;
  if (f == "throttle") return CheckFormat::kThrottle;
  if (f == "json") return CheckFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat(
      "--format is '", f, "'; it must be human, throttle or json"));
}

absl::StatusOr<CheckRequest> MakeRequest(
    const CheckFlags& f, const FlagTable& table,
    const std::vector<std::string>& positional) {
  CheckRequest r;
  absl::StatusOr<CheckFormat> format = ParseFormat(f.format);
  if (!format.ok()) return format.status();
  r.format = *format;
  if (!positional.empty()) {
    if (AnySpecFlagGiven(table) || table.specified("key") ||
        table.specified("cost")) {
      return absl::InvalidArgumentError(
          "give the limit either as flags (--key, --limit, ...) or as "
          "CL.THROTTLE arguments (<key> <max_burst> <count> <period> "
          "[<quantity>]), not both");
    }
    absl::StatusOr<ThrottleArgs> t = ParseThrottleArgs(positional);
    if (!t.ok()) return t.status();
    r.outcome.key = t->key;
    r.outcome.cost = t->quantity;
    r.outcome.spec = ThrottleSpec(*t);
    r.outcome.limit = t->max_burst + 1;
  } else {
    absl::StatusOr<LimitSpec> spec = SpecFromFlags(f.spec);
    if (!spec.ok()) return spec.status();
    r.outcome.spec = *std::move(spec);
    r.outcome.limit = SmallestCapacity(r.outcome.spec);
    r.outcome.key = f.key;
    r.outcome.cost = f.cost;
  }
  if (r.outcome.key.empty()) {
    return absl::InvalidArgumentError(
        "--key is missing: say which key to decide for (e.g. "
        "--key=user:42)");
  }
  if (r.outcome.cost < 0 || r.outcome.cost > (int64_t{1} << 50)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cost is ", r.outcome.cost, "; it must be between 0 and 2^50"));
  }
  const size_t max_key_bytes =
      static_cast<size_t>(DirectLimiterOptions{}.max_key_bytes);
  if (r.outcome.key.size() > max_key_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--key is ", r.outcome.key.size(),
                     " bytes; it must be at most ", max_key_bytes));
  }
  if (absl::Status s = CheckTimeout(f.redis.timeout); !s.ok()) return s;
  r.prefix = f.redis.prefix;
  r.url = ResolveRedisUrl(f.redis.url);
  absl::StatusOr<RedisTlsOptions> tls = TlsFromFlags(f.redis.tls, r.url);
  if (!tls.ok()) return tls.status();
  r.tls = *std::move(tls);
  r.timeout = f.redis.timeout;
  return r;
}

// The lines the limiter's connection logs (RedisOptions::log, on its
// client thread): the limiter names there what kept Redis from deciding.
class LogLines {
 public:
  std::function<void(std::string_view)> Sink() {
    return [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(line);
    };
  }
  // Why Redis gave no decision, as the limiter logged it ("CODE: message"),
  // or a generic reason if it logged nothing; with the connection's last
  // error if that reason does not hold it (a connection that is already
  // down decides at once, saying only that it is down).
  std::string NoDecisionReason() const {
    static constexpr std::string_view kPrefix = "Redis gave no decision: ";
    static constexpr std::string_view kNoConnection = ": no connection: ";
    static constexpr std::string_view kRetrying = " (retrying with backoff)";
    std::lock_guard<std::mutex> lock(mu_);
    std::string reason = "Redis did not answer by the deadline";
    for (const std::string& l : lines_) {
      std::string_view line = l;
      if (!line.starts_with(kPrefix)) continue;
      line.remove_prefix(kPrefix.size());
      // The rest is "<status> (<mode> decides meanwhile...)".
      reason = std::string(line.substr(0, line.rfind(" (fail_closed decides")));
      break;
    }
    // "redis <where>: no connection: <error> (retrying with backoff)".
    for (auto it = lines_.rbegin(); it != lines_.rend(); ++it) {
      std::string_view line = *it;
      const size_t at = line.find(kNoConnection);
      if (at == std::string_view::npos) continue;
      line.remove_prefix(at + kNoConnection.size());
      if (line.ends_with(kRetrying)) line.remove_suffix(kRetrying.size());
      if (reason.find(line) == std::string::npos) {
        // Debian's absl::string_view is not std::string_view.
        absl::StrAppend(&reason, " (last error: ",
                        absl::string_view(line.data(), line.size()), ")");
      }
      break;
    }
    return reason;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// What to do about an error of the call, for the message: `key_error`
// says Redis answered with an error for the key (a wrong type, a corrupt
// value, another spec's state), else it did not answer.
std::string Hint(bool key_error, const CheckRequest& r) {
  if (key_error) {
    return absl::StrCat("; `tokenlease inspect --prefix=", r.prefix,
                        " --key=", r.outcome.key, "` shows what the key holds");
  }
  return absl::StrCat(
      "; is Redis running at ", Redacted(r.url),
      "? (--url or $TOKENLEASE_REDIS_URL; ",
      absl::StartsWith(r.url, "rediss") ? "the --tls_* flags; " : "",
      "--timeout=", absl::FormatDuration(r.timeout), ")");
}

}  // namespace

std::string FormatHuman(const CheckOutcome& o) {
  const Decision& d = o.decision;
  std::string retry;
  if (d.allowed) {
    retry = "0";
  } else if (d.retry_after_ns == kNever) {
    retry =
        absl::StrCat("never (cost ", o.cost,
                     " is more than the limit admits at once, ", o.limit, ")");
  } else {
    retry = absl::FormatDuration(d.retry_after());
  }
  return absl::StrCat(d.allowed ? "allowed" : "denied", ": remaining ",
                      d.remaining, ", retry after ", retry, ", reset after ",
                      absl::FormatDuration(d.reset_after()), " (key ",
                      JsonString(o.key), ", cost ", o.cost, ", ",
                      DescribeSpec(o.spec), ")\n");
}

std::string FormatJson(const CheckOutcome& o) {
  const Decision& d = o.decision;
  const int64_t retry_us =
      d.retry_after_ns == kNever ? -1 : d.retry_after_ns / 1000;
  return absl::StrCat(
      "{\"allowed\":", d.allowed ? "true" : "false",
      ",\"remaining\":", d.remaining, ",\"retry_after_us\":", retry_us,
      ",\"reset_after_us\":", d.reset_after_ns / 1000, ",\"limit\":", o.limit,
      ",\"key\":", JsonString(o.key), ",\"cost\":", o.cost,
      ",\"spec\":", JsonString(DescribeSpec(o.spec)), "}\n");
}

int RunCheck(absl::Span<const std::string> args, std::ostream& out,
             std::ostream& err) {
  CheckFlags flags;
  FlagTable table(kUsage);
  AddCheckFlags(&flags, &table);
  absl::StatusOr<std::vector<std::string>> positional = table.Parse(args);
  if (table.help_requested()) {
    out << table.Usage();
    return kExitOk;
  }
  absl::StatusOr<CheckRequest> r =
      positional.ok() ? MakeRequest(flags, table, *positional)
                      : absl::StatusOr<CheckRequest>(positional.status());
  if (!r.ok()) return UsageError(err, "check", r.status().message());

  WarnIfInsecure(err, "check", !r->tls.verify_peer);
  LogLines log;  // outlives the limiter, whose connection logs into it
  DirectLimiterOptions options;
  options.redis.url = r->url;
  options.redis.tls = r->tls;
  options.redis.log = log.Sink();
  // One decision: the connection may take the whole --timeout to come up,
  // and nothing is left to finish when the program ends.
  options.redis.connect_timeout = r->timeout;
  options.redis.command_timeout = r->timeout;
  options.redis.shutdown_grace = absl::ZeroDuration();
  options.key_prefix = r->prefix;
  options.timeout = r->timeout;
  absl::StatusOr<std::unique_ptr<DirectLimiter>> limiter =
      DirectLimiter::Create(r->outcome.spec, options);
  if (!limiter.ok()) {
    // A CA, certificate or key file that cannot be used, named.
    return UsageError(err, "check", InFlagTerms(limiter.status().message()));
  }
  const Decision d =
      (*limiter)->TryAcquire(r->outcome.key, r->outcome.cost, r->timeout);
  if (d.source == DecisionSource::kInvalidArgument) {  // checked above
    err << "tokenlease check: Redis was not asked: the request is invalid\n";
    return kExitUsage;
  }
  if (d.source != DecisionSource::kDirect) {
    // The failure mode's decision (fail_closed, the default): Redis gave
    // none. Not a denial: the limit's state is unknown.
    err << "tokenlease check: no decision from " << Redacted(r->url) << ": "
        << InFlagTerms(log.NoDecisionReason())
        << Hint((*limiter)->stats().key_errors > 0, *r) << "\n";
    return kExitUsage;
  }
  CheckOutcome& o = r->outcome;
  o.decision = d;
  switch (r->format) {
    case CheckFormat::kHuman:
      out << FormatHuman(o);
      break;
    case CheckFormat::kThrottle:
      out << FormatThrottleReply(CellThrottleReply(o.decision, o.limit));
      break;
    case CheckFormat::kJson:
      out << FormatJson(o);
      break;
  }
  return d.allowed ? kExitOk : kExitDenied;
}

}  // namespace tokenlease::cli
