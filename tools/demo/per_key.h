// Per-key figures of a run over many keys (--keys=zipf): each load thread
// counts what it offered and admitted per key (KeyCounter); the instance
// merges its threads' counts and sends the keys offered anything ("K" lines,
// protocol.h); the parent sums them over the instances (SumByRank) and the
// summary compares each key with what it could have admitted and with its
// bound (SummarisePerKey). Pure, but for the counting itself (unit-tested).
//
// Per key k (token bucket, limit L per second, burst B = L, run of D s):
//   ideal_k = min(offered_k, B + L x D)       what a perfect limiter admits
//   bound   = B + L x D + N x (A + M)         what the library may admit
// N instances; M = 2 x max_lease - 1, what one instance may hold in leases
// (report.h); A = max(1, floor(local_share x B)), what one instance may
// admit for a key without a lease with --cold_key_policy=local_share. Both
// are 0 in local and direct mode (and A for the other cold-key policies).
#ifndef TOKENLEASE_TOOLS_DEMO_PER_KEY_H_
#define TOKENLEASE_TOOLS_DEMO_PER_KEY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "demo/flags.h"
#include "demo/protocol.h"

namespace tokenlease::tools {

// One load thread's per-key counts: an array for the first kDenseKeys
// ranks (no hashing on the load thread), a hash map beyond them (so that
// --zipf_keys=1e8 does not cost 16 bytes per key and thread).
class KeyCounter {
 public:
  static constexpr int64_t kDenseKeys = int64_t{1} << 20;

  // For ranks 0 .. keys - 1.
  explicit KeyCounter(int64_t keys);

  void Count(size_t rank, bool admitted) {
    Pair& p = rank < dense_.size() ? dense_[rank] : sparse_[rank];
    ++p.offered;
    p.admitted += admitted ? 1 : 0;
  }

  // Appends the keys offered anything, in no particular order.
  void AppendTo(std::vector<KeyCount>& out) const;

 private:
  struct Pair {
    int64_t offered = 0, admitted = 0;
  };
  std::vector<Pair> dense_;
  absl::flat_hash_map<size_t, Pair> sparse_;
};

// `counts` sorted by rank, the counts of equal ranks summed (over threads,
// or over instances).
std::vector<KeyCount> SumByRank(std::vector<KeyCount> counts);

// The terms of the per-key bound (see above) for a run of `duration_s`.
struct PerKeyBound {
  int64_t burst = 0, limit = 0, instances = 0;
  int64_t local_allowance = 0;  // A
  int64_t held = 0;             // M, per instance
  double duration_s = 0;

  // B + L x D: the most a perfect limiter admits on one key.
  double Ideal() const;
  // B + L x D + N x (A + M).
  double Value() const;
  // "burst + limit x duration + instances x (A + M) = 100 + 100 x 10.000 +
  // 2 x (1 + 19) = 1140".
  std::string Formula() const;
};
PerKeyBound ComputePerKeyBound(const DemoOptions& o, double duration_s);

// The keys of Zipf ranks [first, end) (end -1: no end).
struct RankGroup {
  int64_t first = 0, end = -1;
  int64_t keys = 0;  // offered anything
  int64_t offered = 0, admitted = 0;
  double ideal = 0;

  std::string Label() const;  // "0-99", "10000+"
};

struct PerKeySummary {
  PerKeyBound bound;
  int64_t keys = 0;  // offered anything
  int64_t offered = 0, admitted = 0;
  double ideal = 0;  // sum of min(offered_k, B + L x D)
  // Ranks 0-99, 100-999, 1000-9999, 10000+ (those the key set reaches).
  std::vector<RankGroup> groups;
  int64_t over = 0;             // keys whose admitted exceeds the bound
  std::vector<KeyCount> worst;  // the keys over it, most admitted first
  KeyCount max_key;             // the largest admitted / bound
  double max_ratio = 0;
};

// The per-key figures of `counts` (sorted by rank, as SumByRank leaves
// them) for a run of `duration_s`; at most `worst` keys over the bound are
// kept.
PerKeySummary SummarisePerKey(const DemoOptions& o,
                              const std::vector<KeyCount>& counts,
                              double duration_s, size_t worst = 5);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_PER_KEY_H_
