// Decoding a band's state as the Lua scripts keep it in Redis
// (docs/lua-protocol.md, "State per algorithm" and "The stamp"), at a given
// server time, for `tokenlease inspect`. Pure: no I/O; the arithmetic is
// the scripts' (lua/lib/acquire.lua, lua/lib/state.lua), so that what is
// printed is what the next call would see.
#ifndef TOKENLEASE_TOOLS_CLI_STATE_DECODE_H_
#define TOKENLEASE_TOOLS_CLI_STATE_DECODE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {

// What a state's numbers mean, from the stamp after them.
struct Stamp {
  // 'g': smooth token bucket or GCRA, a token costs p/l µs; 's': stepwise
  // token bucket; 'f': fixed window; 'c': sliding counter.
  char kind = 0;
  int64_t p = 0, l = 0;                         // 'g'
  int64_t limit = 0, period_us = 0, burst = 0;  // 's' (period_us: f, c too)
  bool aligned = true;                          // 'f', 'c'
  int64_t offset_us = 0;                        // 'f', 'c'
  std::string text;
};

// The stamp `text` ("g100000/1"), or nullopt if it is not of a stamp's form.
std::optional<Stamp> ParseStamp(absl::string_view text);

// The stamp a call with `band` writes (lua/lib/band.lua); "" for a sliding
// log, whose state has none.
std::string StampOf(const Band& band);

// What a call with a band makes of a state with another stamp
// (docs/lua-protocol.md, "The stamp"): reads it as it is (same stamp),
// takes it over with the tokens consumed kept (a smooth bucket of another
// rate, a stepwise bucket of another limit, period or burst), or refuses
// it (another kind, a window of another length or alignment).
enum class StampVerdict { kSame, kTakesOver, kRefuses };
StampVerdict CompareStamp(const Stamp& stored, const Band& band);

// The kinds of band state.
enum class BandKind {
  kSmooth,     // token bucket with smooth refill, or GCRA: one TAT
  kStepwise,   // token bucket with stepwise refill
  kFixed,      // fixed window
  kCounter,    // sliding window counter
  kLog,        // sliding window log (a ZSET and a meta key)
  kUndecided,  // no stamp and no spec: the numbers cannot be read
};
const char* BandKindName(BandKind k);

// A band's state, decoded at the server's time. The optional numbers are
// empty when they need the spec (a state's stamp says how tokens are
// counted, not the limit or the burst) and none was given, or when the
// state could not be read (see problems).
struct DecodedBand {
  BandKind kind = BandKind::kUndecided;
  std::optional<int64_t> capacity;    // burst, or a window's limit
  std::optional<int64_t> used;        // tokens counted now (rounded up)
  std::optional<int64_t> available;   // what a request could take now
  std::optional<int64_t> full_in_us;  // until the band is fresh again
  std::optional<int64_t> next_in_us;  // until one more token is available
  // Kind-specific numbers, for tests and the lines below.
  int64_t tat_us = 0;           // smooth: the TAT's whole µs
  int64_t tokens = 0;           // stepwise: the balance now
  int64_t anchor_us = 0;        // stepwise: the current step's start
  int64_t window_start_us = 0;  // fixed, counter: the current window
  int64_t window_end_us = 0;
  int64_t count = 0;        // fixed, counter: tokens in the window
  int64_t previous = 0;     // counter: the previous window's count
  double estimate = 0;      // counter: prev x (P - elapsed) / P + cur
  int64_t log_entries = 0;  // log: live entries
  int64_t log_expired = 0;  // log: entries expired, not yet pruned
  // For people: "label: value" lines, in order.
  std::vector<std::string> lines;
  // What a call of the limit would refuse (corrupt value, another spec),
  // as the scripts' errors say it.
  std::vector<std::string> problems;
};

// The string value of a band key: 2 or 3 integers, then optionally the
// stamp.
struct StringState {
  std::vector<int64_t> numbers;
  std::optional<Stamp> stamp;
};
// InvalidArgument if `value` is not of that form (integers below 2^53 in
// magnitude, one space apart; a stamp of its form).
absl::StatusOr<StringState> ParseStringState(absl::string_view value);

// Decodes the string `value` of band key `key` at `now_us`. `band` is the
// spec's band (nullptr: none given; the stamp decides).
DecodedBand DecodeStringBand(absl::string_view key, absl::string_view value,
                             const Band* band, int64_t now_us);

// One ZSET member of a sliding log and its score, as ZRANGE WITHSCORES
// returns them.
struct LogMember {
  std::string member;  // "<score>:<tokens>"
  std::string score;
};

// Decodes a sliding log: its members (oldest first) and its meta key's
// value (nullopt if the meta key does not exist). `band`: as above (a log
// has no stamp, so without the spec only the raw entries are shown).
DecodedBand DecodeLogBand(absl::string_view key,
                          const std::vector<LogMember>& members,
                          absl::string_view meta_key,
                          const std::optional<std::string>& meta_value,
                          const Band* band, int64_t now_us);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_STATE_DECODE_H_
