#include "shared/local_share.h"

#include <algorithm>

namespace tokenlease::internal {

LimitSpec ShareOfLimit(const LimitSpec& spec, int32_t instances) {
  LimitSpec share = spec;
  const int64_t n = std::max<int32_t>(1, instances);
  for (Band& b : share.bands) {
    b.limit = std::max<int64_t>(1, b.limit / n);
    if (b.burst > 0) b.burst = std::max<int64_t>(1, b.burst / n);
  }
  return share;
}

}  // namespace tokenlease::internal
