#include "local/atomic_cell.h"

namespace tokenlease::internal {

// __builtin_cpu_init first: this initializer may run before libgcc's.
const bool kSnapshotLoads = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") != 0;
}();

}  // namespace tokenlease::internal
