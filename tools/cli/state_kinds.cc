// The decoders of the string states, one per kind (state_decode.h): the
// scripts' arithmetic (lua/lib/acquire.lua's load and eval, lua/lib/
// state.lua's restamp and step), so that what is shown is what the next
// call would see.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/common.h"
#include "cli/state_decode.h"
#include "cli/state_decode_internal.h"
#include "local/spec_facts.h"

namespace tokenlease::cli::decode {
namespace {

// "3 of 10", or "3" when the capacity is unknown.
std::string OfCapacity(const DecodedBand& d, int64_t n) {
  return d.capacity ? absl::StrCat(n, " of ", *d.capacity) : absl::StrCat(n);
}

}  // namespace

std::string When(int64_t at_us, int64_t now_us) {
  const int64_t d = at_us - now_us;
  return absl::StrCat(FormatTimeUs(at_us), " (",
                      d >= 0 ? absl::StrCat("in ", FormatUs(d))
                             : absl::StrCat(FormatUs(-d), " ago"),
                      ")");
}

void AddSummaryLines(DecodedBand* d, absl::string_view need) {
  if (d->available) {
    d->lines.push_back(
        absl::StrCat("available now: ", *d->available, " of ", *d->capacity));
  } else if (!need.empty()) {
    d->lines.push_back(absl::StrCat("available now: unknown without ", need));
  }
  if (d->next_in_us) {
    d->lines.push_back(
        absl::StrCat("next token in: ", FormatUs(*d->next_in_us)));
  }
  if (d->full_in_us) {
    d->lines.push_back(absl::StrCat(
        "fresh again in: ", FormatUs(*d->full_in_us),
        *d->full_in_us > 0 ? "" : " (the next call deletes the key)"));
  }
}

// --- smooth token bucket / GCRA: "<t> <f> [<l>] g<p>/<l>" ---------------

void DecodeSmooth(const StringState& s, const Band* band, int64_t now,
                  DecodedBand* d) {
  // The state's own unit: a token costs p0/l0 µs.
  int64_t p0, l0;
  if (s.stamp) {
    p0 = s.stamp->p;
    l0 = s.stamp->l;
  } else {
    const int64_t period = Micros(band->period);
    const int64_t g = std::gcd(period, band->limit);
    p0 = period / g;
    l0 = band->limit / g;
  }
  int64_t t = s.numbers[0], f = s.numbers[1];
  const int64_t lz = s.numbers.size() == 3 ? s.numbers[2] : l0;
  if (f < 0 || (s.numbers.size() == 3 && (lz < 1 || f >= lz))) {
    d->problems.push_back("the fraction is out of range");
    return;
  }
  if (lz != l0) {  // f in units of 1/lz µs: re-expressed in 1/l0, up
    f = CeilDiv(i128{f} * l0, lz);
    if (f >= l0) {
      t += 1;
      f = 0;
    }
  }
  d->tat_us = t;
  d->lines.push_back(
      absl::StrCat("TAT (theoretical arrival time): ", When(t, now),
                   f > 0 ? absl::StrCat(" + ", f, "/", l0, " us") : ""));
  d->lines.push_back(absl::StrFormat("a token costs: %s (%d/%d us)",
                                     FormatUs(CeilDiv(p0, l0)), p0, l0));
  // The debt TAT - now in units of 1/l0 µs; past the exact range it
  // denies everything until the clock reaches the TAT (lib/acquire.lua).
  i128 debt = 0;
  bool far = false;
  if (t >= now) {
    const i128 tn = i128{t} - now;
    far = tn * l0 >= k2p51;
    debt = tn * l0 + f;
  }
  if (far) {
    d->lines.push_back(
        "the TAT is far ahead (a clock stepped back?): every request is "
        "denied until then");
  }
  d->lines.push_back(absl::StrFormat("debt: %.3f tokens (TAT - now)",
                                     static_cast<double>(debt) / p0));
  int64_t p = p0, l = l0;
  if (band != nullptr) {
    // The call's spec: its own unit, the debt converted rounded up (tokens
    // consumed stay consumed, lib/state.lua restamp).
    const int64_t period = Micros(band->period);
    const int64_t g = std::gcd(period, band->limit);
    p = period / g;
    l = band->limit / g;
    if (p != p0 || l != l0) {
      debt = far ? i128{k2p51} : (debt * p + p0 - 1) / p0;
      d->lines.push_back(absl::StrFormat(
          "in the spec's unit (a token costs %d/%d us): %.3f tokens", p, l,
          static_cast<double>(debt) / p));
    }
    const int64_t burst = internal::EffectiveBurst(*band);
    const i128 tol = i128{burst} * p;
    d->capacity = burst;
    d->available =
        far || debt > tol ? 0 : static_cast<int64_t>((tol - debt) / p);
    if (*d->available < burst && !far) {
      const i128 target = tol - i128{*d->available + 1} * p;
      d->next_in_us = CeilDiv(debt - target, l);
    }
  }
  d->used = CeilDiv(debt, p);
  d->full_in_us = far ? t - now + (f > 0 ? 1 : 0) : CeilDiv(debt, l);
  AddSummaryLines(d, band == nullptr ? "the burst (give the spec flags)" : "");
}

// --- stepwise token bucket: "<tokens> <anchor_us> s<limit>/<period>/<burst>"

void DecodeStepwise(const StringState& s, const Band* band, int64_t now,
                    DecodedBand* d) {
  if (s.numbers.size() != 2) {
    d->problems.push_back("a stepwise bucket's state has 2 numbers");
    return;
  }
  int64_t tokens = s.numbers[0], anchor = s.numbers[1];
  int64_t limit, period, burst;
  if (band != nullptr) {
    limit = band->limit;
    period = Micros(band->period);
    burst = internal::EffectiveBurst(*band);
    if (s.stamp && s.stamp->text != StampOf(*band)) {
      // Another stepwise spec: its consumed burst0 - tokens stay consumed,
      // no lower than a debt that refills within 2^50 µs.
      tokens = tokens + burst - s.stamp->burst;
      const int64_t floor = burst - (k2p50 / period) * limit;
      tokens = std::max(tokens, floor);
      d->lines.push_back(
          absl::StrCat("taken over by the spec: ", tokens, " tokens (consumed ",
                       s.stamp->burst - s.numbers[0], " stay consumed)"));
    }
  } else {
    limit = s.stamp->limit;
    period = s.stamp->period_us;
    burst = s.stamp->burst;
  }
  if (limit < 1 || period < 1) {
    d->problems.push_back("the stamp's limit and period must be positive");
    return;
  }
  d->lines.push_back(absl::StrCat("stored: ", s.numbers[0],
                                  " tokens, steps from ",
                                  FormatTimeUs(s.numbers[1])));
  // Refill by whole steps to now (lib/state.lua step); a clock that
  // stepped back refills nothing.
  const int64_t elapsed = now - anchor;
  if (elapsed >= period) {
    const int64_t steps = elapsed / period;
    anchor += steps * period;
    if (tokens >= burst || steps >= CeilDiv(i128{burst} - tokens, limit)) {
      tokens = burst;
    } else {
      tokens += steps * limit;
    }
  }
  d->tokens = tokens;
  d->anchor_us = anchor;
  d->capacity = burst;
  d->available = std::max<int64_t>(tokens, 0);
  d->used = burst - tokens;
  d->lines.push_back(
      absl::StrCat("tokens now: ", tokens, tokens < 0 ? " (borrowed)" : "",
                   " of ", burst, "; current step began ", When(anchor, now)));
  // The time until the balance reaches `target` (lib/acquire.lua
  // step_wait).
  auto wait = [&](int64_t target) -> int64_t {
    if (tokens >= target) return 0;
    const i128 w = i128{anchor} +
                   i128{CeilDiv(i128{target} - tokens, limit)} * period - now;
    return w > 0 ? static_cast<int64_t>(w) : 0;
  };
  if (tokens < burst) d->next_in_us = wait(std::max<int64_t>(tokens, 0) + 1);
  d->full_in_us = wait(burst);
  AddSummaryLines(d, "");
}

// --- fixed window: "<start_us> <count> f<period>/<a|r><offset>" ---------

void DecodeFixed(const StringState& s, const Band* band, int64_t now,
                 DecodedBand* d) {
  if (s.numbers.size() != 2 || s.numbers[1] < 0) {
    d->problems.push_back("a fixed window's state is a start and a count >= 0");
    return;
  }
  int64_t period, offset;
  bool aligned;
  if (band != nullptr) {
    period = Micros(band->period);
    offset = Mod(Micros(band->window_offset), period);
    aligned = band->anchor == WindowAnchor::kAligned;
  } else {
    period = s.stamp->period_us;
    offset = s.stamp->offset_us;
    aligned = s.stamp->aligned;
  }
  int64_t start = s.numbers[0], count = s.numbers[1];
  d->lines.push_back(absl::StrCat("stored window: from ", FormatTimeUs(start),
                                  ", count ", count));
  bool open = true;
  if (now - start >= period) {  // before start: the same window
    count = 0;
    if (aligned) {
      start = AlignedStart(now, period, offset);
    } else {
      open = false;
    }
  }
  d->count = count;
  d->window_start_us = start;
  d->window_end_us = start + period;
  d->used = count;
  if (band != nullptr) {
    d->capacity = band->limit;
    d->available = std::max<int64_t>(band->limit - count, 0);
    if (count >= band->limit && open) d->next_in_us = start + period - now;
  }
  if (open) {
    d->lines.push_back(absl::StrCat("current window: ", FormatTimeUs(start),
                                    " to ", When(start + period, now), ", ",
                                    OfCapacity(*d, count), " used"));
  } else {
    d->lines.push_back(
        "the stored window is over: the next request opens a new one");
  }
  d->full_in_us = count > 0 ? start + period - now : 0;
  AddSummaryLines(d, band == nullptr ? "the limit (give the spec flags)" : "");
}

// --- sliding counter: "<start_us> <prev> <cur> c<period>/a<offset>" -----

void DecodeCounter(const StringState& s, const Band* band, int64_t now,
                   DecodedBand* d) {
  if (s.numbers.size() != 3 || s.numbers[1] < 0 || s.numbers[2] < 0) {
    d->problems.push_back(
        "a sliding counter's state is a start and two counts >= 0");
    return;
  }
  int64_t period, offset;
  if (band != nullptr) {
    period = Micros(band->period);
    offset = Mod(Micros(band->window_offset), period);
  } else {
    period = s.stamp->period_us;
    offset = s.stamp->offset_us;
  }
  int64_t start = s.numbers[0], prev = s.numbers[1], cur = s.numbers[2];
  d->lines.push_back(absl::StrCat("stored: window from ", FormatTimeUs(start),
                                  ", previous ", prev, ", current ", cur));
  // Rolled forward to now as lib/acquire.lua does.
  const int64_t since = now - start;
  if (since >= period) {
    if (since < 2 * period) {
      prev = cur;
      start += period;
    } else {
      prev = 0;
      start = AlignedStart(now, period, offset);
    }
    cur = 0;
  }
  const int64_t elapsed = std::max<int64_t>(now - start, 0);
  const int64_t weight =
      prev > 0 ? CeilDiv(i128{prev} * (period - elapsed), period) : 0;
  d->window_start_us = start;
  d->window_end_us = start + period;
  d->count = cur;
  d->previous = prev;
  d->estimate = static_cast<double>(prev) *
                    static_cast<double>(period - elapsed) / period +
                static_cast<double>(cur);
  d->used = cur + weight;
  if (band != nullptr) {
    d->capacity = band->limit;
    d->available = std::max<int64_t>(band->limit - cur - weight, 0);
  }
  d->lines.push_back(absl::StrCat("current window: ", FormatTimeUs(start),
                                  " to ", When(start + period, now),
                                  "; previous window ", prev, ", this window ",
                                  cur));
  d->lines.push_back(absl::StrFormat(
      "estimate: %.3f = %d x %.3f (the previous window's part still in the "
      "rolling window) + %d; counted as %d",
      d->estimate, prev,
      static_cast<double>(period - elapsed) / static_cast<double>(period), cur,
      *d->used));
  d->full_in_us = cur > 0    ? start + 2 * period - now
                  : prev > 0 ? std::max<int64_t>(start + period - now, 0)
                             : 0;
  AddSummaryLines(d, band == nullptr ? "the limit (give the spec flags)" : "");
}

}  // namespace tokenlease::cli::decode
