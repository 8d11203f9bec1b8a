// One key of a Limiter: its band cells, a tiny lock for multi-band and log
// limits, its pin count, and its name, in one heap block.
#ifndef TOKENLEASE_SRC_CORE_KEY_ENTRY_H_
#define TOKENLEASE_SRC_CORE_KEY_ENTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/spin_lock.h"
#include "local/atomic_cell.h"
#include "local/compiled_band.h"
#include "local/sliding_log.h"

namespace tokenlease::internal {

// The cell of a retired single-band key: both halves INT64_MIN. A live cell
// is told from it by the half its algorithm never sets to INT64_MIN
// (IsDeadCell): the low half (a GCRA cell's TAT, >= 0; a window's start,
// >= -2^61) except for a stepwise bucket, whose low half counts tokens and
// whose high half is a time >= 0. The high half alone, as before, was not
// enough: a GCRA cell of generation 2^23 with no fraction holds INT64_MIN
// there, and was taken for retired (its decisions then looked the key up
// again forever).
inline constexpr CellValue kDeadCell{INT64_MIN, INT64_MIN};

// True if `v`, a cell of a band of `kind`, is kDeadCell.
inline bool IsDeadCell(CellKind kind, CellValue v) {
  return kind == CellKind::kStepwise ? v.b == kDeadCell.b : v.a == kDeadCell.a;
}

// Allocated by LimiterCore (the registry's owner); never moves while
// registered.
// One heap block per key. Entries are at least 80 bytes, so the cells of two
// keys are always at least 64 bytes apart and never share a cache line;
// over-aligned allocation would double the memory per key (measured: 176
// instead of 96 bytes per block with glibc).
struct KeyEntry {
  // Creates an entry with `band_count` cells and `log_count` sliding logs.
  static KeyEntry* Create(std::string_view name, int band_count, int log_count);
  static void Destroy(KeyEntry* e);

  AtomicCell& cell(int i) { return cells()[i]; }
  SlidingLog& log(int i) { return logs[i]; }
  std::string_view name() const { return {name_data(), name_size}; }

  // Handles holding this key (ShardedRegistry explains the orders).
  std::atomic<uint32_t> pins{0};
  SpinLock lock;
  // Multi-band and sliding-log keys: retired from the registry (set under
  // `lock`, seq_cst: see ShardedRegistry); decisions then look the key up
  // again. Single-band keys mark their cell instead (kDeadCell).
  std::atomic<bool> dead{false};
  uint16_t band_count = 0;
  uint32_t name_size = 0;
  std::unique_ptr<SlidingLog[]> logs;  // one per sliding-log band, or null

 private:
  KeyEntry() = default;
  ~KeyEntry() = default;
  static constexpr size_t CellsOffset() {
    return (sizeof(KeyEntry) + alignof(AtomicCell) - 1) &
           ~(alignof(AtomicCell) - 1);
  }
  AtomicCell* cells() {
    return reinterpret_cast<AtomicCell*>(reinterpret_cast<char*>(this) +
                                         CellsOffset());
  }
  const char* name_data() const {
    return reinterpret_cast<const char*>(this) + CellsOffset() +
           band_count * sizeof(AtomicCell);
  }
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_CORE_KEY_ENTRY_H_
