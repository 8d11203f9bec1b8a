// The per-algorithm evaluation functions, inline so that the lock-free CAS
// loop (core/limiter_core.cc) compiles each into one tight loop with the
// result kept in registers. Pure functions: see band_eval.h.
#ifndef TOKENLEASE_SRC_LOCAL_BAND_EVAL_INL_H_
#define TOKENLEASE_SRC_LOCAL_BAND_EVAL_INL_H_

#include <algorithm>
#include <cstdint>

#include "local/band_eval.h"
#include "tokenlease/decision.h"

namespace tokenlease::internal::band {

using i128 = __int128;

inline constexpr int kGenShift = 40;
inline constexpr int64_t kFracMask = (int64_t{1} << kGenShift) - 1;
// Scaled offsets are clamped below this so that FastDivisor (n < 2^63) and
// DivCeil (n + d - 1 < 2^63) always apply.
inline constexpr int64_t kScaledCap = int64_t{1} << 62;

inline bool UsesGcraCell(const CompiledBand& b) {
  return b.cell_kind == CellKind::kGcra;
}

inline int64_t Cap(i128 x) {
  return ClampNonNegative(std::min<i128>(x, kScaledCap));
}

// ---------------------------------------------------------------------------
// GCRA / smooth token bucket.
// Cell: a = theoretical arrival time (TAT) in whole ns; b = generation (24
// bits) << 40 | fraction of a ns in units of 1/l (l = emission_den <= 2^40).
// d = TAT - now in units of 1/l ns is the bucket's debt; a token costs
// p = emission_num units; the bucket holds `burst` tokens when d <= 0 and
// admits while d + cost*p <= burst*p (= tolerance).

inline CellValue MakeGcraCell(const CompiledBand& b, int64_t now, int64_t d) {
  if (b.emission_den == 1) {
    return CellValue{now + d, static_cast<int64_t>(b.generation) << kGenShift};
  }
  const int64_t whole = b.emission_den_div.Div(d);
  const int64_t frac = b.emission_den_div.Rem(d, whole);
  return CellValue{now + whole,
                   (static_cast<int64_t>(b.generation) << kGenShift) | frac};
}

// Debt the band accepts beyond its tolerance for a borrowing request.
inline int64_t BorrowAllowance(const CompiledBand& b, const BandRequest& req) {
  const i128 wait_scaled = static_cast<i128>(req.max_wait_ns) * b.emission_den;
  const i128 cap = req.ignore_borrow_cap
                       ? wait_scaled
                       : std::min<i128>(wait_scaled, b.max_borrow_scaled);
  return static_cast<int64_t>(std::min<i128>(cap, kScaledCap - b.tolerance));
}

// A debt beyond 2^62 units (1/l ns) exceeds every tolerance: deny, with
// the waits computed in 128 bits and hardware division.
inline BandResult GcraDenyFar(const CompiledBand& b, i128 d,
                              const BandRequest& req) {
  BandResult r;
  r.outcome = BandOutcome::kDeny;
  const i128 l = b.emission_den;
  const i128 need = static_cast<i128>(req.cost) * b.emission_num;
  r.wait_ns = need > b.tolerance
                  ? kNever
                  : ClampNonNegative((d + need - b.tolerance + l - 1) / l);
  r.reset_after_ns = ClampNonNegative((d + l - 1) / l);
  return r;
}

// GCRA is evaluated in two steps so that the lock-free loop carries only
// what its compare-and-swap needs: ChargeGcra decides and builds the new
// cell; FinishGcra derives the caller's numbers (remaining, wait, reset)
// from the debt once the cell is committed. Measured on a decision by
// handle: with the numbers computed before the CAS, the loop spilled its
// result to the stack and reloaded it around the locked instruction.
struct GcraCharge {
  BandOutcome outcome = BandOutcome::kDeny;
  bool write = false;  // `next` must be stored (an admission with cost > 0)
  bool far = false;    // kDeny with a debt beyond 2^62 units (FinishGcra
                       // recomputes it in 128 bits)
  CellValue next;
  int64_t debt = 0;  // kAdmit: the debt after the charge; kDeny: before it
  int64_t need = 0;  // cost * p, or INT64_MAX if that overflows
};

[[gnu::always_inline]] inline GcraCharge ChargeGcra(const CompiledBand& b,
                                                    CellValue cell,
                                                    const BandRequest& req) {
  GcraCharge c;
  const int64_t now = req.now_ns;
  const uint32_t gen = GcraCellGeneration(cell);
  // d = max(TAT - now, 0) in units of 1/l ns, capped at 2^62 (a debt that
  // large denies everything anyway). A TAT in the past is a full bucket
  // under any spec (frac < l keeps (TAT - now) * l + frac negative).
  int64_t d = 0;
  if (cell.a >= now) {
    if (gen != b.generation) [[unlikely]] {
      c.outcome = gen > b.generation ? BandOutcome::kSpecOlderThanCell
                                     : BandOutcome::kCellOlderThanSpec;
      return c;
    }
    // cell.a - now cannot overflow: both are in [0, 2^63). Beyond 2^62
    // units only after a long clock step back: exact but slow.
    const int64_t ahead = cell.a - now;
    if (b.emission_den == 1) {  // whole-ns emission interval: no scaling
      d = ahead;
      if (d > kScaledCap) [[unlikely]] {
        c.far = true;
        return c;
      }
    } else {
      // 64-bit multiply with an overflow check rather than a 128-bit one,
      // which the compiler spills to the stack (frac < l <= 2^40, so the
      // sum cannot overflow once the product is at most 2^62).
      const int64_t frac = cell.b & kFracMask;
      if (__builtin_mul_overflow(ahead, b.emission_den, &d) ||
          d > kScaledCap - frac) [[unlikely]] {
        c.far = true;
        return c;
      }
      d += frac;
    }
  } else if (gen > b.generation) [[unlikely]] {
    c.outcome = BandOutcome::kSpecOlderThanCell;
    return c;
  }
  if (__builtin_mul_overflow(req.cost, b.emission_num, &c.need))
    c.need = INT64_MAX;  // a cost so large it overflows can never fit
  int64_t allowed = b.tolerance;
  if (req.max_wait_ns > 0) [[unlikely]]
    allowed += BorrowAllowance(b, req);
  if (c.need <= allowed - d) {
    c.outcome = BandOutcome::kAdmit;
    c.debt = d + c.need;  // <= 2^62
    if (req.cost > 0) {
      c.write = true;
      c.next = MakeGcraCell(b, now, c.debt);
    }
    return c;
  }
  c.outcome = BandOutcome::kDeny;
  c.debt = d;
  return c;
}

[[gnu::always_inline]] inline BandResult FinishGcra(const CompiledBand& b,
                                                    CellValue cell,
                                                    const BandRequest& req,
                                                    const GcraCharge& c) {
  BandResult r;  // write and next are the charge's (EvaluateGcra)
  r.outcome = c.outcome;
  if (c.far) [[unlikely]] {
    const i128 full = static_cast<i128>(cell.a - req.now_ns) * b.emission_den +
                      (b.emission_den == 1 ? 0 : (cell.b & kFracMask));
    return GcraDenyFar(b, full, req);
  }
  if (c.outcome == BandOutcome::kAdmit) {
    const int64_t nd = c.debt;
    if (nd <= b.tolerance) [[likely]] {
      r.remaining = b.emission_num_div.Div(b.tolerance - nd);
    } else {
      r.wait_ns = b.emission_den_div.DivCeil(nd - b.tolerance);
    }
    r.reset_after_ns = b.emission_den_div.DivCeil(nd);
  } else if (c.outcome == BandOutcome::kDeny) {
    const int64_t d = c.debt;
    r.remaining =
        d <= b.tolerance ? b.emission_num_div.Div(b.tolerance - d) : 0;
    r.wait_ns = c.need > b.tolerance
                    ? kNever
                    : b.emission_den_div.DivCeil(d + c.need - b.tolerance);
    r.reset_after_ns = b.emission_den_div.DivCeil(d);
  }
  return r;
}

[[gnu::always_inline]] inline BandResult EvaluateGcra(const CompiledBand& b,
                                                      CellValue cell,
                                                      const BandRequest& req) {
  const GcraCharge c = ChargeGcra(b, cell, req);
  BandResult r = FinishGcra(b, cell, req, c);
  r.write = c.write;
  r.next = c.next;
  return r;
}

// ---------------------------------------------------------------------------
// Stepwise token bucket.
// Cell: a = tokens (negative while borrowed); b = start of the current step
// (`limit` tokens arrive at b + period, b + 2*period, ...).

// Time from `now` until `tokens` (which may be negative) reaches `target`.
inline int64_t StepWait(const CompiledBand& b, int64_t tokens, int64_t anchor,
                        int64_t target, int64_t now) {
  if (tokens >= target) return 0;
  const int64_t steps =
      b.limit_div.DivCeil(Cap(static_cast<i128>(target) - tokens));
  return Cap(static_cast<i128>(anchor) +
             static_cast<i128>(steps) * b.period_ns - now);
}

[[gnu::always_inline]] inline BandResult EvaluateStepwise(
    const CompiledBand& b, CellValue cell, const BandRequest& req) {
  BandResult r;
  const int64_t now = req.now_ns;
  int64_t tokens = cell.a;
  int64_t anchor = cell.b;
  const int64_t elapsed = now - anchor;
  if (elapsed >= b.period_ns) {  // a clock step back refills nothing
    const int64_t steps =
        elapsed < 2 * b.period_ns ? 1 : b.period_div.Div(elapsed);
    anchor += steps * b.period_ns;
    tokens = static_cast<int64_t>(std::min<i128>(
        b.burst,
        static_cast<i128>(tokens) + static_cast<i128>(steps) * b.limit));
  }
  int64_t after;
  if (__builtin_sub_overflow(tokens, req.cost, &after)) [[unlikely]] {
    // A cost beyond 2^63 tokens from the balance: it can never fit.
    r.outcome = BandOutcome::kDeny;
    r.remaining = std::max<int64_t>(tokens, 0);
    r.wait_ns = kNever;
    r.reset_after_ns = StepWait(b, tokens, anchor, b.burst, now);
    return r;
  }
  int64_t wait = 0;
  bool admit = after >= 0;
  if (!admit && req.max_wait_ns > 0) {
    wait = StepWait(b, after, anchor, 0, now);
    admit = wait <= (req.ignore_borrow_cap
                         ? req.max_wait_ns
                         : std::min(req.max_wait_ns, b.max_borrow_ns));
  }
  if (admit) {
    r.outcome = BandOutcome::kAdmit;
    r.write = req.cost > 0;
    r.next = CellValue{after, anchor};
    r.remaining = std::max<int64_t>(after, 0);
    r.wait_ns = wait;
    r.reset_after_ns = StepWait(b, after, anchor, b.burst, now);
    return r;
  }
  r.outcome = BandOutcome::kDeny;
  r.remaining = std::max<int64_t>(tokens, 0);
  r.wait_ns =
      req.cost > b.burst ? kNever : StepWait(b, tokens, anchor, req.cost, now);
  r.reset_after_ns = StepWait(b, tokens, anchor, b.burst, now);
  return r;
}

// ---------------------------------------------------------------------------
// Fixed window. Cell: a = window start; b = tokens counted in it.

[[gnu::always_inline]] inline BandResult EvaluateFixedWindow(
    const CompiledBand& b, CellValue cell, const BandRequest& req) {
  BandResult r;
  const int64_t now = req.now_ns;
  int64_t start = cell.a;
  int64_t count = cell.b;
  if (now - start >= b.period_ns) {  // before `start`: same window
    start =
        b.anchor == WindowAnchor::kAligned
            ? AlignedStart(now, b.period_ns, b.window_offset_ns, b.period_div)
            : now;
    count = 0;
  }
  const int64_t window_left = start + b.period_ns - now;
  // Not count + cost <= limit: a cost near 2^63 would overflow it.
  if (req.cost <= b.limit - count) {
    r.outcome = BandOutcome::kAdmit;
    r.write = req.cost > 0;
    r.next = CellValue{start, count + req.cost};
    r.remaining = b.limit - count - req.cost;
    r.reset_after_ns = count + req.cost > 0 ? window_left : 0;
    return r;
  }
  r.outcome = BandOutcome::kDeny;
  r.remaining = b.limit - count;
  r.wait_ns = req.cost > b.limit ? kNever : window_left;
  r.reset_after_ns = count > 0 ? window_left : 0;
  return r;
}

// ---------------------------------------------------------------------------
// Sliding-window counter. Cell: a = current window start (aligned);
// b = previous count << 32 | current count. The estimate over the rolling
// period ending now is prev * (P - e) / P + cur, e = now - start; a request
// fits if prev * (P - e) + (cur + cost) * P <= limit * P (exact integers).

inline constexpr int64_t kCountMask = 0xffffffff;

// floor(x / d) for 128-bit x >= 0 (FastDivisor when it fits).
inline int64_t DivPeriod(const CompiledBand& b, i128 x) {
  if (x < kScaledCap) return b.period_div.Div(static_cast<int64_t>(x));
  return ClampNonNegative(x / b.period_ns);
}

// Smallest e in [0, P] with weight * (P - e) <= room * P, for weight > 0 and
// room >= 0: e = P - floor(room * P / weight).
inline int64_t FirstFit(const CompiledBand& b, int64_t weight, int64_t room) {
  const i128 span = static_cast<i128>(room) * b.period_ns / weight;
  return span >= b.period_ns ? 0 : b.period_ns - static_cast<int64_t>(span);
}

[[gnu::always_inline]] inline BandResult EvaluateSlidingCounter(
    const CompiledBand& b, CellValue cell, const BandRequest& req) {
  BandResult r;
  const int64_t now = req.now_ns;
  const int64_t P = b.period_ns;
  int64_t start = cell.a;
  int64_t cur = cell.b & kCountMask;
  int64_t prev = (cell.b >> 32) & kCountMask;
  const int64_t since = now - start;
  if (since >= P) {
    if (since < 2 * P) {
      prev = cur;
      start += P;
    } else {
      prev = 0;
      start = AlignedStart(now, P, b.window_offset_ns, b.period_div);
    }
    cur = 0;
  }
  const int64_t e = std::max<int64_t>(now - start, 0);  // clock step back
  const i128 weighted = static_cast<i128>(prev) * (P - e);
  const i128 budget = static_cast<i128>(b.limit) * P;
  // A cost above the limit never fits; capped so that cur + cost cannot
  // overflow (cur and the limit are below 2^32).
  const int64_t after = cur + std::min(req.cost, b.limit + 1);
  const auto remaining_for = [&](int64_t used) {
    const i128 room = budget - weighted - static_cast<i128>(used) * P;
    return room <= 0 ? int64_t{0} : DivPeriod(b, room);
  };
  // Time until both windows' weights are zero, given the final count.
  const auto reset_for = [&](int64_t final_cur) -> int64_t {
    if (final_cur > 0) return start + 2 * P - now;
    return prev > 0 ? std::max<int64_t>(start + P - now, 0) : 0;
  };
  if (weighted + static_cast<i128>(after) * P <= budget) {
    r.outcome = BandOutcome::kAdmit;
    r.write = req.cost > 0;
    r.next = CellValue{start, (prev << 32) | after};
    r.remaining = remaining_for(after);
    r.reset_after_ns = reset_for(after);
    return r;
  }
  r.outcome = BandOutcome::kDeny;
  r.remaining = remaining_for(cur);
  r.reset_after_ns = reset_for(cur);
  if (req.cost > b.limit) {
    r.wait_ns = kNever;
  } else if (after <= b.limit) {
    // Fits in this window once prev's weight has decayed enough (prev > 0,
    // or the request would have fitted).
    r.wait_ns = start + FirstFit(b, prev, b.limit - after) - now;
  } else {
    // Only in the next window, once `cur` (then previous) decays enough;
    // cur > 0 here because cost <= limit < cur + cost.
    r.wait_ns = start + P + FirstFit(b, cur, b.limit - req.cost) - now;
  }
  if (r.wait_ns != kNever) r.wait_ns = std::max<int64_t>(r.wait_ns, 0);
  return r;
}

}  // namespace tokenlease::internal::band

#endif  // TOKENLEASE_SRC_LOCAL_BAND_EVAL_INL_H_
