#include "redis/script_call.h"

#include <array>
#include <iterator>
#include <numeric>
#include <utility>

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

absl::Status ScriptError(const RedisReply& reply, std::string_view script) {
  if (absl::StrContains(reply.str, "WRONGTYPE")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "tokenlease ", AbslView(script),
        " script: a key of this limit holds another Redis type (delete or "
        "rename the key named here): ",
        reply.str));
  }
  return absl::InternalError(absl::StrCat("tokenlease ", AbslView(script),
                                          " script failed: ", reply.str));
}

// An acquire reply (6 integers) of `script` ("acquire", "batch").
absl::StatusOr<AcquireResult> AcquireReply(const RedisReply& reply,
                                           std::string_view script) {
  if (reply.is_error()) return ScriptError(reply, script);
  absl::StatusOr<std::vector<int64_t>> v =
      IntegerArray(reply, "tokenlease acquire reply");
  if (!v.ok() || v->size() != 6) {
    return absl::InternalError(absl::StrCat(
        "tokenlease ", AbslView(script), " script: expected 6 integers, got ",
        reply.DebugString()));
  }
  const std::vector<int64_t>& x = *v;
  // Out of the protocol's ranges (docs/lua-protocol.md): not our script's
  // reply, or a corrupted one. Never handed on: a negative grant or wait
  // would give tokens or time away.
  // Times in us at most 2^52 (the scripts' own bound is 2^51 for a GCRA
  // debt): x 1000 stays within int64 ns.
  constexpr int64_t kMaxUs = int64_t{1} << 52;
  if (x[0] < 0 || x[1] < 0 || x[2] < -1 || x[3] < 0 || x[5] < 0 ||
      x[2] > kMaxUs || x[3] > kMaxUs || x[5] > kMaxUs) {
    return absl::InternalError(absl::StrCat(
        "tokenlease ", AbslView(script),
        " script: a reply out of range (granted, remaining, reset_after_us "
        "and wait_us >= 0, retry_after_us >= -1, times <= 2^52 us): ",
        reply.DebugString()));
  }
  return AcquireResult{x[0], x[1], x[2], x[3], x[4], x[5]};
}

// A release reply (an integer) of `script`.
absl::StatusOr<int64_t> ReleaseReply(const RedisReply& reply,
                                     std::string_view script) {
  if (reply.is_error()) return ScriptError(reply, script);
  if (reply.type != RedisReply::Type::kInteger || reply.integer < 0) {
    return absl::InternalError(absl::StrCat(
        "tokenlease ", AbslView(script),
        " script: expected an integer >= 0, got ", reply.DebugString()));
  }
  return reply.integer;
}

// CRC16-XMODEM (polynomial 0x1021, initial value 0), by table.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    uint16_t c = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      c = (c & 0x8000) != 0 ? static_cast<uint16_t>((c << 1) ^ 0x1021)
                            : static_cast<uint16_t>(c << 1);
    }
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

uint16_t Crc16(std::string_view s, uint16_t crc = 0) {
  for (const unsigned char c : s) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[(crc >> 8) ^ c]);
  }
  return crc;
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

std::string LeaseKey(std::string_view prefix, std::string_view name,
                     std::string_view lease_id) {
  std::string key = LimitKeyTag(prefix, name);
  key.append(":r:").append(lease_id);
  return key;
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
  std::vector<std::string> keys = BandKeys(spec, prefix, name);
  if (!args.lease_id.empty() && !args.charge) {
    keys.push_back(LeaseKey(prefix, name, args.lease_id));
  }
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
  keys.push_back(LeaseKey(prefix, name, args.lease_id));
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
  return AcquireReply(reply, "acquire");
}

absl::StatusOr<int64_t> ParseReleaseReply(const RedisReply& reply) {
  return ReleaseReply(reply, "release");
}

BatchItem BatchItem::Acquire(std::string name, const AcquireArgs& args) {
  BatchItem item;
  item.op = args.charge ? Op::kCharge : Op::kAcquire;
  item.name = std::move(name);
  item.wanted = args.wanted;
  item.minimum = args.minimum;
  item.max_wait_us = args.max_wait_us;
  item.max_debt = args.max_debt;
  if (!args.charge) item.lease_id = args.lease_id;
  return item;
}

BatchItem BatchItem::Release(std::string name, const ReleaseArgs& args) {
  BatchItem item;
  item.op = Op::kRelease;
  item.name = std::move(name);
  item.amount = args.amount;
  item.granted_at_us = args.granted_at_us;
  item.lease_id = args.lease_id;
  return item;
}

std::vector<std::string> BatchArguments(const LimitSpec& spec,
                                        std::string_view prefix,
                                        std::span<const BatchItem> items,
                                        int64_t now_us, bool keys_in_argv) {
  std::vector<std::string> keys;
  std::vector<std::string> args;
  args.reserve(5 + 9 * spec.bands.size() + 4 * items.size());
  args.push_back(absl::StrCat(kScriptProtocolVersion));
  args.push_back(absl::StrCat(now_us));
  AppendSpec(spec, args);
  args.push_back(absl::StrCat(items.size()));
  for (const BatchItem& item : items) {
    std::vector<std::string> item_keys = BandKeys(spec, prefix, item.name);
    if (keys.empty()) keys.reserve(items.size() * (item_keys.size() + 1));
    keys.insert(keys.end(), std::make_move_iterator(item_keys.begin()),
                std::make_move_iterator(item_keys.end()));
    switch (item.op) {
      case BatchItem::Op::kAcquire:
        if (!item.lease_id.empty()) {
          keys.push_back(LeaseKey(prefix, item.name, item.lease_id));
        }
        args.push_back(item.lease_id.empty() ? "acquire" : "lease");
        args.push_back(absl::StrCat(item.wanted));
        args.push_back(absl::StrCat(item.minimum));
        args.push_back(absl::StrCat(item.max_wait_us));
        break;
      case BatchItem::Op::kCharge:
        args.push_back("charge");
        args.push_back(absl::StrCat(item.wanted));
        args.push_back(absl::StrCat(item.max_debt));
        break;
      case BatchItem::Op::kRelease:
        keys.push_back(LeaseKey(prefix, item.name, item.lease_id));
        args.push_back("release");
        args.push_back(absl::StrCat(item.amount));
        args.push_back(absl::StrCat(item.granted_at_us));
        break;
    }
  }
  std::vector<std::string> out;
  out.reserve(1 + keys.size() + args.size());
  if (keys_in_argv) {
    // The cluster form: no KEYS; the keys follow the items.
    out.push_back("0");
    out.insert(out.end(), std::make_move_iterator(args.begin()),
               std::make_move_iterator(args.end()));
    out.insert(out.end(), std::make_move_iterator(keys.begin()),
               std::make_move_iterator(keys.end()));
    return out;
  }
  out.push_back(absl::StrCat(keys.size()));
  out.insert(out.end(), std::make_move_iterator(keys.begin()),
             std::make_move_iterator(keys.end()));
  out.insert(out.end(), std::make_move_iterator(args.begin()),
             std::make_move_iterator(args.end()));
  return out;
}

std::vector<absl::StatusOr<BatchItemResult>> ParseBatchReply(
    const RedisReply& reply, std::span<const BatchItem> items) {
  std::vector<absl::StatusOr<BatchItemResult>> out;
  if (reply.is_error()) {
    out.assign(items.size(), ScriptError(reply, "batch"));
    return out;
  }
  if (reply.type != RedisReply::Type::kArray ||
      reply.elements.size() != items.size()) {
    out.assign(items.size(),
               absl::InternalError(absl::StrCat(
                   "tokenlease batch script: expected an array of ",
                   items.size(), " replies, got ", reply.DebugString())));
    return out;
  }
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const RedisReply& e = reply.elements[i];
    BatchItemResult r;
    if (items[i].op == BatchItem::Op::kRelease) {
      absl::StatusOr<int64_t> released = ParseReleaseItemReply(e, items[i]);
      if (!released.ok()) {
        out.push_back(released.status());
        continue;
      }
      r.released = *released;
    } else {
      absl::StatusOr<AcquireResult> acquired =
          ParseAcquireItemReply(e, items[i]);
      if (!acquired.ok()) {
        out.push_back(acquired.status());
        continue;
      }
      r.acquire = *acquired;
    }
    out.push_back(r);
  }
  return out;
}

namespace {

// A charge item's reply: one integer, what is left when all of `wanted`
// was charged, else minus the part the debt cap left uncharged (nothing is
// left then: a capped band is at its cap). A lone charge goes to
// acquire.lua (lease_transport.cc), whose 6 integers are taken too.
absl::StatusOr<AcquireResult> ChargeItemReply(const RedisReply& reply,
                                              const BatchItem& item) {
  if (reply.is_error()) return ScriptError(reply, "batch");
  if (reply.type == RedisReply::Type::kArray) {
    absl::StatusOr<AcquireResult> charged = AcquireReply(reply, "acquire");
    if (charged.ok() && charged->granted > item.wanted) {
      return absl::InternalError(
          absl::StrCat("tokenlease acquire script: charged ", charged->granted,
                       " of ", item.wanted));
    }
    return charged;
  }
  if (reply.type != RedisReply::Type::kInteger ||
      reply.integer < -item.wanted) {
    return absl::InternalError(absl::StrCat(
        "tokenlease batch script: expected an integer >= -", item.wanted,
        " for a charge of ", item.wanted, ", got ", reply.DebugString()));
  }
  AcquireResult r;
  r.granted = reply.integer < 0 ? item.wanted + reply.integer : item.wanted;
  r.remaining = reply.integer < 0 ? 0 : reply.integer;
  return r;
}

}  // namespace

absl::StatusOr<AcquireResult> ParseAcquireItemReply(const RedisReply& reply,
                                                    const BatchItem& item) {
  if (item.op == BatchItem::Op::kCharge) return ChargeItemReply(reply, item);
  absl::StatusOr<AcquireResult> acquired = AcquireReply(reply, "batch");
  if (acquired.ok() && acquired->granted > item.wanted) {
    return absl::InternalError(absl::StrCat("tokenlease batch script: granted ",
                                            acquired->granted, " of ",
                                            item.wanted, " wanted"));
  }
  return acquired;
}

absl::StatusOr<int64_t> ParseReleaseItemReply(const RedisReply& reply,
                                              const BatchItem& item) {
  absl::StatusOr<int64_t> released = ReleaseReply(reply, "batch");
  if (released.ok() && *released > item.amount) {
    return absl::InternalError(
        absl::StrCat("tokenlease batch script: released ", *released, " of ",
                     item.amount, " (a release returns at most its amount)"));
  }
  return released;
}

uint16_t HashSlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(key) & 16383);
}

uint16_t LimitSlot(std::string_view prefix, std::string_view name) {
  // The tag is "{<prefix><name>}": its hash tag is prefix + name up to the
  // first '}' (a prefix has no braces); an empty one hashes the whole tag.
  const std::string_view tagged = name.substr(0, name.find('}'));
  if (prefix.empty() && tagged.empty()) {
    return HashSlot(LimitKeyTag(prefix, name));
  }
  return static_cast<uint16_t>(Crc16(tagged, Crc16(prefix)) & 16383);
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
