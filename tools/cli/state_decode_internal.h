// The parts of state_decode.cc and state_kinds.cc (the decoders of the
// string states, one per kind) share: the scripts' integer arithmetic
// and the lines every decoder prints.
#ifndef TOKENLEASE_TOOLS_CLI_STATE_DECODE_INTERNAL_H_
#define TOKENLEASE_TOOLS_CLI_STATE_DECODE_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/state_decode.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli::decode {

using i128 = __int128;

inline constexpr int64_t k2p53 = int64_t{1} << 53;  // state numbers stay below
inline constexpr int64_t k2p51 = int64_t{1}
                                 << 51;  // a GCRA debt this far: "far"
inline constexpr int64_t k2p50 = int64_t{1} << 50;

// Floored and ceiled division (b > 0), as lib/arith.lua's dfloor and dceil.
inline int64_t FloorDiv(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return static_cast<int64_t>(q);
}
inline int64_t CeilDiv(i128 a, i128 b) { return -FloorDiv(-a, b); }
inline int64_t Mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

inline int64_t Micros(absl::Duration d) { return absl::ToInt64Microseconds(d); }

// The start of the aligned window of `len` µs holding t (lib/acquire.lua).
inline int64_t AlignedStart(int64_t t, int64_t len, int64_t off) {
  if (t >= off) return off + FloorDiv(i128{t} - off, len) * len;
  return off - len;
}

// "2026-01-01T00:00:00.000000Z (in 1.5s)" or "(... ago)".
std::string When(int64_t at_us, int64_t now_us);

// The "available now", "next token in" and "fresh again in" lines; `need`
// says what is missing when available is unknown ("" : say nothing).
void AddSummaryLines(DecodedBand* d, absl::string_view need);

// The string state `s` of each kind decoded at `now` into `d`: `band` is
// the spec's band when it applies to the state (else null: the stamp
// decides); a value out of range for the kind adds a problem (which the
// caller words as the scripts do).
void DecodeSmooth(const StringState& s, const Band* band, int64_t now,
                  DecodedBand* d);
void DecodeStepwise(const StringState& s, const Band* band, int64_t now,
                    DecodedBand* d);
void DecodeFixed(const StringState& s, const Band* band, int64_t now,
                 DecodedBand* d);
void DecodeCounter(const StringState& s, const Band* band, int64_t now,
                   DecodedBand* d);

}  // namespace tokenlease::cli::decode

#endif  // TOKENLEASE_TOOLS_CLI_STATE_DECODE_INTERNAL_H_
