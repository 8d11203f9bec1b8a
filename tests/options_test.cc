// Every field with a range (enums, flags and pointers have none) in every
// options struct, at and beyond the edges of its documented range:
// Validate() accepts the edges and names the field (and the value) beyond
// them. One table, one row per case.
#include <cmath>
#include <functional>
#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tokenlease/tokenlease.h"

namespace tokenlease {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct OptionCase {
  const char* name;                        // the test's name
  std::function<absl::Status()> validate;  // Validate() of the changed struct
  const char* error;                       // expected message start; "" = valid
};

// gtest prints a failing case by its name.
void PrintTo(const OptionCase& c, std::ostream* os) { *os << c.name; }

// Validate() of a default T changed by `change`.
template <typename T>
std::function<absl::Status()> With(std::function<void(T&)> change) {
  return [change] {
    T o;
    change(o);
    return o.Validate();
  };
}

using L = LimiterOptions;
using LO = LeaseOptions;
using LL = LeasedLimiterOptions;
using D = DirectLimiterOptions;
using S = SharedLimitOptions;
using R = RedisOptions;
const absl::Duration kMs = absl::Milliseconds(1);
const absl::Duration kNs = absl::Nanoseconds(1);

const OptionCase kCases[] = {
    // LimiterOptions
    {"LimiterMaxKeysZero", With<L>([](L& o) { o.max_keys = 0; }),
     "LimiterOptions.max_keys is 0"},
    {"LimiterMaxKeysTop", With<L>([](L& o) { o.max_keys = 1 << 30; }), ""},
    {"LimiterMaxKeysAbove",
     With<L>([](L& o) { o.max_keys = (int64_t{1} << 30) + 1; }),
     "LimiterOptions.max_keys is 1073741825"},
    {"LimiterShardsOne", With<L>([](L& o) { o.shards = 1; }), ""},
    {"LimiterShardsTop", With<L>([](L& o) { o.shards = 4096; }), ""},
    {"LimiterShardsNotPowerOfTwo", With<L>([](L& o) { o.shards = 3; }),
     "LimiterOptions.shards is 3"},
    {"LimiterShardsAbove", With<L>([](L& o) { o.shards = 8192; }),
     "LimiterOptions.shards is 8192"},
    {"LimiterMaxKeyBytesOne", With<L>([](L& o) { o.max_key_bytes = 1; }), ""},
    {"LimiterMaxKeyBytesTop", With<L>([](L& o) { o.max_key_bytes = 65536; }),
     ""},
    {"LimiterMaxKeyBytesZero", With<L>([](L& o) { o.max_key_bytes = 0; }),
     "LimiterOptions.max_key_bytes is 0"},
    {"LimiterMaxKeyBytesAbove", With<L>([](L& o) { o.max_key_bytes = 65537; }),
     "LimiterOptions.max_key_bytes is 65537"},

    // LeaseOptions
    {"LeaseTtlZero",
     With<LO>([](LO& o) { o.lease_ttl = absl::ZeroDuration(); }),
     "LeaseOptions.lease_ttl is 0"},
    {"LeaseTtlOneMs", With<LO>([](LO& o) {
       o.lease_ttl = kMs;
       o.min_batch = absl::ZeroDuration();
       o.charge_delay = absl::ZeroDuration();
     }),
     ""},
    {"LeaseTtlAbove",
     With<LO>([](LO& o) { o.lease_ttl = absl::Hours(1) + kNs; }),
     "LeaseOptions.lease_ttl is 1h0.000000001s"},
    {"MaxLeaseFractionZero", With<LO>([](LO& o) { o.max_lease_fraction = 0; }),
     "LeaseOptions.max_lease_fraction is 0"},
    {"MaxLeaseFractionOne", With<LO>([](LO& o) { o.max_lease_fraction = 1; }),
     ""},
    {"MaxLeaseFractionNaN",
     With<LO>([](LO& o) { o.max_lease_fraction = std::nan(""); }),
     "LeaseOptions.max_lease_fraction is nan"},
    {"RemainingShareAbove", With<LO>([](LO& o) { o.remaining_share = 1.5; }),
     "LeaseOptions.remaining_share is 1.5"},
    {"MinBatchNegative", With<LO>([](LO& o) { o.min_batch = -kNs; }),
     "LeaseOptions.min_batch is -1ns"},
    {"MinBatchLeaseTtl", With<LO>([](LO& o) { o.min_batch = o.lease_ttl; }),
     ""},
    {"MinBatchAboveLeaseTtl",
     With<LO>([](LO& o) { o.min_batch = o.lease_ttl + kNs; }),
     "LeaseOptions.min_batch is 1.000000001s"},
    {"LowWaterZero", With<LO>([](LO& o) { o.low_water = 0; }),
     "LeaseOptions.low_water is 0"},
    {"LowWaterTop", With<LO>([](LO& o) { o.low_water = 0.999; }), ""},
    {"LowWaterOne", With<LO>([](LO& o) { o.low_water = 1; }),
     "LeaseOptions.low_water is 1"},
    {"ClusterLowWaterZero", With<LO>([](LO& o) { o.cluster_low_water = 0; }),
     "LeaseOptions.cluster_low_water is 0"},
    {"ClusterLowWaterTop", With<LO>([](LO& o) { o.cluster_low_water = 0.999; }),
     ""},
    {"ClusterLowWaterOne", With<LO>([](LO& o) { o.cluster_low_water = 1; }),
     "LeaseOptions.cluster_low_water is 1"},
    {"ColdWaitOneSecond",
     With<LO>([](LO& o) { o.cold_wait = absl::Seconds(1); }), ""},
    {"ColdWaitAbove",
     With<LO>([](LO& o) { o.cold_wait = absl::Seconds(1) + kNs; }),
     "LeaseOptions.cold_wait is"},
    {"LocalShareZero", With<LO>([](LO& o) { o.local_share = 0; }),
     "LeaseOptions.local_share is 0"},
    {"LocalShareOne", With<LO>([](LO& o) { o.local_share = 1; }), ""},
    {"TickBelow",
     With<LO>([](LO& o) { o.tick = absl::Microseconds(100) - kNs; }),
     "LeaseOptions.tick is"},
    {"TickBottom", With<LO>([](LO& o) { o.tick = absl::Microseconds(100); }),
     ""},
    {"TickAbove", With<LO>([](LO& o) { o.tick = absl::Seconds(1) + kNs; }),
     "LeaseOptions.tick is"},
    {"BatchWindowZero",
     With<LO>([](LO& o) { o.batch_window = absl::ZeroDuration(); }), ""},
    {"BatchWindowAbove",
     With<LO>([](LO& o) { o.batch_window = absl::Seconds(1) + kNs; }),
     "LeaseOptions.batch_window is"},
    {"ChargeDelayLeaseTtl",
     With<LO>([](LO& o) { o.charge_delay = o.lease_ttl; }), ""},
    {"ChargeDelayAboveLeaseTtl",
     With<LO>([](LO& o) { o.charge_delay = o.lease_ttl + kNs; }),
     "LeaseOptions.charge_delay is"},
    {"SpareEntriesNegative", With<LO>([](LO& o) { o.spare_entries = -1; }),
     "LeaseOptions.spare_entries is -1"},
    {"SpareEntriesTop", With<LO>([](LO& o) { o.spare_entries = 65536; }), ""},
    {"IdleEvictTwiceLeaseTtl",
     With<LO>([](LO& o) { o.idle_evict = 2 * o.lease_ttl; }), ""},
    {"IdleEvictBelowTwiceLeaseTtl",
     With<LO>([](LO& o) { o.idle_evict = 2 * o.lease_ttl - kNs; }),
     "LeaseOptions.idle_evict is"},
    {"ReleaseDeadlineAbove",
     With<LO>([](LO& o) { o.release_deadline = absl::Minutes(1) + kNs; }),
     "LeaseOptions.release_deadline is"},
    {"SliceThresholdZero", With<LO>([](LO& o) { o.slice_threshold = 0; }), ""},
    {"SliceThresholdNegative", With<LO>([](LO& o) { o.slice_threshold = -1; }),
     "LeaseOptions.slice_threshold is -1"},
    {"SlicesPerKeyTop", With<LO>([](LO& o) { o.slices_per_key = 1024; }), ""},
    {"SlicesPerKeyAbove", With<LO>([](LO& o) { o.slices_per_key = 1025; }),
     "LeaseOptions.slices_per_key is 1025"},
    {"SliceIdleZero",
     With<LO>([](LO& o) { o.slice_idle = absl::ZeroDuration(); }), ""},
    {"SliceIdleAbove",
     With<LO>([](LO& o) { o.slice_idle = absl::Minutes(1) + kNs; }),
     "LeaseOptions.slice_idle is"},

    // LeasedLimiterOptions (no connection: `redis` is validated too)
    {"LeasedKeyPrefixEmpty", With<LL>([](LL& o) { o.key_prefix = ""; }),
     "LeasedLimiterOptions.key_prefix \"\" must be 1 to 256 bytes"},
    {"LeasedKeyPrefixBrace", With<LL>([](LL& o) { o.key_prefix = "a{"; }),
     "LeasedLimiterOptions.key_prefix \"a{\""},
    {"LeasedKeyPrefixTop",
     With<LL>([](LL& o) { o.key_prefix = std::string(256, 'p'); }), ""},
    {"LeasedMaxKeysZero", With<LL>([](LL& o) { o.max_keys = 0; }),
     "LeasedLimiterOptions.max_keys is 0"},
    {"LeasedShardsZero", With<LL>([](LL& o) { o.shards = 0; }),
     "LeasedLimiterOptions.shards is 0"},
    {"LeasedMaxKeyBytesAbove", With<LL>([](LL& o) { o.max_key_bytes = 65537; }),
     "LeasedLimiterOptions.max_key_bytes is 65537"},
    {"LeasedFallbackInstancesZero",
     With<LL>([](LL& o) { o.fallback_instances = 0; }),
     "LeasedLimiterOptions.fallback_instances is 0"},
    {"LeasedFallbackInstancesTop",
     With<LL>([](LL& o) { o.fallback_instances = 65536; }), ""},
    {"LeasedInstanceGroupTop",
     With<LL>([](LL& o) { o.instance_group = std::string(256, 'g'); }), ""},
    {"LeasedInstanceGroupLong",
     With<LL>([](LL& o) { o.instance_group = std::string(257, 'g'); }),
     "LeasedLimiterOptions.instance_group"},
    {"LeasedInstanceGroupBrace",
     With<LL>([](LL& o) { o.instance_group = "g}"; }),
     "LeasedLimiterOptions.instance_group \"g}\""},
    {"LeasedAnnounceTtlBottom",
     With<LL>([](LL& o) { o.announce_ttl = absl::Milliseconds(100); }), ""},
    {"LeasedAnnounceTtlBelow",
     With<LL>([](LL& o) { o.announce_ttl = absl::Milliseconds(100) - kNs; }),
     "LeasedLimiterOptions.announce_ttl is"},
    {"LeasedAnnounceTtlTop",
     With<LL>([](LL& o) { o.announce_ttl = absl::Minutes(10); }), ""},
    {"LeasedAnnounceTtlAbove",
     With<LL>([](LL& o) { o.announce_ttl = absl::Minutes(10) + kNs; }),
     "LeasedLimiterOptions.announce_ttl is"},
    {"LeasedLeaseChecked", With<LL>([](LL& o) { o.lease.low_water = 2; }),
     "LeaseOptions.low_water is 2"},
    {"LeasedRedisChecked", With<LL>([](LL& o) { o.redis.url = "http://x"; }),
     "RedisOptions.url: redis URL \"http://x\""},

    // DirectLimiterOptions
    {"DirectInstanceGroupBrace", With<D>([](D& o) { o.instance_group = "{g"; }),
     "DirectLimiterOptions.instance_group \"{g\""},
    {"DirectInstanceGroupTop",
     With<D>([](D& o) { o.instance_group = std::string(256, 'g'); }), ""},
    {"DirectAnnounceTtlBelow",
     With<D>([](D& o) { o.announce_ttl = absl::Milliseconds(100) - kNs; }),
     "DirectLimiterOptions.announce_ttl is"},
    {"DirectAnnounceTtlAbove",
     With<D>([](D& o) { o.announce_ttl = absl::Minutes(10) + kNs; }),
     "DirectLimiterOptions.announce_ttl is"},
    {"DirectKeyPrefixLong",
     With<D>([](D& o) { o.key_prefix = std::string(257, 'p'); }),
     "DirectLimiterOptions.key_prefix"},
    {"DirectTimeoutNegative", With<D>([](D& o) { o.timeout = -kNs; }),
     "DirectLimiterOptions.timeout is -1ns"},
    {"DirectTimeoutTop", With<D>([](D& o) { o.timeout = absl::Minutes(1); }),
     ""},
    {"DirectTimeoutAbove",
     With<D>([](D& o) { o.timeout = absl::Minutes(1) + kNs; }),
     "DirectLimiterOptions.timeout is"},
    {"DirectMaxKeyBytesZero", With<D>([](D& o) { o.max_key_bytes = 0; }),
     "DirectLimiterOptions.max_key_bytes is 0"},
    {"DirectRedisChecked",
     With<D>([](D& o) { o.redis.command_timeout = absl::ZeroDuration(); }),
     "RedisOptions.command_timeout is 0"},
    {"DirectFailureModeLocal",
     With<D>([](D& o) { o.failure_mode = FailureMode::kFailLocal; }), ""},
    {"DirectFailureModeUnknown",
     With<D>([](D& o) { o.failure_mode = static_cast<FailureMode>(3); }),
     "DirectLimiterOptions.failure_mode is 3"},
    {"DirectFallbackInstancesZero",
     With<D>([](D& o) { o.fallback_instances = 0; }),
     "DirectLimiterOptions.fallback_instances is 0"},
    {"DirectFallbackInstancesTop",
     With<D>([](D& o) { o.fallback_instances = 65536; }), ""},
    {"DirectFallbackInstancesAbove",
     With<D>([](D& o) { o.fallback_instances = 65537; }),
     "DirectLimiterOptions.fallback_instances is 65537"},
    // LimiterOptions' fields, named as the struct the user filled.
    {"DirectMaxKeysZero", With<D>([](D& o) { o.max_keys = 0; }),
     "DirectLimiterOptions.max_keys is 0"},
    {"DirectShardsThree", With<D>([](D& o) { o.shards = 3; }),
     "DirectLimiterOptions.shards is 3"},
    {"DirectStatsIntervalZero",
     With<D>([](D& o) { o.stats_interval = absl::ZeroDuration(); }),
     "DirectLimiterOptions.stats_interval is"},
    {"DirectShadow", With<D>([](D& o) { o.shadow = true; }), ""},

    // SharedLimitOptions on its own
    {"SharedKeyPrefixBrace", With<S>([](S& o) { o.key_prefix = "}"; }),
     "SharedLimitOptions.key_prefix"},
    {"SharedMaxKeyBytesZero", With<S>([](S& o) { o.max_key_bytes = 0; }),
     "SharedLimitOptions.max_key_bytes is 0"},

    // RedisOptions
    {"RedisUrlUnix", With<R>([](R& o) { o.url = "unix:///tmp/r.sock"; }), ""},
    {"RedisUrlBad", With<R>([](R& o) { o.url = "redis://h:0"; }),
     "RedisOptions.url: redis URL \"redis://h:0\""},
    {"RedisConnectTimeoutBelow",
     With<R>([](R& o) { o.connect_timeout = kMs - kNs; }),
     "RedisOptions.connect_timeout is"},
    {"RedisConnectTimeoutTop",
     With<R>([](R& o) { o.connect_timeout = absl::Minutes(1); }), ""},
    {"RedisCommandTimeoutAbove",
     With<R>([](R& o) { o.command_timeout = absl::Minutes(1) + kNs; }),
     "RedisOptions.command_timeout is"},
    {"RedisMinBackoffZero",
     With<R>([](R& o) { o.reconnect_min_backoff = absl::ZeroDuration(); }),
     "RedisOptions.reconnect_min_backoff is 0"},
    {"RedisMaxBackoffBelowMin", With<R>([](R& o) {
       o.reconnect_min_backoff = absl::Seconds(2);
       o.reconnect_max_backoff = absl::Seconds(1);
     }),
     "RedisOptions.reconnect_max_backoff is 1s"},
    {"RedisSlowReplyBelow", With<R>([](R& o) { o.slow_reply = kMs - kNs; }),
     "RedisOptions.slow_reply is"},
    {"RedisSlowReplyTop",
     With<R>([](R& o) { o.slow_reply = absl::Minutes(1); }), ""},
    {"RedisDegradedHoldZero",
     With<R>([](R& o) { o.degraded_hold = absl::ZeroDuration(); }), ""},
    {"RedisDegradedHoldAbove",
     With<R>([](R& o) { o.degraded_hold = absl::Minutes(1) + kNs; }),
     "RedisOptions.degraded_hold is"},
    {"RedisDownAfterBottom", With<R>([](R& o) { o.down_after = kMs; }), ""},
    {"RedisDownAfterBelow", With<R>([](R& o) { o.down_after = kMs - kNs; }),
     "RedisOptions.down_after is"},
    {"RedisDeadAfterBelowDownAfter", With<R>([](R& o) {
       o.down_after = absl::Seconds(2);
       o.dead_after = absl::Seconds(1);
     }),
     "RedisOptions.dead_after is 1s"},
    {"RedisDeadAfterTop",
     With<R>([](R& o) { o.dead_after = absl::Minutes(10); }), ""},
    {"RedisDeadAfterAbove",
     With<R>([](R& o) { o.dead_after = absl::Minutes(10) + kNs; }),
     "RedisOptions.dead_after is"},
    {"RedisShutdownGraceNegative",
     With<R>([](R& o) { o.shutdown_grace = -kNs; }),
     "RedisOptions.shutdown_grace is -1ns"},
    {"RedisMaxPendingOne", With<R>([](R& o) { o.max_pending = 1; }),
     "RedisOptions.max_pending is 1"},
    {"RedisMaxPendingBottom", With<R>([](R& o) { o.max_pending = 2; }), ""},
    {"RedisMaxPendingTop", With<R>([](R& o) { o.max_pending = 1 << 24; }), ""},
    {"RedisMaxPendingAbove",
     With<R>([](R& o) { o.max_pending = (size_t{1} << 24) + 1; }),
     "RedisOptions.max_pending is 16777217"},
    {"RedisTlsUrl", With<R>([](R& o) { o.url = "rediss://h:6380"; }), ""},
    {"RedisTlsOptionsWithAPlainUrl",
     With<R>([](R& o) { o.tls.ca_file = "/ca.pem"; }),
     "RedisOptions.tls is set but RedisOptions.url is not a TLS URL"},
    {"RedisTlsVerifyOffWithAPlainUrl",
     With<R>([](R& o) { o.tls.verify_peer = false; }),
     "RedisOptions.tls is set"},
    {"RedisTlsCertWithoutKey", With<R>([](R& o) {
       o.url = "rediss://h:6380";
       o.tls.cert_file = "/client.pem";
     }),
     "RedisOptions.tls: cert_file and key_file go together"},
    {"RedisTlsServerNameBad", With<R>([](R& o) {
       o.url = "rediss+cluster://h:7000";
       o.tls.server_name = "a b";
     }),
     "RedisOptions.tls.server_name \"a b\""},
};

class OptionsTest : public ::testing::TestWithParam<OptionCase> {};

TEST_P(OptionsTest, AcceptsTheRangeAndNamesTheFieldBeyondIt) {
  const OptionCase& c = GetParam();
  const absl::Status s = c.validate();
  if (std::string(c.error).empty()) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), StartsWith(c.error));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryField, OptionsTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<OptionCase>& info) {
                           return std::string(info.param.name);
                         });

// The defaults are valid everywhere.
TEST(OptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(LimiterOptions{}.Validate().ok());
  EXPECT_TRUE(LeaseOptions{}.Validate().ok());
  EXPECT_TRUE(LeasedLimiterOptions{}.Validate().ok());
  EXPECT_TRUE(DirectLimiterOptions{}.Validate().ok());
  EXPECT_TRUE(SharedLimitOptions{}.Validate().ok());
  // Redis cannot decide: fail_closed unless chosen otherwise, in every mode.
  EXPECT_EQ(DirectLimiterOptions{}.failure_mode, FailureMode::kFailClosed);
  EXPECT_EQ(LeasedLimiterOptions{}.failure_mode, FailureMode::kFailClosed);
  EXPECT_TRUE(RedisOptions{}.Validate().ok());
}

}  // namespace
}  // namespace tokenlease
