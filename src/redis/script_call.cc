#include "redis/script_call.h"

#include <numeric>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/absl_view.h"
#include "local/spec_facts.h"

namespace tokenlease::internal {
namespace {

// Every quantity the scripts compute stays below 2^51 (with 2^53 the limit
// of exact doubles, sums and differences of two of them stay exact).
constexpr int64_t kExact = int64_t{1} << 51;

bool WholeMicros(absl::Duration d) {
  return d == absl::Microseconds(absl::ToInt64Microseconds(d));
}

int64_t Micros(absl::Duration d) { return absl::ToInt64Microseconds(d); }

absl::Status Invalid(size_t i, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("bands[", i, "].", std::string(what), " (Redis scripts)"));
}

const char* RefillName(Refill r) {
  return r == Refill::kSmooth ? "smooth" : "stepwise";
}
const char* AnchorName(WindowAnchor a) {
  return a == WindowAnchor::kAligned ? "aligned" : "first_request";
}

void AppendSpec(const LimitSpec& spec, std::vector<std::string>& out) {
  out.push_back(absl::StrCat(Micros(spec.max_borrow)));
  out.push_back(absl::StrCat(spec.bands.size()));
  for (const Band& b : spec.bands) {
    out.push_back(AlgorithmName(b.algorithm));
    out.push_back(absl::StrCat(b.limit));
    out.push_back(absl::StrCat(Micros(b.period)));
    out.push_back(absl::StrCat(b.burst));
    out.push_back(RefillName(b.refill));
    out.push_back(AnchorName(b.anchor));
    out.push_back(absl::StrCat(Micros(b.window_offset)));
    out.push_back(absl::StrCat(Micros(b.log_granularity)));
    out.push_back(absl::StrCat(b.max_log_entries));
  }
}

absl::Status ScriptError(const RedisReply& reply, const char* script) {
  if (absl::StrContains(reply.str, "WRONGTYPE")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "tokenlease ", script,
        " script: a key of this limit holds another Redis type (delete or "
        "rename the key named here): ",
        reply.str));
  }
  return absl::InternalError(
      absl::StrCat("tokenlease ", script, " script failed: ", reply.str));
}

}  // namespace

absl::Status ValidateScriptSpec(const LimitSpec& spec) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  if (!WholeMicros(spec.max_borrow)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LimitSpec.max_borrow is ", absl::FormatDuration(spec.max_borrow),
        "; Redis scripts need a whole number of microseconds between 0 and "
        "366 days"));
  }
  const int64_t max_borrow = Micros(spec.max_borrow);
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    const Band& b = spec.bands[i];
    if (!WholeMicros(b.period)) {
      return Invalid(i,
                     absl::StrCat("period is ", absl::FormatDuration(b.period),
                                  "; it must be a whole number of "
                                  "microseconds between 1us and 5 years"));
    }
    if (!WholeMicros(b.window_offset) ||
        b.window_offset < -absl::Microseconds(kExact) ||
        b.window_offset > absl::Microseconds(kExact)) {
      return Invalid(i,
                     absl::StrCat("window_offset is ",
                                  absl::FormatDuration(b.window_offset),
                                  "; it must be a whole number of microseconds "
                                  "within +-2^51us"));
    }
    if (!WholeMicros(b.log_granularity)) {
      return Invalid(
          i, absl::StrCat("log_granularity is ",
                          absl::FormatDuration(b.log_granularity),
                          "; it must be 0 or a whole number of microseconds "
                          "no longer than the period"));
    }
    const int64_t period = Micros(b.period);
    if (IsBucket(b)) {
      const int64_t burst = EffectiveBurst(b);
      const int64_t g = std::gcd(period, b.limit);
      const __int128 p = period / g, l = b.limit / g;
      const bool smooth =
          b.algorithm == Algorithm::kGcra || b.refill == Refill::kSmooth;
      if (smooth) {
        // The debt, in units of 1/l us, must stay below 2^51.
        const __int128 units = burst * p + max_borrow * l;
        if (units >= kExact) {
          return Invalid(
              i, absl::StrCat(
                     "burst (", burst, ") x period/limit (",
                     absl::FormatDuration(b.period), " / ", b.limit,
                     ") + max_borrow (", absl::FormatDuration(spec.max_borrow),
                     ") is ", static_cast<double>(units), " units of 1/",
                     static_cast<int64_t>(l),
                     " us; Redis scripts need it below 2^51 (lower the "
                     "burst or max_borrow, or use a rounder rate)"));
        }
      } else {
        const __int128 refill_us =
            static_cast<__int128>((burst + b.limit - 1) / b.limit) * period +
            max_borrow + period;
        if (refill_us >= kExact) {
          return Invalid(
              i, absl::StrCat("time to refill the burst (", burst, " at ",
                              b.limit, " per ", absl::FormatDuration(b.period),
                              ") + max_borrow must stay below 2^51us for "
                              "Redis scripts"));
        }
      }
    }
    if (b.algorithm == Algorithm::kSlidingWindowLog &&
        b.log_granularity == absl::ZeroDuration()) {
      const int64_t entries = b.max_log_entries > 0 ? b.max_log_entries : 256;
      if (b.limit > entries) {
        // Scored by quantum index: the quantum (ns) must be 1us..2^51ns.
        const __int128 q =
            (static_cast<__int128>(period) * 1000 + entries - 1) / entries;
        if (q < 1000 || q >= kExact) {
          return Invalid(
              i, absl::StrCat("max_log_entries is ", entries, " for period ",
                              absl::FormatDuration(b.period),
                              ": the log quantum period/max_log_entries must "
                              "be between 1us and 2^51ns for Redis scripts"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateKeyPrefix(std::string_view field,
                               std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 256 ||
      prefix.find_first_of("{}") != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        AbslView(field), " \"", AbslView(prefix),
        "\" must be 1 to 256 bytes without '{' or '}' (the prefix and key "
        "form the Redis Cluster hash tag)"));
  }
  return absl::OkStatus();
}

std::string LimitKeyTag(std::string_view prefix, std::string_view name) {
  std::string tag = "{";
  tag.append(prefix).append(name).append("}");
  return tag;
}

std::vector<std::string> BandKeys(const LimitSpec& spec,
                                  std::string_view prefix,
                                  std::string_view name) {
  const std::string tag = LimitKeyTag(prefix, name);
  std::vector<std::string> keys;
  for (size_t i = 0; i < spec.bands.size(); ++i) {
    keys.push_back(absl::StrCat(tag, ":b", i));
    if (spec.bands[i].algorithm == Algorithm::kSlidingWindowLog) {
      keys.push_back(absl::StrCat(tag, ":b", i, ":m"));
    }
  }
  return keys;
}

std::vector<std::string> AcquireArguments(const LimitSpec& spec,
                                          std::string_view prefix,
                                          std::string_view name,
                                          const AcquireArgs& args) {
  const std::vector<std::string> keys = BandKeys(spec, prefix, name);
  std::vector<std::string> out;
  out.reserve(1 + keys.size() + 9 + 9 * spec.bands.size());
  out.push_back(absl::StrCat(keys.size()));
  out.insert(out.end(), keys.begin(), keys.end());
  out.push_back(absl::StrCat(kScriptProtocolVersion));
  out.push_back(absl::StrCat(args.now_us));
  out.push_back(absl::StrCat(args.wanted));
  out.push_back(absl::StrCat(args.minimum));
  out.push_back(absl::StrCat(args.max_wait_us));
  out.push_back(args.charge ? "1" : "0");
  out.push_back(absl::StrCat(args.max_debt));
  AppendSpec(spec, out);
  return out;
}

std::vector<std::string> ReleaseArguments(const LimitSpec& spec,
                                          std::string_view prefix,
                                          std::string_view name,
                                          const ReleaseArgs& args) {
  std::vector<std::string> keys = BandKeys(spec, prefix, name);
  keys.push_back(absl::StrCat(LimitKeyTag(prefix, name), ":r:", args.lease_id));
  std::vector<std::string> out;
  out.push_back(absl::StrCat(keys.size()));
  out.insert(out.end(), keys.begin(), keys.end());
  out.push_back(absl::StrCat(kScriptProtocolVersion));
  out.push_back(absl::StrCat(args.now_us));
  out.push_back(absl::StrCat(args.amount));
  out.push_back(absl::StrCat(args.granted_at_us));
  AppendSpec(spec, out);
  return out;
}

absl::StatusOr<AcquireResult> ParseAcquireReply(const RedisReply& reply) {
  if (reply.is_error()) return ScriptError(reply, "acquire");
  absl::StatusOr<std::vector<int64_t>> v =
      IntegerArray(reply, "tokenlease acquire reply");
  if (!v.ok() || v->size() != 6) {
    return absl::InternalError(
        absl::StrCat("tokenlease acquire script: expected 6 integers, got ",
                     reply.DebugString()));
  }
  const std::vector<int64_t>& x = *v;
  return AcquireResult{x[0], x[1], x[2], x[3], x[4], x[5]};
}

absl::StatusOr<int64_t> ParseReleaseReply(const RedisReply& reply) {
  if (reply.is_error()) return ScriptError(reply, "release");
  if (reply.type != RedisReply::Type::kInteger) {
    return absl::InternalError(
        absl::StrCat("tokenlease release script: expected an integer, got ",
                     reply.DebugString()));
  }
  return reply.integer;
}

Decision ToDecision(const AcquireResult& r, DecisionSource source) {
  Decision d;
  d.source = source;
  // A denial always has a retry time (> 0 or kNever); a 0-token peek that
  // fits has none.
  d.allowed = r.granted > 0 || r.retry_after_us == 0;
  d.remaining = r.remaining;
  d.retry_after_ns = d.allowed              ? 0
                     : r.retry_after_us < 0 ? kNever
                                            : r.retry_after_us * 1000;
  d.reset_after_ns = r.reset_after_us * 1000;
  return d;
}

}  // namespace tokenlease::internal
