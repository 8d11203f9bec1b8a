#include "local/compiled_band.h"

#include <algorithm>
#include <numeric>

#include "local/spec_facts.h"

namespace tokenlease::internal {
namespace {

int64_t PositiveMod(int64_t x, int64_t m) {
  const int64_t r = x % m;
  return r < 0 ? r + m : r;
}

}  // namespace

CompiledBand CompileBand(const Band& band, absl::Duration max_borrow,
                         uint32_t generation) {
  CompiledBand c;
  c.algorithm = band.algorithm;
  switch (band.algorithm) {
    case Algorithm::kTokenBucket:
    case Algorithm::kGcra:
      c.cell_kind =
          IsSmoothBucket(band) ? CellKind::kGcra : CellKind::kStepwise;
      break;
    case Algorithm::kFixedWindow:
      c.cell_kind = CellKind::kFixedWindow;
      break;
    case Algorithm::kSlidingWindowCounter:
      c.cell_kind = CellKind::kSlidingCounter;
      break;
    case Algorithm::kSlidingWindowLog:
      c.cell_kind = CellKind::kSlidingLog;
      break;
  }
  c.refill = band.refill;
  c.anchor = band.anchor;
  c.generation = generation;
  c.limit = band.limit;
  c.period_ns = absl::ToInt64Nanoseconds(band.period);
  c.period_div = FastDivisor(c.period_ns);
  c.limit_div = FastDivisor(c.limit);
  c.burst = EffectiveBurst(band);

  const int64_t g = std::gcd(c.period_ns, c.limit);
  c.emission_num = c.period_ns / g;
  c.emission_den = c.limit / g;
  c.emission_num_div = FastDivisor(c.emission_num);
  c.emission_den_div = FastDivisor(c.emission_den);
  c.tolerance = c.burst * c.emission_num;  // ValidateSpec keeps it < 2^62
  c.max_borrow_ns = absl::ToInt64Nanoseconds(max_borrow);
  // Saturates: evaluation caps total debt at 2^62 units anyway.
  c.max_borrow_scaled = static_cast<int64_t>(std::min<__int128>(
      static_cast<__int128>(c.max_borrow_ns) * c.emission_den,
      int64_t{1} << 62));

  c.window_offset_ns =
      PositiveMod(absl::ToInt64Nanoseconds(band.window_offset), c.period_ns);
  c.granule_ns = absl::ToInt64Nanoseconds(band.log_granularity);
  if (c.granule_ns > 0) {
    c.granule_div = FastDivisor(c.granule_ns);
    c.granule_offset_ns =
        PositiveMod(absl::ToInt64Nanoseconds(band.window_offset), c.granule_ns);
  }
  c.max_log_entries = band.max_log_entries > 0 ? band.max_log_entries : 256;
  if (c.granule_ns == 0 && c.limit > c.max_log_entries) {
    c.log_quantum_ns =
        (c.period_ns + c.max_log_entries - 1) / c.max_log_entries;
    c.log_quantum_div = FastDivisor(c.log_quantum_ns);
  }
  return c;
}

int64_t AlignedStart(int64_t now, int64_t len, int64_t off,
                     const FastDivisor& div) {
  if (now >= off) return off + div.Div(now - off) * len;
  // Before the first aligned window (only with clocks near 1970).
  return off - len;
}

}  // namespace tokenlease::internal
