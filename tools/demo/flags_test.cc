// Flag validation and the flags' pass-through to the instance processes.
#include "demo/flags.h"

#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "demo/sizing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_DECLARE_FLAG(std::string, mode);
ABSL_DECLARE_FLAG(std::string, scenario);
ABSL_DECLARE_FLAG(std::string, keys);
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

// The README's demo on a 4-CPU machine (4 instances: the range messages
// below name them).
DemoOptions Four() { return ResolveOptions(DemoOptions(), /*cpus=*/5); }

// The README's demo on a 2-CPU machine (the sizing rule: sizing.h).
DemoOptions Defaults() { return ResolveOptions(DemoOptions(), /*cpus=*/2); }

TEST(FlagsTest, DefaultsAreTheReadmeDemo) {
  const DemoOptions o = Defaults();
  EXPECT_TRUE(ValidateOptions(o).ok()) << Message(o);
  EXPECT_EQ(o.mode, Mode::kLeased);
  EXPECT_EQ(o.keys, KeyDist::kHot);
  EXPECT_EQ(o.instances, 2);
  EXPECT_EQ(o.threads, 1);
  EXPECT_EQ(o.limit, 10000);
  EXPECT_EQ(o.burst, 1000);
  EXPECT_EQ(o.seconds, 20);
  EXPECT_EQ(o.window_ms, 500);
  EXPECT_TRUE(o.live);
  EXPECT_EQ(o.pacing, Pacing::kTick);
  EXPECT_EQ(o.local_share, LeaseOptions{}.local_share);
  EXPECT_EQ(absl::Milliseconds(o.charge_delay_ms), LeaseOptions{}.charge_delay);
  EXPECT_EQ(o.cold_key_policy, LeaseOptions{}.cold_key_policy);
  EXPECT_EQ(o.OfferedRate(), 50000);
  // The outage in the middle, kept by fail_local.
  EXPECT_TRUE(o.outage);
  EXPECT_EQ(o.outage_at, 8);
  EXPECT_EQ(o.outage_seconds, 4);
  EXPECT_EQ(o.outage_kind, OutageKind::kStop);
  EXPECT_EQ(o.failure_mode, FailureMode::kFailLocal);
  EXPECT_EQ(o.outage_usage, OutageUsage::kCharge);
  EXPECT_EQ(o.chart, kAuto);
  EXPECT_EQ(o.csv, kAuto);
}

TEST(FlagsTest, RangeMessagesNameTheFlagTheValueAndTheRange) {
  DemoOptions o = Four();
  o.instances = 0;
  EXPECT_EQ(Message(o), "--instances is 0; it must be between 1 and 64");
  o = Four();
  o.threads = 65;
  EXPECT_EQ(Message(o), "--threads is 65; it must be between 1 and 64");
  o = Four();
  o.window_ms = 0;
  EXPECT_EQ(Message(o), "--window_ms is 0; it must be between 1 and 60000");
  o = Four();
  o.seconds = 0;
  EXPECT_EQ(Message(o),
            "--seconds is 0; it must be more than 0 and at most 3600");
  o = Four();
  o.limit = 3;
  EXPECT_EQ(Message(o), "--limit is 3; it must be at least --instances (4)");
  o = Four();
  o.offered = -1;
  EXPECT_THAT(Message(o), HasSubstr("--offered is -1"));
  o = Four();
  o.burst = 0;
  EXPECT_EQ(Message(o), "--burst is 0; it must be at least 1");
  o = Four();
  o.tick_us = 5;
  EXPECT_EQ(Message(o), "--tick_us is 5; it must be between 10 and 100000");
  o = Four();
  o.outage_at = 25;
  EXPECT_EQ(Message(o),
            "--outage_at is 25; it must be within --seconds (20); "
            "--outage=false for no outage");
  o.outage = false;  // then the outage flags do not matter
  EXPECT_EQ(Message(o), "");
  o = Four();
  o.zipf_s = 0;
  EXPECT_THAT(Message(o), HasSubstr("--zipf_s is 0"));
  o = Four();
  o.max_lease_fraction = 1.5;
  EXPECT_THAT(Message(o), HasSubstr("--max_lease_fraction is 1.5"));
  o = Four();
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
  DemoOptions o = Defaults();
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
            "--pacing is 'nap'; it must be tick, sleep, spin or busy");
  absl::SetFlag(&FLAGS_pacing, "sleep");
  absl::SetFlag(&FLAGS_local_share, 0);
  EXPECT_EQ(Message(ResolveOptions(*OptionsFromFlags(), 2)),
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

TEST(FlagsTest, ZeroLeavesTheChoiceToTheMachineAndTheScenario) {
  absl::FlagSaver saver;
  absl::StatusOr<DemoOptions> o = OptionsFromFlags();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->instances, 0);
  EXPECT_EQ(o->threads, 0);
  EXPECT_EQ(o->limit, 0);
  EXPECT_EQ(o->burst, 0);
  EXPECT_EQ(o->offered, 0);
  absl::SetFlag(&FLAGS_instances, -1);  // not 0: kept, and refused
  EXPECT_EQ(Message(ResolveOptions(*OptionsFromFlags(), 2)),
            "--instances is -1; it must be between 1 and 64");
}

// --keys is --scenario's old name: either works, and they must agree.
TEST(FlagsTest, ScenarioAndItsOldName) {
  absl::FlagSaver saver;
  char prog[] = "tokenlease", demo[] = "demo", keys[] = "--keys=zipf",
       scenario[] = "--scenario=hot";
  char* only_keys[] = {prog, demo, keys};
  RecordCommandLine(3, only_keys);
  absl::SetFlag(&FLAGS_keys, "zipf");
  EXPECT_EQ(OptionsFromFlags()->keys, KeyDist::kZipf);
  char* both[] = {prog, demo, keys, scenario};
  RecordCommandLine(4, both);
  absl::SetFlag(&FLAGS_scenario, "hot");
  EXPECT_EQ(OptionsFromFlags().status().message(),
            "--scenario is 'hot' but --keys is 'zipf'; give one of them "
            "(--keys is its old name)");
  absl::SetFlag(&FLAGS_scenario, "zipf");
  EXPECT_EQ(OptionsFromFlags()->keys, KeyDist::kZipf);
  RecordCommandLine(2, both);
  EXPECT_FALSE(OutageFlagsGiven());
  char outage[] = "--nooutage";
  char* no_outage[] = {prog, demo, outage};
  RecordCommandLine(3, no_outage);
  EXPECT_TRUE(OutageFlagsGiven());
  RecordCommandLine(2, both);
}

// What the parent chose reaches the instances as flag values that resolve
// to the same options (ResolveOptions then changes nothing).
TEST(FlagsTest, ResolvedValuesRoundTrip) {
  DemoOptions o = ResolveOptions(DemoOptions(), /*cpus=*/3);
  o.keys = KeyDist::kZipf;
  o.offered = 1.0 / 3;  // not a short decimal
  o.outage = false;
  absl::FlagSaver saver;
  for (const auto& [name, value] : ResolvedFlagValues(o)) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    ASSERT_NE(flag, nullptr) << name;
    std::string error;
    ASSERT_TRUE(flag->ParseFrom(value, &error)) << name << ": " << error;
  }
  const DemoOptions got = ResolveOptions(*OptionsFromFlags(), /*cpus=*/64);
  EXPECT_EQ(got.instances, o.instances);
  EXPECT_EQ(got.threads, o.threads);
  EXPECT_EQ(got.limit, o.limit);
  EXPECT_EQ(got.burst, o.burst);
  EXPECT_EQ(got.offered, o.offered);
  EXPECT_EQ(got.keys, KeyDist::kZipf);
  EXPECT_FALSE(got.outage);
  EXPECT_EQ(got.outage_at, o.outage_at);
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
