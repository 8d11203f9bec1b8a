// Flag validation and the flags' pass-through to the instance processes.
#include "demo/flags.h"

#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_DECLARE_FLAG(std::string, mode);
ABSL_DECLARE_FLAG(int, instances);
ABSL_DECLARE_FLAG(double, offered);
ABSL_DECLARE_FLAG(bool, live);
ABSL_DECLARE_FLAG(std::string, outage_kind);
ABSL_DECLARE_FLAG(bool, discover_instances);
ABSL_DECLARE_FLAG(bool, start_empty);
ABSL_DECLARE_FLAG(std::string, cold_key_policy);
ABSL_DECLARE_FLAG(std::string, pacing);
ABSL_DECLARE_FLAG(double, local_share);
ABSL_DECLARE_FLAG(std::string, url);

namespace tokenlease::tools {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Message(const DemoOptions& o) {
  return std::string(ValidateOptions(o).message());
}

TEST(FlagsTest, DefaultsAreTheReadmeDemo) {
  const DemoOptions o;
  EXPECT_TRUE(ValidateOptions(o).ok());
  EXPECT_EQ(o.mode, Mode::kLeased);
  EXPECT_EQ(o.instances, 4);
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.limit, 10000);
  EXPECT_EQ(o.seconds, 20);
  EXPECT_EQ(o.window_ms, 500);
  EXPECT_TRUE(o.live);
  EXPECT_EQ(o.pacing, Pacing::kSleep);
  EXPECT_EQ(o.local_share, LeaseOptions{}.local_share);
  EXPECT_EQ(absl::Milliseconds(o.charge_delay_ms), LeaseOptions{}.charge_delay);
  EXPECT_EQ(o.cold_key_policy, LeaseOptions{}.cold_key_policy);
  EXPECT_EQ(o.OfferedRate(), 100000);
}

TEST(FlagsTest, RangeMessagesNameTheFlagTheValueAndTheRange) {
  DemoOptions o;
  o.instances = 0;
  EXPECT_EQ(Message(o), "--instances is 0; it must be between 1 and 64");
  o = DemoOptions();
  o.threads = 65;
  EXPECT_EQ(Message(o), "--threads is 65; it must be between 1 and 64");
  o = DemoOptions();
  o.window_ms = 0;
  EXPECT_EQ(Message(o), "--window_ms is 0; it must be between 1 and 60000");
  o = DemoOptions();
  o.seconds = 0;
  EXPECT_EQ(Message(o),
            "--seconds is 0; it must be more than 0 and at most 3600");
  o = DemoOptions();
  o.limit = 3;
  EXPECT_EQ(Message(o), "--limit is 3; it must be at least --instances (4)");
  o = DemoOptions();
  o.offered = -1;
  EXPECT_THAT(Message(o), HasSubstr("--offered is -1"));
  o = DemoOptions();
  o.zipf_s = 0;
  EXPECT_THAT(Message(o), HasSubstr("--zipf_s is 0"));
  o = DemoOptions();
  o.max_lease_fraction = 1.5;
  EXPECT_THAT(Message(o), HasSubstr("--max_lease_fraction is 1.5"));
  o = DemoOptions();
  o.lease_ttl_ms = 200;
  o.charge_delay_ms = 201;
  EXPECT_EQ(Message(o),
            "--charge_delay_ms is 201; it must be between 0 and 200");
  o.charge_delay_ms = -1;
  EXPECT_EQ(Message(o),
            "--charge_delay_ms is -1; it must be between 0 and 200");
  o.charge_delay_ms = 0;
  EXPECT_EQ(Message(o), "");
}

TEST(FlagsTest, AlgorithmOnlyForLocalMode) {
  DemoOptions o;
  o.algorithm = Algorithm::kGcra;
  EXPECT_THAT(Message(o), HasSubstr("--algorithm is gcra"));
  o.mode = Mode::kLocal;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.algorithm = Algorithm::kSlidingWindowLog;
  EXPECT_TRUE(ValidateOptions(o).ok()) << Message(o);
}

TEST(FlagsTest, ChoiceFlagsAreChecked) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_mode, "remote");
  absl::StatusOr<DemoOptions> o = OptionsFromFlags();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "--mode is 'remote'; it must be leased, local or direct");
  absl::SetFlag(&FLAGS_mode, "direct");
  absl::SetFlag(&FLAGS_cold_key_policy, "never");
  o = OptionsFromFlags();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "--cold_key_policy is 'never'; it must be deny, wait or "
            "local_share");
  absl::SetFlag(&FLAGS_cold_key_policy, "wait");
  o = OptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->mode, Mode::kDirect);
  EXPECT_EQ(o->cold_key_policy, ColdKeyPolicy::kWait);
}

TEST(FlagsTest, BusyPacingAndLocalShare) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_pacing, "busy");
  absl::SetFlag(&FLAGS_local_share, 0.25);
  absl::StatusOr<DemoOptions> o = OptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->pacing, Pacing::kBusy);
  EXPECT_EQ(o->local_share, 0.25);
  EXPECT_EQ(PacingName(Pacing::kBusy), std::string("busy"));
  absl::SetFlag(&FLAGS_pacing, "nap");
  EXPECT_EQ(OptionsFromFlags().status().message(),
            "--pacing is 'nap'; it must be sleep, spin or busy");
  absl::SetFlag(&FLAGS_pacing, "sleep");
  absl::SetFlag(&FLAGS_local_share, 0);
  EXPECT_EQ(OptionsFromFlags().status().message(),
            "--local_share is 0; it must be more than 0 and at most 1");
}

TEST(FlagsTest, OutageKindAndInstanceDiscovery) {
  absl::FlagSaver saver;
  absl::StatusOr<DemoOptions> o = OptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->outage_kind, OutageKind::kStop);
  EXPECT_TRUE(o->discover_instances);
  EXPECT_FALSE(o->start_empty);
  absl::SetFlag(&FLAGS_outage_kind, "kill");
  absl::SetFlag(&FLAGS_discover_instances, false);
  absl::SetFlag(&FLAGS_start_empty, true);
  o = OptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->outage_kind, OutageKind::kKill);
  EXPECT_FALSE(o->discover_instances);
  EXPECT_TRUE(o->start_empty);
  EXPECT_EQ(OutageKindName(OutageKind::kKill), std::string("kill"));
  absl::SetFlag(&FLAGS_outage_kind, "pause");
  EXPECT_EQ(OptionsFromFlags().status().message(),
            "--outage_kind is 'pause'; it must be stop or kill");
}

TEST(FlagsTest, RangeErrorsComeThroughOptionsFromFlags) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_instances, 0);
  absl::StatusOr<DemoOptions> o = OptionsFromFlags();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "--instances is 0; it must be between 1 and 64");
}

TEST(FlagsTest, DemoFlagArgsCarryEveryDemoFlagAndParseBack) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_instances, 3);
  absl::SetFlag(&FLAGS_offered, 12345.25);
  absl::SetFlag(&FLAGS_live, false);
  const std::vector<std::string> args =
      DemoFlagArgs({{"url", "redis://127.0.0.1:1234"}});
  EXPECT_THAT(args, Contains("--instances=3"));
  EXPECT_THAT(args, Contains("--live=false"));
  EXPECT_THAT(args, Contains("--url=redis://127.0.0.1:1234"));
  EXPECT_THAT(args, Contains("--mode=leased"));
  for (const std::string& a : args) {
    EXPECT_FALSE(absl::StartsWith(a, "--instance="));  // internal flags
    EXPECT_FALSE(absl::StartsWith(a, "--ctl_fd="));
  }
  // What an instance process does with them: the same options.
  const DemoOptions parent = *OptionsFromFlags();
  absl::SetFlag(&FLAGS_instances, 4);
  absl::SetFlag(&FLAGS_offered, 0);
  absl::SetFlag(&FLAGS_live, true);
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    absl::CommandLineFlag* flag =
        absl::FindCommandLineFlag(a.substr(2, eq - 2));
    ASSERT_NE(flag, nullptr) << a;
    std::string error;
    ASSERT_TRUE(flag->ParseFrom(a.substr(eq + 1), &error))
        << a << ": " << error;
  }
  const DemoOptions child = *OptionsFromFlags();
  EXPECT_EQ(child.instances, 3);
  EXPECT_EQ(child.offered, 12345.25);
  EXPECT_FALSE(child.live);
  EXPECT_EQ(child.url, "redis://127.0.0.1:1234");
  EXPECT_EQ(child.mode, parent.mode);
}

// A URL (maybe with a password) reaches instances in the environment, not
// on their command line; --url wins over it.
TEST(FlagsTest, TheUrlFallsBackToTheEnvironment) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_url, "");
  ASSERT_EQ(setenv(kRedisUrlEnv, "redis://:pw@127.0.0.1:1234", 1), 0);
  EXPECT_EQ(OptionsFromFlags()->url, "redis://:pw@127.0.0.1:1234");
  absl::SetFlag(&FLAGS_url, "redis://127.0.0.1:99");
  EXPECT_EQ(OptionsFromFlags()->url, "redis://127.0.0.1:99");
  unsetenv(kRedisUrlEnv);
  absl::SetFlag(&FLAGS_url, "");
  EXPECT_EQ(OptionsFromFlags()->url, "");
  // What the parent passes its instances (demo.cc, SpawnAll) carries no
  // URL, also when --url has one with a password.
  absl::SetFlag(&FLAGS_url, "redis://:pw@127.0.0.1:1234");
  const std::vector<std::string> args = DemoFlagArgs({{"url", ""}});
  EXPECT_THAT(args, Contains("--url="));
  for (const std::string& a : args) EXPECT_THAT(a, Not(HasSubstr("pw@")));
}

}  // namespace
}  // namespace tokenlease::tools
