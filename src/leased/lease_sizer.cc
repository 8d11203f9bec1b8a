#include "leased/lease_sizer.h"

#include <algorithm>
#include <cmath>

#include "local/spec_facts.h"

namespace tokenlease::internal {

LeaseSizing ComputeSizing(const LimitSpec& spec, const LeaseOptions& options) {
  LeaseSizing s;
  const Band& b = spec.bands.front();
  const int64_t burst = EffectiveBurst(b);
  s.rate_per_ns = static_cast<double>(b.limit) /
                  static_cast<double>(absl::ToInt64Nanoseconds(b.period));
  s.max_lease = std::max<int64_t>(
      1, static_cast<int64_t>(options.max_lease_fraction * burst));
  const double batch =
      s.rate_per_ns * absl::ToDoubleNanoseconds(options.min_batch);
  s.min_batch =
      std::clamp<int64_t>(static_cast<int64_t>(batch), 1, s.max_lease);
  // Start at one token: most keys of a large key space are visited rarely,
  // and a token they do not use is a token stranded for lease_ttl. A hot
  // key doubles its target each time it runs dry (max_lease after about
  // log2(max_lease) refills).
  s.initial_size = 1;
  return s;
}

LeaseAsk ComputeAsk(const LeaseSizing& sizing, const LeaseOptions& options,
                    int64_t target, int64_t last_remaining, int64_t cost_hint) {
  LeaseAsk ask;
  int64_t wanted = std::clamp<int64_t>(target, 1, sizing.max_lease);
  const int64_t minimum = std::min(wanted, sizing.min_batch);
  if (last_remaining >= 0) {
    const int64_t share = static_cast<int64_t>(
        options.remaining_share * static_cast<double>(last_remaining));
    wanted = std::min(wanted, std::max(minimum, share));
  }
  ask.wanted = std::max(wanted, cost_hint);
  ask.minimum = std::max(std::min(minimum, ask.wanted), cost_hint);
  return ask;
}

int64_t AdaptTarget(const LeaseSizing& sizing, int64_t target, bool ran_dry,
                    double unused_fraction) {
  if (ran_dry)
    return std::min(sizing.max_lease, std::max<int64_t>(1, target * 2));
  if (unused_fraction > 0.5) return std::max<int64_t>(1, target / 2);
  return target;
}

bool RenewalCannotWait(const LeaseSizing& sizing, double low_water,
                       int64_t held_at_landing, int64_t landed_ns, int64_t held,
                       int64_t now_ns, int64_t horizon_ns) {
  const int64_t spent = held_at_landing - held;
  const int64_t elapsed = now_ns - landed_ns;
  if (held_at_landing <= 0 || spent <= 0 || elapsed <= 0) return false;
  // Doubles: a hint, and products of tokens and nanoseconds may not fit 64
  // bits.
  const double pace = static_cast<double>(spent) / static_cast<double>(elapsed);
  const double horizon = static_cast<double>(horizon_ns);
  const bool runs_out = static_cast<double>(held) < pace * horizon;
  const bool window_caps = std::min(pace, sizing.rate_per_ns) * horizon >=
                           low_water * static_cast<double>(sizing.max_lease);
  return runs_out && window_caps;
}

int64_t TimeToMinimum(const LeaseSizing& sizing, int64_t minimum,
                      int64_t last_remaining, int64_t since_ns) {
  const int64_t missing = minimum - last_remaining;
  if (missing <= 0 || !(sizing.rate_per_ns > 0)) return 0;
  // Doubles: a hint; the quotient is capped before it converts back.
  const double wait = static_cast<double>(missing) / sizing.rate_per_ns -
                      static_cast<double>(since_ns);
  if (!(wait > 0)) return 0;
  return wait >= 9e18 ? INT64_MAX : static_cast<int64_t>(std::ceil(wait));
}

}  // namespace tokenlease::internal
