#include "cli/inspect.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/common.h"
#include "cli/flag_table.h"
#include "cli/spec_flags.h"
#include "local/spec_facts.h"
#include "redis/script_call.h"

namespace tokenlease::cli {
namespace {

using internal::RedisReply;

constexpr char kUsage[] =
    R"(Usage: tokenlease inspect --key=<key> [--prefix=tokenlease:] [limit flags] [flags]
       tokenlease inspect [flags] <key>

What Redis holds for one limited key, decoded: each band key's type, TTL and
raw value, the state at the server's time (tokens, TAT, window, counts, log
entries), its stamp and whether it fits the limit given by the flags, and
what a request could take now. Read-only: it sends only MULTI/EXEC, TIME,
TYPE, PTTL, GET, ZRANGE, ZCARD and (with --leases) SCAN.

Without the limit flags it decodes what the stamps say (kind and units of
every band but a sliding log); the limit and burst, and which log entries
are live, need the flags. Composite limits: give one value per band in
each flag (e.g. --algorithm=fixed_window,sliding_log --limit=1,3
--period=24h,168h); without flags every band key found (:b0 to :b3) is
shown.

Exit status: 0 decoded, 1 a key holds something a call of the limit refuses
(a wrong type, a corrupt value, another spec's state), 2 usage or Redis
error.)";

// Entries of a log read at most (a log holds at most max_log_entries + 1).
constexpr int kMaxMembers = 65536;
constexpr int kMaxBandSlots = 4;  // a limit has at most 4 bands
constexpr int kMaxLeasesShown = 20;
constexpr int kMaxLeasesRead = 1000;

struct InspectFlags {
  SpecFlags spec;
  std::string key;
  RedisFlags redis;
  bool leases = false;
};

void AddInspectFlags(InspectFlags* f, FlagTable* t) {
  AddSpecFlags(&f->spec, t);
  t->Add("key", &f->key, "the limited key (or give it as the argument)");
  AddRedisFlags(
      &f->redis, t,
      "the limiters' key_prefix: the Redis keys are {<prefix><key>}:b<i>",
      "how long to wait for the connection and each reply, 1ms to 1m");
  t->Add("leases", &f->leases,
         "also list the lease records {<prefix><key>}:r:<lease_id> (a SCAN "
         "of the whole database: slow on a large one)");
}

// Runs `commands` in one MULTI/EXEC: the replies, in order, all of one
// instant.
absl::StatusOr<std::vector<RedisReply>> Transaction(
    ReadOnlyRedis& redis, const std::vector<std::vector<std::string>>& cmds) {
  absl::StatusOr<RedisReply> r = redis.Run({"MULTI"});
  if (!r.ok()) return r.status();
  if (r->is_error())
    return absl::InternalError(absl::StrCat("MULTI: ", r->str));
  for (const std::vector<std::string>& c : cmds) {
    r = redis.Run(c);
    if (!r.ok()) return r.status();
  }
  r = redis.Run({"EXEC"});
  if (!r.ok()) return r.status();
  if (r->type != RedisReply::Type::kArray ||
      r->elements.size() != cmds.size()) {
    return absl::InternalError(
        absl::StrCat("EXEC answered ", r->DebugString()));
  }
  return std::move(r->elements);
}

std::string WrongType(const KeyInfo& k, const char* want) {
  return absl::StrCat("key '", k.key, "' holds a ", k.type, ", not the ", want,
                      " tokenlease keeps there; delete or rename it");
}

// The replies of one band slot: TYPE, PTTL, GET, ZCARD, ZRANGE of the band
// key, TYPE, PTTL, GET of its meta key.
constexpr int kPerSlot = 8;

void AddSlotCommands(const std::string& key,
                     std::vector<std::vector<std::string>>* cmds) {
  const std::string meta = key + ":m";
  cmds->push_back({"TYPE", key});
  cmds->push_back({"PTTL", key});
  cmds->push_back({"GET", key});
  cmds->push_back({"ZCARD", key});
  cmds->push_back(
      {"ZRANGE", key, "0", absl::StrCat(kMaxMembers - 1), "WITHSCORES"});
  cmds->push_back({"TYPE", meta});
  cmds->push_back({"PTTL", meta});
  cmds->push_back({"GET", meta});
}

// Decodes one slot's replies; `band` is the spec's (or null).
BandReport ReadSlot(int index, const std::string& key,
                    absl::Span<const RedisReply> r, const Band* band,
                    int64_t now_us) {
  BandReport b;
  b.index = index;
  b.key = {key, r[0].str, r[1].integer};
  b.meta = {key + ":m", r[5].str, r[6].integer};
  b.present = b.key.type != "none" || b.meta.type != "none";
  const bool log = band != nullptr
                       ? band->algorithm == Algorithm::kSlidingWindowLog
                       : b.key.type == "zset" ||
                             (b.key.type == "none" && b.meta.type != "none");
  DecodedBand& d = b.decoded;
  if (!b.present) return b;
  if (log) {
    d.kind = BandKind::kLog;
    if (b.key.type != "zset" && b.key.type != "none") {
      d.problems.push_back(WrongType(b.key, "zset"));
    }
    if (b.meta.type != "string" && b.meta.type != "none") {
      d.problems.push_back(WrongType(b.meta, "string"));
    }
    if (!d.problems.empty()) return b;
    std::vector<LogMember> members;
    if (b.key.type == "zset") {
      b.zset_size = r[3].integer;
      for (size_t i = 0; i + 1 < r[4].elements.size(); i += 2) {
        members.push_back({r[4].elements[i].str, r[4].elements[i + 1].str});
      }
    }
    std::optional<std::string> meta;
    if (b.meta.type == "string") meta = b.value = r[7].str;
    d = DecodeLogBand(b.key.key, members, b.meta.key, meta, band, now_us);
    if (b.zset_size > kMaxMembers) {
      d.lines.insert(d.lines.begin(),
                     absl::StrCat("only the first ", kMaxMembers, " of ",
                                  b.zset_size, " members were read"));
    }
    return b;
  }
  if (b.key.type == "none") {  // only a stray :m key: the band is fresh
    b.present = false;
    return b;
  }
  if (b.key.type != "string") {
    d.problems.push_back(
        WrongType(b.key, band == nullptr ? "string (or zset)" : "string"));
    return b;
  }
  b.value = r[2].str;
  d = DecodeStringBand(b.key.key, b.value, band, now_us);
  return b;
}

// "*", "?", "[", "]" and "\" escaped for a SCAN MATCH pattern.
std::string GlobEscape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

absl::Status ReadLeases(ReadOnlyRedis& redis, InspectReport* report) {
  const std::string pattern = GlobEscape(report->tag) + ":r:*";
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    absl::StatusOr<RedisReply> r =
        redis.Run({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!r.ok()) return r.status();
    if (r->type != RedisReply::Type::kArray || r->elements.size() != 2) {
      return absl::InternalError(
          absl::StrCat("SCAN answered ", r->DebugString()));
    }
    cursor = r->elements[0].str;
    for (const RedisReply& k : r->elements[1].elements) {
      ++report->leases_found;
      if (keys.size() < static_cast<size_t>(kMaxLeasesRead)) {
        keys.push_back(k.str);
      }
    }
  } while (cursor != "0");
  std::sort(keys.begin(), keys.end());
  if (keys.size() > static_cast<size_t>(kMaxLeasesShown)) {
    keys.resize(kMaxLeasesShown);
  }
  std::vector<std::vector<std::string>> cmds;
  for (const std::string& k : keys) {
    cmds.push_back({"TYPE", k});
    cmds.push_back({"PTTL", k});
    cmds.push_back({"GET", k});
  }
  if (cmds.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<RedisReply>> r = Transaction(redis, cmds);
  if (!r.ok()) return r.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    LeaseReport l;
    l.key = {keys[i], (*r)[3 * i].str, (*r)[3 * i + 1].integer};
    l.value = (*r)[3 * i + 2].str;
    // "<granted> <granted_at_us>" (docs/lua-protocol.md, the lease key).
    const std::vector<absl::string_view> parts = absl::StrSplit(l.value, ' ');
    int64_t granted = 0, at = 0;
    if (l.key.type == "string" && parts.size() == 2 &&
        absl::SimpleAtoi(parts[0], &granted) &&
        absl::SimpleAtoi(parts[1], &at) && granted >= 0) {
      l.line = absl::StrCat("granted ", granted, " at ", FormatTimeUs(at), " (",
                            FormatUs(report->now_us - at), " ago), ",
                            TtlText(l.key.pttl_ms));
    } else if (l.key.type != "string") {
      report->problems.push_back(WrongType(l.key, "string"));
      l.line = report->problems.back();
    } else {
      report->problems.push_back(absl::StrCat(
          "key '", l.key.key, "' holds '", l.value.substr(0, 64),
          "', not a tokenlease grant record; delete or rename it"));
      l.line = report->problems.back();
    }
    report->leases.push_back(std::move(l));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InspectReport> Inspect(ReadOnlyRedis& redis,
                                      const InspectRequest& request) {
  InspectReport report;
  report.endpoint = redis.endpoint();
  report.request = request;
  report.tag = internal::LimitKeyTag(request.prefix, request.key);
  std::vector<std::vector<std::string>> cmds = {{"TIME"},
                                                {"GET", "tokenlease:since"}};
  // Every band slot a limit can have: the spec's bands, and keys beyond
  // them (a limit that had more bands, or another spec on the same name).
  for (int i = 0; i < kMaxBandSlots; ++i) {
    AddSlotCommands(absl::StrCat(report.tag, ":b", i), &cmds);
  }
  absl::StatusOr<std::vector<RedisReply>> replies = Transaction(redis, cmds);
  if (!replies.ok()) return replies.status();
  const std::vector<RedisReply>& r = *replies;
  int64_t s = 0, us = 0;
  if (r[0].elements.size() != 2 ||
      !absl::SimpleAtoi(r[0].elements[0].str, &s) ||
      !absl::SimpleAtoi(r[0].elements[1].str, &us)) {
    return absl::InternalError(
        absl::StrCat("TIME answered ", r[0].DebugString()));
  }
  report.now_us = s * 1'000'000 + us;
  if (r[1].type == RedisReply::Type::kString) report.since = r[1].str;
  const size_t spec_bands = request.spec ? request.spec->bands.size() : 0;
  for (int i = 0; i < kMaxBandSlots; ++i) {
    const Band* band =
        static_cast<size_t>(i) < spec_bands ? &request.spec->bands[i] : nullptr;
    BandReport b = ReadSlot(
        i, absl::StrCat(report.tag, ":b", i),
        absl::Span<const RedisReply>(r).subspan(2 + kPerSlot * i, kPerSlot),
        band, report.now_us);
    if (request.spec && static_cast<size_t>(i) >= spec_bands) {
      if (b.key.type != "none") report.extra_keys.push_back(b.key.key);
      if (b.meta.type != "none") report.extra_keys.push_back(b.meta.key);
      continue;
    }
    if (!request.spec && !b.present) continue;
    if (band != nullptr && band->algorithm != Algorithm::kSlidingWindowLog &&
        b.meta.type != "none") {
      report.extra_keys.push_back(b.meta.key);  // no call of this spec reads it
    }
    if (!b.present && band != nullptr) {
      // No state: the band is fresh (a state back to fresh is deleted).
      b.decoded.kind = BandKind::kUndecided;
      b.decoded.capacity = internal::EffectiveBurst(*band);
      b.decoded.available = b.decoded.capacity;
      b.decoded.used = 0;
      b.decoded.full_in_us = 0;
    }
    for (const std::string& p : b.decoded.problems) {
      report.problems.push_back(p);
    }
    report.bands.push_back(std::move(b));
  }
  // Over the bands: what a request could take now, and when all are fresh.
  bool known = !report.bands.empty() || request.spec.has_value();
  int64_t available = INT64_MAX, full_in = 0;
  for (const BandReport& b : report.bands) {
    if (!b.decoded.available || !b.decoded.full_in_us) {
      known = false;
      break;
    }
    available = std::min(available, *b.decoded.available);
    full_in = std::max(full_in, *b.decoded.full_in_us);
  }
  if (known && !report.bands.empty() && report.problems.empty()) {
    report.available = available;
    report.full_in_us = full_in;
  }
  if (request.leases) {
    if (absl::Status st = ReadLeases(redis, &report); !st.ok()) return st;
  }
  return report;
}

int RunInspect(absl::Span<const std::string> args, std::ostream& out,
               std::ostream& err) {
  InspectFlags flags;
  FlagTable table(kUsage);
  AddInspectFlags(&flags, &table);
  absl::StatusOr<std::vector<std::string>> positional = table.Parse(args);
  if (table.help_requested()) {
    out << table.Usage();
    return kExitOk;
  }
  auto usage_error = [&err](absl::string_view message) {
    return UsageError(err, "inspect", message);
  };
  if (!positional.ok()) return usage_error(positional.status().message());
  InspectRequest request;
  request.key = flags.key;
  if (positional->size() == 1 && !table.specified("key")) {
    request.key = (*positional)[0];
  } else if (!positional->empty()) {
    return usage_error(
        "inspect takes one key, as --key=<key> or as its only argument");
  }
  if (request.key.empty()) {
    return usage_error("--key is missing: say which key to inspect");
  }
  request.prefix = flags.redis.prefix;
  if (absl::Status s =
          internal::ValidateKeyPrefix("--prefix", flags.redis.prefix);
      !s.ok()) {
    return usage_error(s.message());
  }
  request.leases = flags.leases;
  if (AnySpecFlagGiven(table)) {
    absl::StatusOr<LimitSpec> spec = SpecFromFlags(flags.spec);
    if (!spec.ok()) return usage_error(spec.status().message());
    request.spec = *std::move(spec);
  }
  if (absl::Status s = CheckTimeout(flags.redis.timeout); !s.ok()) {
    return usage_error(s.message());
  }
  const std::string url = ResolveRedisUrl(flags.redis.url);
  absl::StatusOr<RedisTlsOptions> tls = TlsFromFlags(flags.redis.tls, url);
  if (!tls.ok()) return usage_error(tls.status().message());
  WarnIfInsecure(err, "inspect", !tls->verify_peer);
  absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> redis =
      ReadOnlyRedis::Connect(url, flags.redis.timeout, *tls);
  if (!redis.ok()) {
    err << "tokenlease inspect: " << InFlagTerms(redis.status().message())
        << "\n(--url or $TOKENLEASE_REDIS_URL say where Redis is"
        << (absl::StartsWith(url, "rediss") ? ", the --tls_* flags how to "
                                              "verify it"
                                            : "")
        << ")\n";
    return kExitUsage;
  }
  absl::StatusOr<InspectReport> report = Inspect(**redis, request);
  if (!report.ok()) {
    err << "tokenlease inspect: " << Redacted(url) << ": "
        << report.status().message() << "\n";
    return kExitUsage;
  }
  out << RenderInspect(*report);
  return report->problems.empty() ? kExitOk : kExitDenied;
}

}  // namespace tokenlease::cli
