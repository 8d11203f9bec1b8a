#include "cli/spec_flags.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/common.h"
#include "local/spec_facts.h"
#include "redis/endpoint.h"
#include "redis/script_call.h"
#include "redis/tls.h"

namespace tokenlease::cli {
namespace {

// The limit flags, in the order of --help and of the lists SpecFromFlags
// parses.
struct SpecFlag {
  const char* name;
  std::string SpecFlags::*value;
  const char* help;
};
constexpr SpecFlag kSpecFlags[] = {
    {"algorithm", &SpecFlags::algorithm,
     "token_bucket, gcra, fixed_window, sliding_counter or sliding_log; "
     "a comma-separated list makes a limit of several bands (at most 4), "
     "charged all or nothing, and so does every flag below"},
    {"limit", &SpecFlags::limit,
     "tokens per --period, 1 to 2^40 (no default: give it, or use the "
     "CL.THROTTLE arguments)"},
    {"period", &SpecFlags::period,
     "the period of --limit, an absl duration (1s, 1m, 24h, 1.5s), whole "
     "microseconds, 1us to 5 years"},
    {"burst", &SpecFlags::burst,
     "token_bucket and gcra: the capacity; 0 means --limit"},
    {"refill", &SpecFlags::refill,
     "token_bucket: smooth (a token every period/limit) or stepwise "
     "(--limit tokens at each whole period)"},
    {"anchor", &SpecFlags::anchor,
     "fixed_window: aligned (windows start at the epoch + "
     "--window_offset + k x period) or first_request (at the first "
     "request after the previous window ended)"},
    {"window_offset", &SpecFlags::window_offset,
     "fixed_window, sliding_counter and sliding_log: shifts aligned "
     "windows and log granules (-8h with --period=24h: days in UTC+8)"},
    {"log_granularity", &SpecFlags::log_granularity,
     "sliding_log: record grants at the start of their granule of this "
     "length; 0 records exact times"},
    {"max_log_entries", &SpecFlags::max_log_entries,
     "sliding_log: entries kept per key, 0 (= 256) or 2 to 2^20"},
};

constexpr Algorithm kAlgorithms[] = {
    Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kFixedWindow,
    Algorithm::kSlidingWindowCounter, Algorithm::kSlidingWindowLog};

// One flag's list: its values as text, parsed into T by `parse`.
template <typename T>
struct List {
  std::string flag;
  std::vector<T> values;
  // The value of band i (a single value applies to every band).
  const T& at(size_t i) const {
    return values.size() == 1 ? values[0] : values[i];
  }
};

template <typename T>
absl::StatusOr<List<T>> ParseList(
    std::string flag, const std::string& text,
    const std::function<bool(absl::string_view, T*)>& parse,
    absl::string_view accepted) {
  List<T> list{std::move(flag), {}};
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    T value;
    if (!parse(item, &value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", list.flag, " has the value '", item, "'; it must be ", accepted,
          " (a comma-separated list gives one value per band)"));
    }
    list.values.push_back(value);
  }
  return list;
}

bool ParseInt(absl::string_view s, int64_t* out) {
  return absl::SimpleAtoi(s, out);
}
bool ParseDuration(absl::string_view s, absl::Duration* out) {
  return absl::ParseDuration(s, out);
}
bool ParseAlgorithm(absl::string_view s, Algorithm* out) {
  for (Algorithm a : kAlgorithms) {
    if (s == AlgorithmName(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}
bool ParseRefill(absl::string_view s, Refill* out) {
  if (s != "smooth" && s != "stepwise") return false;
  *out = s == "smooth" ? Refill::kSmooth : Refill::kStepwise;
  return true;
}
bool ParseAnchor(absl::string_view s, WindowAnchor* out) {
  if (s != "aligned" && s != "first_request") return false;
  *out = s == "aligned" ? WindowAnchor::kAligned : WindowAnchor::kFirstRequest;
  return true;
}

// Which bands use a setting (the others ignore it).
bool UsesBurst(const Band& b) { return internal::IsBucket(b); }
bool UsesRefill(const Band& b) {
  return b.algorithm == Algorithm::kTokenBucket;
}
bool UsesAnchor(const Band& b) {
  return b.algorithm == Algorithm::kFixedWindow;
}
bool UsesOffset(const Band& b) { return !internal::IsBucket(b); }
bool UsesLog(const Band& b) {
  return b.algorithm == Algorithm::kSlidingWindowLog;
}

// A value other than the default, for a band whose algorithm ignores the
// setting, is an error: the user meant something that would not happen.
// A single value given for several bands must be used by one of them.
template <typename T>
absl::Status CheckApplies(const List<T>& list, const T& default_value,
                          const std::vector<Band>& bands,
                          bool (*uses)(const Band&), absl::string_view who) {
  if (list.values.size() == 1 && bands.size() > 1) {
    if (list.values[0] == default_value) return absl::OkStatus();
    for (const Band& b : bands) {
      if (uses(b)) return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--", list.flag, " applies to ", who,
                     " bands only; this limit has none"));
  }
  for (size_t i = 0; i < bands.size(); ++i) {
    if (!(list.at(i) == default_value) && !uses(bands[i])) {
      if (bands.size() == 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", list.flag, " applies to ", who, " bands only; this limit is ",
            AlgorithmName(bands[0].algorithm)));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "--", list.flag, " applies to ", who, " bands only; band ", i, " is ",
          AlgorithmName(bands[i].algorithm),
          " (give the default for it in the list)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void AddSpecFlags(SpecFlags* f, FlagTable* t) {
  for (const SpecFlag& flag : kSpecFlags) {
    t->Add(flag.name, &(f->*flag.value), flag.help);
  }
}

bool AnySpecFlagGiven(const FlagTable& table) {
  for (const SpecFlag& flag : kSpecFlags) {
    if (table.specified(flag.name)) return true;
  }
  return false;
}

void AddTlsFlags(TlsFlags* f, FlagTable* t) {
  t->Add("tls_ca_file", &f->ca_file,
         "rediss:// URLs: a PEM file of the certificate authorities that "
         "verify the server; empty, with --tls_ca_dir empty too: the "
         "system's trust store");
  t->Add("tls_ca_dir", &f->ca_dir,
         "rediss:// URLs: a directory of hashed CA certificates (openssl "
         "rehash)");
  t->Add("tls_cert_file", &f->cert_file,
         "rediss:// URLs: the client certificate (PEM, with its chain) for "
         "a server that requires one (mutual TLS); with --tls_key_file");
  t->Add("tls_key_file", &f->key_file,
         "rediss:// URLs: the private key of --tls_cert_file (PEM, "
         "unencrypted)");
  t->Add("tls_server_name", &f->server_name,
         "rediss:// URLs: the name the server's certificate must hold (and "
         "the SNI sent); empty: the URL's host");
  t->Add("tls_insecure", &f->insecure,
         "rediss:// URLs: do not verify the server's certificate (anyone on "
         "the path can pose as the server): for tests only");
}

absl::StatusOr<RedisTlsOptions> TlsFromFlags(const TlsFlags& f,
                                             absl::string_view url) {
  std::vector<std::string> given;
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"tls_ca_file", &f.ca_file},
        {"tls_ca_dir", &f.ca_dir},
        {"tls_cert_file", &f.cert_file},
        {"tls_key_file", &f.key_file},
        {"tls_server_name", &f.server_name}}) {
    if (!value->empty()) given.push_back(absl::StrCat("--", name));
  }
  if (f.insecure) given.push_back("--tls_insecure");
  if (!given.empty()) {
    if (url.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(absl::StrJoin(given, ", "),
                       " given without --url: they apply to a rediss:// URL"));
    }
    absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(url);
    if (ep.ok() && !ep->tls) {
      return absl::InvalidArgumentError(
          absl::StrCat(absl::StrJoin(given, ", "), " given, but ",
                       Redacted(url), " is not a TLS URL: use rediss://"));
    }
  }
  RedisTlsOptions tls;
  tls.ca_file = f.ca_file;
  tls.ca_dir = f.ca_dir;
  tls.cert_file = f.cert_file;
  tls.key_file = f.key_file;
  tls.server_name = f.server_name;
  tls.verify_peer = !f.insecure;
  // The library's own checks (a plain URL was refused above, by flag
  // name), in flag terms.
  if (absl::Status s = internal::ValidateTlsOptions(tls, /*tls_url=*/true);
      !s.ok()) {
    return absl::InvalidArgumentError(InFlagTerms(s.message()));
  }
  return tls;
}

void AddRedisFlags(RedisFlags* f, FlagTable* t, std::string prefix_help,
                   std::string timeout_help) {
  t->Add("prefix", &f->prefix, std::move(prefix_help));
  t->Add("url", &f->url,
         absl::StrCat("Redis server, redis://[[user]:password@]host[:port]"
                      "[/db], rediss://... (TLS: the --tls_* flags) or "
                      "unix:///path[?db=N]; empty: "
                      "$TOKENLEASE_REDIS_URL (keeps a password off the "
                      "command line), else ",
                      kDefaultRedisUrl));
  AddTlsFlags(&f->tls, t);
  t->Add("timeout", &f->timeout, std::move(timeout_help));
}

absl::Status CheckTimeout(absl::Duration timeout) {
  if (timeout >= absl::Milliseconds(1) && timeout <= absl::Minutes(1)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--timeout is ", absl::FormatDuration(timeout),
                   "; it must be between 1ms and 1m"));
}

absl::StatusOr<LimitSpec> SpecFromFlags(const SpecFlags& f) {
  if (absl::StripAsciiWhitespace(f.limit).empty()) {
    return absl::InvalidArgumentError(
        "--limit is missing: say how many tokens per --period (e.g. "
        "--limit=10 --period=1s)");
  }
  absl::StatusOr<List<Algorithm>> algorithm = ParseList<Algorithm>(
      "algorithm", f.algorithm, ParseAlgorithm,
      "token_bucket, gcra, fixed_window, sliding_counter or sliding_log");
  if (!algorithm.ok()) return algorithm.status();
  absl::StatusOr<List<int64_t>> limit =
      ParseList<int64_t>("limit", f.limit, ParseInt, "an integer");
  if (!limit.ok()) return limit.status();
  absl::StatusOr<List<absl::Duration>> period = ParseList<absl::Duration>(
      "period", f.period, ParseDuration, "a duration such as 1s, 10m or 24h");
  if (!period.ok()) return period.status();
  absl::StatusOr<List<int64_t>> burst =
      ParseList<int64_t>("burst", f.burst, ParseInt, "an integer");
  if (!burst.ok()) return burst.status();
  absl::StatusOr<List<Refill>> refill =
      ParseList<Refill>("refill", f.refill, ParseRefill, "smooth or stepwise");
  if (!refill.ok()) return refill.status();
  absl::StatusOr<List<WindowAnchor>> anchor = ParseList<WindowAnchor>(
      "anchor", f.anchor, ParseAnchor, "aligned or first_request");
  if (!anchor.ok()) return anchor.status();
  absl::StatusOr<List<absl::Duration>> offset =
      ParseList<absl::Duration>("window_offset", f.window_offset, ParseDuration,
                                "a duration such as -8h or 0");
  if (!offset.ok()) return offset.status();
  absl::StatusOr<List<absl::Duration>> granule =
      ParseList<absl::Duration>("log_granularity", f.log_granularity,
                                ParseDuration, "a duration such as 1s or 0");
  if (!granule.ok()) return granule.status();
  absl::StatusOr<List<int64_t>> entries = ParseList<int64_t>(
      "max_log_entries", f.max_log_entries, ParseInt, "an integer");
  if (!entries.ok()) return entries.status();

  // The band count is the longest list; every other list has one value
  // (for all bands) or one per band.
  const size_t sizes[] = {
      algorithm->values.size(), limit->values.size(),   period->values.size(),
      burst->values.size(),     refill->values.size(),  anchor->values.size(),
      offset->values.size(),    granule->values.size(), entries->values.size()};
  static_assert(std::extent_v<decltype(sizes)> == std::size(kSpecFlags));
  const size_t* widest = std::max_element(std::begin(sizes), std::end(sizes));
  const size_t n = *widest;
  const char* longest = kSpecFlags[widest - std::begin(sizes)].name;
  if (n > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", longest, " has ", n, " values; a limit has at most 4 bands"));
  }
  for (size_t k = 0; k < std::size(sizes); ++k) {
    if (sizes[k] != 1 && sizes[k] != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", kSpecFlags[k].name, " has ", sizes[k], " values but --",
          longest, " has ", n,
          "; give one value per band, or one value for every band"));
    }
  }
  for (int64_t e : entries->values) {
    if (e < 0 || e > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max_log_entries has the value ", e,
                       "; it must be 0 (= 256) or 2 to 1048576"));
    }
  }
  LimitSpec spec;
  for (size_t i = 0; i < n; ++i) {
    Band b;
    b.algorithm = algorithm->at(i);
    b.limit = limit->at(i);
    b.period = period->at(i);
    b.burst = burst->at(i);
    b.refill = refill->at(i);
    b.anchor = anchor->at(i);
    b.window_offset = offset->at(i);
    b.log_granularity = granule->at(i);
    b.max_log_entries = static_cast<int32_t>(entries->at(i));
    spec.bands.push_back(b);
  }
  absl::Status s = CheckApplies<int64_t>(*burst, 0, spec.bands, UsesBurst,
                                         "token_bucket and gcra");
  s.Update(CheckApplies<Refill>(*refill, Refill::kSmooth, spec.bands,
                                UsesRefill, "token_bucket"));
  s.Update(CheckApplies<WindowAnchor>(*anchor, WindowAnchor::kAligned,
                                      spec.bands, UsesAnchor, "fixed_window"));
  s.Update(CheckApplies<absl::Duration>(
      *offset, absl::ZeroDuration(), spec.bands, UsesOffset,
      "fixed_window, sliding_counter and sliding_log"));
  s.Update(CheckApplies<absl::Duration>(*granule, absl::ZeroDuration(),
                                        spec.bands, UsesLog, "sliding_log"));
  s.Update(
      CheckApplies<int64_t>(*entries, 0, spec.bands, UsesLog, "sliding_log"));
  if (!s.ok()) return s;
  if (absl::Status v = internal::ValidateScriptSpec(spec); !v.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the limit flags describe no valid limit: ", v.message(),
        " (bands[i] is the value at position i, from 0, of each list)"));
  }
  return spec;
}

int64_t SmallestCapacity(const LimitSpec& spec) {
  int64_t smallest = INT64_MAX;
  for (const Band& b : spec.bands) {
    smallest = std::min(smallest, internal::EffectiveBurst(b));
  }
  return smallest;
}

}  // namespace tokenlease::cli
