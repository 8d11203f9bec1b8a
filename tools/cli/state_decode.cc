#include "cli/state_decode.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/common.h"
#include "cli/state_decode_internal.h"
#include "local/spec_facts.h"

namespace tokenlease::cli {
namespace {

using decode::CeilDiv;
using decode::FloorDiv;
using decode::i128;
using decode::k2p53;
using decode::Micros;
using decode::Mod;
using decode::When;

constexpr size_t kShownEntries = 8;  // log entries shown at each end
constexpr int64_t kTenYearsUs = int64_t{10} * 366 * 86400 * 1'000'000;

bool ParseDigits(absl::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return absl::SimpleAtoi(s, out);
}

BandKind KindOf(const Band& b) {
  switch (b.algorithm) {
    case Algorithm::kTokenBucket:
      return b.refill == Refill::kSmooth ? BandKind::kSmooth
                                         : BandKind::kStepwise;
    case Algorithm::kGcra:
      return BandKind::kSmooth;
    case Algorithm::kFixedWindow:
      return BandKind::kFixed;
    case Algorithm::kSlidingWindowCounter:
      return BandKind::kCounter;
    case Algorithm::kSlidingWindowLog:
      return BandKind::kLog;
  }
  return BandKind::kUndecided;
}

BandKind KindOf(const Stamp& s) {
  switch (s.kind) {
    case 'g':
      return BandKind::kSmooth;
    case 's':
      return BandKind::kStepwise;
    case 'f':
      return BandKind::kFixed;
    case 'c':
      return BandKind::kCounter;
  }
  return BandKind::kUndecided;
}

// The scripts' message for a value that is no state of its band.
std::string CorruptMessage(absl::string_view key, absl::string_view value) {
  return absl::StrCat("key '", key, "' holds '", value.substr(0, 64),
                      "', not a tokenlease state; delete or rename it");
}
}  // namespace

const char* BandKindName(BandKind k) {
  switch (k) {
    case BandKind::kSmooth:
      return "token bucket (smooth) or GCRA";
    case BandKind::kStepwise:
      return "token bucket (stepwise)";
    case BandKind::kFixed:
      return "fixed window";
    case BandKind::kCounter:
      return "sliding window counter";
    case BandKind::kLog:
      return "sliding window log";
    case BandKind::kUndecided:
      return "unknown";
  }
  return "unknown";
}

std::optional<Stamp> ParseStamp(absl::string_view text) {
  if (text.size() < 2) return std::nullopt;
  Stamp s;
  s.kind = text[0];
  s.text = std::string(text);
  const std::vector<absl::string_view> parts =
      absl::StrSplit(text.substr(1), '/');
  switch (s.kind) {
    case 'g':
      if (parts.size() != 2 || !ParseDigits(parts[0], &s.p) ||
          !ParseDigits(parts[1], &s.l) || s.p < 1 || s.l < 1) {
        return std::nullopt;
      }
      return s;
    case 's':
      if (parts.size() != 3 || !ParseDigits(parts[0], &s.limit) ||
          !ParseDigits(parts[1], &s.period_us) ||
          !ParseDigits(parts[2], &s.burst)) {
        return std::nullopt;
      }
      return s;
    case 'f':
    case 'c':
      if (parts.size() != 2 || parts[1].empty() ||
          !ParseDigits(parts[0], &s.period_us) || s.period_us < 1 ||
          !ParseDigits(parts[1].substr(1), &s.offset_us)) {
        return std::nullopt;
      }
      if (parts[1][0] != 'a' && (parts[1][0] != 'r' || s.kind == 'c')) {
        return std::nullopt;
      }
      s.aligned = parts[1][0] == 'a';
      return s;
  }
  return std::nullopt;
}

std::string StampOf(const Band& b) {
  const int64_t period = Micros(b.period);
  switch (KindOf(b)) {
    case BandKind::kSmooth: {
      const int64_t g = std::gcd(period, b.limit);
      return absl::StrCat("g", period / g, "/", b.limit / g);
    }
    case BandKind::kStepwise:
      return absl::StrCat("s", b.limit, "/", period, "/",
                          internal::EffectiveBurst(b));
    case BandKind::kFixed:
      return absl::StrCat("f", period, "/",
                          b.anchor == WindowAnchor::kAligned ? "a" : "r",
                          Mod(Micros(b.window_offset), period));
    case BandKind::kCounter:
      return absl::StrCat("c", period, "/a",
                          Mod(Micros(b.window_offset), period));
    default:
      return "";
  }
}

StampVerdict CompareStamp(const Stamp& stored, const Band& band) {
  if (stored.text == StampOf(band)) return StampVerdict::kSame;
  const BandKind kind = KindOf(band);
  if ((kind == BandKind::kSmooth && stored.kind == 'g') ||
      (kind == BandKind::kStepwise && stored.kind == 's')) {
    return StampVerdict::kTakesOver;
  }
  return StampVerdict::kRefuses;
}

absl::StatusOr<StringState> ParseStringState(absl::string_view value) {
  StringState st;
  std::vector<absl::string_view> parts = absl::StrSplit(value, ' ');
  // The stamp, if any: the last word, a letter of a stamp's kind then
  // digits, '/', 'a' or 'r' (the scripts' pattern), and then of its form.
  if (parts.size() > 2 && !parts.back().empty() &&
      absl::string_view("gscf").find(parts.back()[0]) !=
          absl::string_view::npos &&
      parts.back().find_first_not_of("0123456789/ar", 1) ==
          absl::string_view::npos) {
    st.stamp = ParseStamp(parts.back());
    if (!st.stamp) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", parts.back(), "' is not a stamp"));
    }
    parts.pop_back();
  }
  if (parts.size() != 2 && parts.size() != 3) {
    return absl::InvalidArgumentError("a state is 2 or 3 integers and a stamp");
  }
  for (absl::string_view p : parts) {
    absl::string_view digits = p;
    if (!digits.empty() && digits[0] == '-') digits.remove_prefix(1);
    int64_t v;
    if (digits.empty() ||
        digits.find_first_not_of("0123456789") != absl::string_view::npos ||
        !absl::SimpleAtoi(p, &v) || v <= -k2p53 || v >= k2p53) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", p, "' is not an integer below 2^53"));
    }
    st.numbers.push_back(v);
  }
  return st;
}

DecodedBand DecodeStringBand(absl::string_view key, absl::string_view value,
                             const Band* band, int64_t now_us) {
  DecodedBand d;
  absl::StatusOr<StringState> st = ParseStringState(value);
  if (band != nullptr) d.kind = KindOf(*band);
  if (!st.ok()) {
    d.problems.push_back(CorruptMessage(key, value));
    d.lines.push_back(absl::StrCat("not a state: ", st.status().message()));
    return d;
  }
  const Band* spec_band = band;
  if (st->stamp) {
    const BandKind stamped = KindOf(*st->stamp);
    std::string line = absl::StrCat("stamp: ", st->stamp->text);
    if (band != nullptr) {
      const std::string expected = StampOf(*band);
      switch (CompareStamp(*st->stamp, *band)) {
        case StampVerdict::kSame:
          absl::StrAppend(&line, "; matches the spec");
          break;
        case StampVerdict::kTakesOver:
          absl::StrAppend(&line, "; the spec's is ", expected,
                          ": a call with it takes the state over, tokens "
                          "consumed stay consumed");
          break;
        case StampVerdict::kRefuses:
          absl::StrAppend(&line, "; the spec's is ",
                          expected.empty() ? "none (a log)" : expected,
                          ": a call with it fails");
          d.problems.push_back(absl::StrCat(
              "key '", key, "' holds the state of another spec ('",
              st->stamp->text, "'; this call's is '",
              expected.empty() ? "none" : expected,
              "'), which this one cannot take over: give each spec its own "
              "limit name, or delete the key"));
          spec_band = nullptr;  // decode by the stamp alone
          break;
      }
    }
    d.lines.push_back(line);
    d.kind = stamped;
  } else if (band == nullptr) {
    d.lines.push_back(
        "no stamp (written before stamps existed): give the spec flags to "
        "decode it");
    return d;
  } else {
    d.lines.push_back(
        "no stamp (written before stamps existed): read as a "
        "state of the spec");
  }
  const size_t n = st->numbers.size();
  switch (d.kind) {
    case BandKind::kSmooth:
      if (n != 2 && n != 3) break;
      decode::DecodeSmooth(*st, spec_band, now_us, &d);
      break;
    case BandKind::kStepwise:
      decode::DecodeStepwise(*st, spec_band, now_us, &d);
      break;
    case BandKind::kFixed:
      decode::DecodeFixed(*st, spec_band, now_us, &d);
      break;
    case BandKind::kCounter:
      decode::DecodeCounter(*st, spec_band, now_us, &d);
      break;
    case BandKind::kLog:
      d.problems.push_back(absl::StrCat(
          "key '", key,
          "' holds a string, but a sliding log keeps a zset there; delete or "
          "rename it"));
      return d;
    case BandKind::kUndecided:
      break;
  }
  // A kind's range checks failed: the scripts call it corrupt.
  if (!d.problems.empty() && d.problems.back().find("key '") != 0) {
    d.lines.push_back(absl::StrCat("not a state: ", d.problems.back()));
    d.problems.back() = CorruptMessage(key, value);
  }
  return d;
}

DecodedBand DecodeLogBand(absl::string_view key,
                          const std::vector<LogMember>& members,
                          absl::string_view meta_key,
                          const std::optional<std::string>& meta_value,
                          const Band* band, int64_t now_us) {
  DecodedBand d;
  d.kind = BandKind::kLog;
  // The meta "<total> <latest_us>", without a stamp.
  std::optional<int64_t> meta_total, latest;
  if (meta_value) {
    absl::StatusOr<StringState> st = ParseStringState(*meta_value);
    if (!st.ok() || st->numbers.size() != 2 || st->numbers[0] < 0) {
      d.problems.push_back(CorruptMessage(meta_key, *meta_value));
    } else if (st->stamp) {
      d.problems.push_back(absl::StrCat(
          "key '", meta_key, "' holds the state of another spec ('",
          st->stamp->text,
          "'; this call's is 'none'), which this one cannot take over: give "
          "each spec its own limit name, or delete the key"));
    } else {
      meta_total = st->numbers[0];
      latest = st->numbers[1];
      d.lines.push_back(absl::StrCat("meta: total ", *meta_total,
                                     ", latest evaluation ",
                                     When(*latest, now_us)));
    }
  } else if (!members.empty()) {
    d.lines.push_back("meta: missing (the next call counts the entries)");
  }
  // The entries "<score>:<tokens>".
  struct Entry {
    int64_t score, tokens;
  };
  std::vector<Entry> entries;
  int64_t sum = 0;
  for (const LogMember& m : members) {
    const absl::string_view s = m.member;
    const size_t colon = s.find(':');
    int64_t score = 0, tokens = 0;
    const absl::string_view sc =
        colon == absl::string_view::npos ? s : s.substr(0, colon);
    const bool negative = !sc.empty() && sc[0] == '-';
    if (colon == absl::string_view::npos ||
        !ParseDigits(negative ? sc.substr(1) : sc, &score) ||
        !ParseDigits(s.substr(colon + 1), &tokens)) {
      d.problems.push_back(
          absl::StrCat("key '", key, "' holds the member '", s.substr(0, 64),
                       "', not a tokenlease log entry; delete or rename it"));
      continue;
    }
    if (negative) score = -score;
    entries.push_back({score, tokens});
    sum += tokens;
  }
  if (meta_total && *meta_total != sum && d.problems.empty()) {
    d.lines.push_back(absl::StrCat("note: the entries hold ", sum,
                                   " tokens, the meta says ", *meta_total));
  }
  // With the spec: a grant's record time and end of life (lib/log.lua).
  int64_t period = 0, q_ns = 0;
  if (band != nullptr) {
    period = Micros(band->period);
    const int64_t max_entries =
        band->max_log_entries == 0 ? 256 : band->max_log_entries;
    if (band->log_granularity == absl::ZeroDuration() &&
        band->limit > max_entries) {
      q_ns = CeilDiv(i128{period} * 1000, max_entries);
    }
  }
  auto record_time = [&](int64_t score) {
    return q_ns > 0 ? CeilDiv(i128{score} * q_ns, 1000) : score;
  };
  const int64_t at = std::max(latest.value_or(now_us), now_us);
  std::optional<int64_t> kmax;  // entries at or below are expired
  if (band != nullptr && at - period >= 0) {
    kmax = q_ns > 0 ? FloorDiv(i128{at - period} * 1000, q_ns) : at - period;
  }
  int64_t live_total = 0;
  std::optional<Entry> oldest_live, newest_live;
  for (const Entry& e : entries) {
    if (kmax && e.score <= *kmax) {
      ++d.log_expired;
      continue;
    }
    ++d.log_entries;
    live_total += e.tokens;
    if (!oldest_live) oldest_live = e;
    newest_live = e;
  }
  // The entries, oldest first (the first and last few of a long log).
  d.lines.push_back(absl::StrCat(
      "entries: ", entries.size(),
      q_ns > 0 ? absl::StrCat(" (scored by quantum of ", q_ns, " ns)") : ""));
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i == kShownEntries && entries.size() > 2 * kShownEntries) {
      d.lines.push_back(
          absl::StrCat("  ... ", entries.size() - 2 * kShownEntries, " more"));
      i = entries.size() - kShownEntries;
    }
    const Entry& e = entries[i];
    std::string line = absl::StrCat("  +", e.tokens, " at ");
    if (band != nullptr) {
      absl::StrAppend(&line, When(record_time(e.score), now_us));
    } else if (std::abs(e.score - now_us) < kTenYearsUs) {
      // Without the spec a score is a time in µs, or a quantum index
      // (far from now: the spec says which).
      absl::StrAppend(&line, When(e.score, now_us));
    } else {
      absl::StrAppend(&line, "score ", e.score,
                      " (a quantum index? give the spec flags)");
    }
    if (band != nullptr) {
      const int64_t end = record_time(e.score) + period;
      absl::StrAppend(
          &line, kmax && e.score <= *kmax
                     ? ", expired (pruned by the next call)"
                     : absl::StrCat(", expires in ", FormatUs(end - now_us)));
    }
    d.lines.push_back(line);
  }
  if (band == nullptr) {
    d.used = meta_total.value_or(sum);
    d.lines.push_back(
        "live entries, available now: unknown without the period and limit "
        "(give the spec flags)");
    return d;
  }
  d.capacity = band->limit;
  d.used = live_total;
  d.available = std::max<int64_t>(band->limit - live_total, 0);
  d.lines.push_back(absl::StrCat("live: ", d.log_entries, " entries, ",
                                 live_total, " of ", band->limit,
                                 " tokens in the rolling window"));
  if (oldest_live && *d.available < band->limit) {
    d.next_in_us =
        std::max<int64_t>(record_time(oldest_live->score) + period - now_us, 0);
  }
  d.full_in_us = newest_live
                     ? std::max<int64_t>(
                           record_time(newest_live->score) + period - now_us, 0)
                     : 0;
  decode::AddSummaryLines(&d, "");
  return d;
}

}  // namespace tokenlease::cli
