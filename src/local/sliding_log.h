// The sliding-window log of one key's band: exact over any window, with
// memory bounded by max_log_entries. Not thread-safe: the owning key's lock
// guards it.
#ifndef TOKENLEASE_SRC_LOCAL_SLIDING_LOG_H_
#define TOKENLEASE_SRC_LOCAL_SLIDING_LOG_H_

#include <cstdint>
#include <vector>

#include "local/band_eval.h"
#include "local/compiled_band.h"

namespace tokenlease::internal {

class SlidingLog {
 public:
  // Drops entries older than the window and says whether `req` fits. Does
  // not record it (Record does), so several bands can be checked first.
  BandResult Evaluate(const CompiledBand& band, const BandRequest& req);
  // Records an admitted request (call right after Evaluate admitted it).
  void Record(const CompiledBand& band, int64_t now_ns, int64_t cost);
  // True if no entry is inside the window ending at `now_ns`.
  bool IsIdle(const CompiledBand& band, int64_t now_ns) const;
  // Live entries (for tests and the memory bound).
  int64_t entry_count() const {
    return static_cast<int64_t>(entries_.size()) - head_;
  }
  // Tokens counted in the window as of the last Evaluate.
  int64_t total() const { return total_; }

 private:
  struct Entry {
    int64_t time_ns;  // start of the granule (or exact time) of the grant
    int64_t tokens;
  };
  void Expire(const CompiledBand& band, int64_t now_ns);
  // Where a grant evaluated at `now` is recorded.
  int64_t RecordTime(const CompiledBand& band, int64_t now) const;

  // entries_[head_..] are live, oldest first, times non-decreasing. The
  // prefix before head_ is dead and compacted away once it is half the
  // vector, so steady state does no allocation.
  std::vector<Entry> entries_;
  int64_t head_ = 0;
  int64_t total_ = 0;
  // Latest time evaluated. Expiry is irreversible, so an evaluation with an
  // older time (a caller preempted after reading its clock, or a clock step
  // back) runs at this time instead: it must not see room that only exists
  // because later calls expired entries.
  int64_t latest_ns_ = INT64_MIN;
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_LOCAL_SLIDING_LOG_H_
