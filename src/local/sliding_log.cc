#include "local/sliding_log.h"

#include <algorithm>

#include "tokenlease/decision.h"

namespace tokenlease::internal {

void SlidingLog::Expire(const CompiledBand& band, int64_t now_ns) {
  const int64_t n = static_cast<int64_t>(entries_.size());
  while (head_ < n && entries_[head_].time_ns + band.period_ns <= now_ns) {
    total_ -= entries_[head_].tokens;
    ++head_;
  }
  if (head_ == n) {
    entries_.clear();
    head_ = 0;
  } else if (head_ >= 16 && head_ * 2 >= n) {
    entries_.erase(entries_.begin(), entries_.begin() + head_);
    head_ = 0;
  }
}

BandResult SlidingLog::Evaluate(const CompiledBand& band,
                                const BandRequest& req) {
  latest_ns_ = std::max(latest_ns_, req.now_ns);
  const int64_t now = latest_ns_;
  Expire(band, now);
  BandResult r;
  // Durations are reported from the caller's own time.
  const int64_t newest =
      entry_count() > 0 ? entries_.back().time_ns + band.period_ns - req.now_ns
                        : 0;
  // Not total_ + cost <= limit: a cost near 2^63 would overflow it.
  if (req.cost <= band.limit - total_) {
    r.outcome = BandOutcome::kAdmit;
    r.remaining = band.limit - total_ - req.cost;
    r.reset_after_ns = req.cost > 0
                           ? RecordTime(band, now) + band.period_ns - req.now_ns
                           : newest;
    return r;
  }
  r.outcome = BandOutcome::kDeny;
  r.remaining = band.limit - total_;
  r.reset_after_ns = newest;
  if (req.cost > band.limit) {
    r.wait_ns = kNever;
    return r;
  }
  // The request fits once enough of the oldest entries have expired.
  const int64_t must_expire = total_ + req.cost - band.limit;
  int64_t expired = 0;
  for (size_t i = static_cast<size_t>(head_); i < entries_.size(); ++i) {
    expired += entries_[i].tokens;
    if (expired >= must_expire) {
      r.wait_ns = std::max<int64_t>(
          entries_[i].time_ns + band.period_ns - req.now_ns, 0);
      break;
    }
  }
  return r;
}

int64_t SlidingLog::RecordTime(const CompiledBand& band, int64_t now) const {
  int64_t t = now;
  if (band.granule_ns > 0) {
    // The user's calendar-like granule: recorded at its start.
    t = AlignedStart(now, band.granule_ns, band.granule_offset_ns,
                     band.granule_div);
  } else if (band.log_quantum_ns > 0 && now > 0) {
    // Memory bound: recorded at the end of its quantum, so a token counts
    // at most one quantum longer than exact (stricter, never looser).
    const int64_t q = band.log_quantum_ns;
    const int64_t start = band.log_quantum_div.Div(now) * q;
    t = start == now ? now : start + q;
  }
  // Never before the newest entry (same granule, or a clock step back):
  // counting with it expires no earlier.
  return entry_count() > 0 ? std::max(t, entries_.back().time_ns) : t;
}

void SlidingLog::Record(const CompiledBand& band, int64_t now_ns,
                        int64_t cost) {
  if (cost <= 0) return;
  // At the time Evaluate used.
  const int64_t t = RecordTime(band, std::max(now_ns, latest_ns_));
  total_ += cost;
  if (entry_count() > 0 && t == entries_.back().time_ns) {
    entries_.back().tokens += cost;
    return;
  }
  // Up to max_log_entries + 1 quantum ends fit in (now - period, now +
  // quantum], so that many are kept before merging.
  if (entry_count() > band.max_log_entries) {
    // Bound reached: fold the oldest entry into the next one. Its tokens now
    // expire later than they would have, which can only deny more.
    entries_[head_ + 1].tokens += entries_[head_].tokens;
    ++head_;
  }
  entries_.push_back(Entry{t, cost});
}

bool SlidingLog::IsIdle(const CompiledBand& band, int64_t now_ns) const {
  return entry_count() == 0 ||
         entries_.back().time_ns + band.period_ns <= now_ns;
}

}  // namespace tokenlease::internal
