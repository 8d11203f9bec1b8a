#include "local/band_eval.h"

#include <algorithm>

#include "local/band_eval_inl.h"
#include "tokenlease/decision.h"

namespace tokenlease::internal {

using namespace band;  // NOLINT: this file is band's out-of-line half

namespace {
// Long enough ago that any time opens a new window; times are clamped to
// [0, 2^62], so `now - kNoWindow` cannot overflow.
constexpr int64_t kNoWindow = -(int64_t{1} << 61);
}  // namespace

CellValue InitialCell(const CompiledBand& band, int64_t now_ns) {
  if (UsesGcraCell(band)) {
    return CellValue{0, static_cast<int64_t>(band.generation) << kGenShift};
  }
  switch (band.algorithm) {
    case Algorithm::kTokenBucket:  // stepwise
      return CellValue{band.burst, now_ns};
    case Algorithm::kFixedWindow:
    case Algorithm::kSlidingWindowCounter:
      // No window yet: the first charge opens the window containing its
      // time, exactly as for a key that was never seen (or was evicted).
      return CellValue{kNoWindow, 0};
    default:
      return CellValue{};
  }
}

BandResult EvaluateBand(const CompiledBand& band, CellValue cell,
                        const BandRequest& req) {
  if (UsesGcraCell(band)) return EvaluateGcra(band, cell, req);
  switch (band.algorithm) {
    case Algorithm::kTokenBucket:
      return EvaluateStepwise(band, cell, req);
    case Algorithm::kFixedWindow:
      return EvaluateFixedWindow(band, cell, req);
    case Algorithm::kSlidingWindowCounter:
      return EvaluateSlidingCounter(band, cell, req);
    default:
      return BandResult{};  // sliding logs are evaluated by SlidingLog
  }
}

bool CellIsIdle(const CompiledBand& band, CellValue cell, int64_t now_ns) {
  if (UsesGcraCell(band)) return cell.a < now_ns;
  switch (band.algorithm) {
    case Algorithm::kTokenBucket: {
      const BandResult r =
          EvaluateStepwise(band, cell, BandRequest{now_ns, 0, 0});
      return r.remaining >= band.burst;
    }
    case Algorithm::kFixedWindow:
      return cell.b == 0 || now_ns - cell.a >= band.period_ns;
    case Algorithm::kSlidingWindowCounter: {
      const int64_t since = now_ns - cell.a;
      const int64_t cur = cell.b & kCountMask;
      const int64_t prev = (cell.b >> 32) & kCountMask;
      return since >= 2 * band.period_ns ||
             (cur == 0 && (prev == 0 || since >= band.period_ns));
    }
    default:
      return false;
  }
}

CellValue ConvertGcraCell(const CompiledBand& from, const CompiledBand& to,
                          CellValue cell, int64_t now_ns) {
  i128 d = static_cast<i128>(cell.a - static_cast<i128>(now_ns)) *
               from.emission_den +
           (cell.b & kFracMask);
  if (d <= 0) return InitialCell(to, now_ns);
  d = std::min<i128>(d, kScaledCap);
  // Debt in tokens is d / p_from; in the new units it is that times p_to.
  i128 converted =
      (d * to.emission_num + from.emission_num - 1) / from.emission_num;
  converted = std::min<i128>(converted, kScaledCap);
  return MakeGcraCell(to, now_ns, static_cast<int64_t>(converted));
}

CellValue ConvertGcraCellOfUnknownGeneration(const CompiledBand& to,
                                             CellValue cell, int64_t now_ns) {
  // The fraction is in units of the old band's 1/l ns, which is unknown,
  // but it is below one ns whatever l was.
  const int64_t frac = cell.b & kFracMask;
  if (cell.a < now_ns || (cell.a == now_ns && frac == 0)) {
    return InitialCell(to, now_ns);  // no debt under any spec
  }
  // A fraction means l >= 2, so cell.a <= 2^62 + 2^62 / 2 (times and
  // scaled debts are clamped to 2^62): + 1 cannot overflow.
  return CellValue{cell.a + (frac != 0 ? 1 : 0),
                   static_cast<int64_t>(to.generation) << kGenShift};
}

}  // namespace tokenlease::internal
