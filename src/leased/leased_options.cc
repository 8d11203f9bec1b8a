// Validation of LeaseOptions and LeasedLimiterOptions.
#include "core/options_checks.h"
#include "shared/shared_checks.h"
#include "tokenlease/leased.h"

namespace tokenlease {

absl::Status LeaseOptions::Validate() const {
  using internal::CheckDuration;
  using internal::CheckFraction;
  using internal::CheckInteger;
  return internal::FirstError({
      CheckDuration("LeaseOptions.lease_ttl", lease_ttl, absl::Milliseconds(1),
                    absl::Hours(1)),
      CheckFraction("LeaseOptions.max_lease_fraction", max_lease_fraction, 0, 1,
                    /*open_low=*/true),
      CheckFraction("LeaseOptions.remaining_share", remaining_share, 0, 1,
                    /*open_low=*/true),
      CheckDuration("LeaseOptions.min_batch", min_batch, absl::ZeroDuration(),
                    lease_ttl),
      CheckFraction("LeaseOptions.low_water", low_water, 0, 0.999,
                    /*open_low=*/true),
      CheckFraction("LeaseOptions.cluster_low_water", cluster_low_water, 0,
                    0.999, /*open_low=*/true),
      CheckDuration("LeaseOptions.cold_wait", cold_wait, absl::ZeroDuration(),
                    absl::Seconds(1)),
      CheckFraction("LeaseOptions.local_share", local_share, 0, 1,
                    /*open_low=*/true),
      CheckDuration("LeaseOptions.tick", tick, absl::Microseconds(100),
                    absl::Seconds(1)),
      CheckDuration("LeaseOptions.batch_window", batch_window,
                    absl::ZeroDuration(), absl::Seconds(1)),
      CheckDuration("LeaseOptions.charge_delay", charge_delay,
                    absl::ZeroDuration(), lease_ttl),
      CheckInteger("LeaseOptions.spare_entries", spare_entries, 0, 65536),
      CheckDuration("LeaseOptions.idle_evict", idle_evict, 2 * lease_ttl,
                    absl::Hours(24 * 365)),
      CheckDuration("LeaseOptions.release_deadline", release_deadline,
                    absl::ZeroDuration(), absl::Minutes(1)),
      CheckInteger("LeaseOptions.slice_threshold", slice_threshold, 0,
                   int64_t{1} << 40),
      CheckInteger("LeaseOptions.slices_per_key", slices_per_key, 0, 1024),
      CheckDuration("LeaseOptions.slice_idle", slice_idle, absl::ZeroDuration(),
                    absl::Minutes(1)),
  });
}

absl::Status LeasedLimiterOptions::Validate() const {
  return internal::FirstError({
      internal::ValidateSharedOptions(*this, "LeasedLimiterOptions"),
      internal::CheckFraction("LeasedLimiterOptions.near_limit_fraction",
                              near_limit_fraction, 0, 1, /*open_low=*/true),
      lease.Validate(),
  });
}

}  // namespace tokenlease
