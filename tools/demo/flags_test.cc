// The flag table (parsing, the instances' flags, --help), the range checks
// and the sizing rule.
#include "demo/flags.h"

#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "demo/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tokenlease::tools {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Message(const DemoOptions& o) {
  return std::string(ValidateOptions(o).message());
}

// The parse error of `args` ("" if they parse).
std::string ParseError(const std::vector<std::string>& args) {
  return std::string(ParseFlags(args).status().message());
}

DemoOptions Parsed(const std::vector<std::string>& args) {
  absl::StatusOr<CommandLine> c = ParseFlags(args);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->options : DemoOptions();
}

// The README's demo on a 4-CPU machine (4 instances: the range messages
// below name them), and on a 2-CPU one.
DemoOptions Four() { return ResolveOptions(DemoOptions(), /*cpus=*/5); }
DemoOptions Defaults() { return ResolveOptions(Parsed({}), /*cpus=*/2); }

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
  EXPECT_EQ(o.offered, 50000);
  // The outage in the middle, kept by fail_local.
  EXPECT_TRUE(o.HasOutage());
  EXPECT_EQ(o.outage_at, 8);
  EXPECT_EQ(o.outage_seconds, 4);
  EXPECT_EQ(o.outage_kind, OutageKind::kStop);
  EXPECT_EQ(o.failure_mode, FailureMode::kFailLocal);
  EXPECT_EQ(o.outage_usage, OutageUsage::kCharge);
  EXPECT_EQ(o.chart, kAuto);
  EXPECT_EQ(o.csv, kAuto);
  EXPECT_EQ(o.instance, -1);  // the parent
}

TEST(FlagsTest, RangeMessagesNameTheFlagTheValueAndTheRange) {
  struct Case {
    void (*set)(DemoOptions&);
    const char* message;
  };
  const Case cases[] = {
      {[](DemoOptions& o) { o.instances = 0; },
       "--instances is 0; it must be between 1 and 64"},
      {[](DemoOptions& o) { o.threads = 65; },
       "--threads is 65; it must be between 1 and 64"},
      {[](DemoOptions& o) { o.window_ms = 0; },
       "--window_ms is 0; it must be between 1 and 60000"},
      {[](DemoOptions& o) { o.seconds = 0; },
       "--seconds is 0; it must be more than 0 and at most 3600"},
      {[](DemoOptions& o) { o.limit = 3; },
       "--limit is 3; it must be at least --instances (4)"},
      {[](DemoOptions& o) { o.offered = -1; },
       "--offered is -1; it must be more than 0"},
      {[](DemoOptions& o) { o.burst = 0; },
       "--burst is 0; it must be at least 1"},
      {[](DemoOptions& o) { o.tick_us = 5; },
       "--tick_us is 5; it must be between 10 and 100000"},
      {[](DemoOptions& o) { o.outage_at = 25; },
       "--outage_at is 25; it must be within --seconds (20); --outage=false "
       "for no outage"},
      {[](DemoOptions& o) { o.zipf_s = 0; },
       "--zipf_s is 0; it must be more than 0"},
      {[](DemoOptions& o) { o.max_lease_fraction = 1.5; },
       "--max_lease_fraction is 1.5; it must be more than 0 and at most 1"},
      {[](DemoOptions& o) { o.local_share = 0; },
       "--local_share is 0; it must be more than 0 and at most 1"},
      {[](DemoOptions& o) { o.charge_delay_ms = 1001; },
       "--charge_delay_ms is 1001; it must be at most --lease_ttl_ms (1000)"},
      {[](DemoOptions& o) { o.charge_delay_ms = -1; },
       "--charge_delay_ms is -1; it must be between 0 and 3600000"},
      {[](DemoOptions& o) { o.zipf_keys = 200'000'000; },
       "--zipf_keys is 200000000; it must be between 1 and 100000000"},
      {[](DemoOptions& o) { o.outage_seconds = 0; },
       "--outage_seconds is 0; it must be more than 0 and at most 3600"},
      {[](DemoOptions& o) { o.cluster_low_water = 1; },
       "LeaseOptions.cluster_low_water is 1; it must be in (0, 0.999]"},
      {[](DemoOptions& o) { o.algorithm = Algorithm::kGcra; },
       "--algorithm is gcra; leased and direct mode use token_bucket (use "
       "--mode=local)"},
  };
  for (const Case& c : cases) {
    DemoOptions o = Four();
    c.set(o);
    EXPECT_EQ(Message(o), c.message);
  }
  DemoOptions o = Four();
  o.outage_at = 25;
  o.outage = false;  // then the outage flags do not matter
  EXPECT_EQ(Message(o), "");
  o.mode = Mode::kLocal;  // any algorithm
  o.algorithm = Algorithm::kSlidingWindowLog;
  EXPECT_EQ(Message(o), "");
}

TEST(FlagsTest, EveryFormOfAFlag) {
  const DemoOptions o =
      Parsed({"--mode=direct", "--instances", "3", "-seconds=2.5", "--nolive",
              "--use_handle", "--cold_key_policy=wait", "--pacing=busy",
              "--local_share=0.25", "--outage_kind=kill",
              "--nodiscover_instances", "--start_empty=true", "--csv="});
  EXPECT_EQ(o.mode, Mode::kDirect);
  EXPECT_EQ(o.instances, 3);
  EXPECT_EQ(o.seconds, 2.5);
  EXPECT_FALSE(o.live);
  EXPECT_TRUE(o.use_handle);
  EXPECT_EQ(o.cold_key_policy, ColdKeyPolicy::kWait);
  EXPECT_EQ(o.pacing, Pacing::kBusy);
  EXPECT_EQ(o.local_share, 0.25);
  EXPECT_EQ(o.outage_kind, OutageKind::kKill);
  EXPECT_FALSE(o.discover_instances);
  EXPECT_TRUE(o.start_empty);
  EXPECT_EQ(o.csv, "");
  // 0 leaves the choice to the machine and the scenario.
  EXPECT_EQ(o.threads, 0);
  EXPECT_EQ(o.limit, 0);
  EXPECT_EQ(o.offered, 0);
}

TEST(FlagsTest, WhatDoesNotParseIsNamed) {
  EXPECT_EQ(ParseError({"--mode=remote"}),
            "--mode is 'remote'; it must be leased, local or direct");
  EXPECT_EQ(ParseError({"--cold_key_policy=never"}),
            "--cold_key_policy is 'never'; it must be local_share, deny or "
            "wait");
  EXPECT_EQ(ParseError({"--pacing=nap"}),
            "--pacing is 'nap'; it must be tick, sleep, spin or busy");
  EXPECT_EQ(ParseError({"--outage_kind=pause"}),
            "--outage_kind is 'pause'; it must be stop or kill");
  EXPECT_THAT(ParseError({"--instances=many"}),
              HasSubstr("--instances is 'many'; "));
  EXPECT_EQ(ParseError({"--colour"}), "unknown flag --colour");
  EXPECT_EQ(ParseError({"--nomode"}), "unknown flag --nomode");  // no bool
  EXPECT_EQ(ParseError({"--limit"}), "--limit needs a value");
  EXPECT_EQ(ParseError({"now"}),
            "unexpected argument 'now'; the demo takes only flags");
  EXPECT_EQ(ParseError({"--instances=-1"}), "");  // parses; ValidateOptions
  EXPECT_EQ(Message(ResolveOptions(Parsed({"--instances=-1"}), 2)),
            "--instances is -1; it must be between 1 and 64");
}

// The names of the library's enums are indexed by their values: they must
// name the right ones.
TEST(FlagsTest, ChoiceNamesAreTheLibrarysValues) {
  DemoOptions o;
  for (FailureMode m : {FailureMode::kFailClosed, FailureMode::kFailOpen,
                        FailureMode::kFailLocal}) {
    o.failure_mode = m;
    EXPECT_EQ(FlagText(o, "failure_mode"), FailureModeName(m));
  }
  for (Algorithm a :
       {Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kFixedWindow,
        Algorithm::kSlidingWindowCounter, Algorithm::kSlidingWindowLog}) {
    o.algorithm = a;
    EXPECT_EQ(FlagText(o, "algorithm"), AlgorithmName(a));
  }
  EXPECT_EQ(Parsed({"--cold_key_policy=deny"}).cold_key_policy,
            ColdKeyPolicy::kDeny);
  EXPECT_EQ(Parsed({"--cold_key_policy=wait"}).cold_key_policy,
            ColdKeyPolicy::kWait);
  EXPECT_EQ(Parsed({"--cold_key_policy=local_share"}).cold_key_policy,
            ColdKeyPolicy::kLocalShare);
  EXPECT_EQ(Parsed({"--outage_usage=forget"}).outage_usage,
            OutageUsage::kForget);
  EXPECT_EQ(Parsed({"--outage_usage=charge"}).outage_usage,
            OutageUsage::kCharge);
}

TEST(FlagsTest, HelpListsEveryFlagWithItsDefault) {
  absl::StatusOr<CommandLine> c = ParseFlags({"--mode=local", "--help"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->help);
  const std::string usage = Usage();
  EXPECT_THAT(usage, HasSubstr("\n  --mode (default: leased)\n"));
  EXPECT_THAT(usage, HasSubstr("\n  --seconds (default: 20)\n"));
  EXPECT_THAT(usage, HasSubstr("\n  --url (default: \"\")\n"));
  EXPECT_THAT(usage, HasSubstr("\n  --failure_mode (default: fail_local)\n"));
  EXPECT_THAT(usage, Not(HasSubstr("--fd")));  // internal
  // Every flag passed on to the instances has its help and default.
  for (const std::string& arg : FlagArgs(DemoOptions())) {
    const std::string name = arg.substr(0, arg.find('='));
    if (name == "--instance" || name == "--fd" || name == "--prefix") {
      continue;
    }
    EXPECT_THAT(usage, HasSubstr(absl::StrCat("\n  ", name, " (default: ")));
  }
  for (absl::string_view line : absl::StrSplit(usage, '\n')) {
    EXPECT_LE(line.size(), 79u) << line;
  }
}

// --keys is --scenario's old name: either works (the last one given wins,
// as for any flag given twice).
TEST(FlagsTest, ScenarioAndItsOldName) {
  EXPECT_EQ(Parsed({"--keys=zipf"}).keys, KeyDist::kZipf);
  EXPECT_EQ(Parsed({"--keys=zipf", "--scenario=hot"}).keys, KeyDist::kHot);
  absl::StatusOr<CommandLine> c = ParseFlags({"--nooutage", "--keys=hot"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->given.contains("outage"));  // an outage flag was given
  EXPECT_TRUE(c->given.contains("keys"));
  EXPECT_FALSE(c->given.contains("scenario"));
}

// What the parent chose reaches an instance as flags that parse back to
// the same options (ResolveOptions then changes nothing).
TEST(FlagsTest, FlagArgsParseBackToTheSameOptions) {
  DemoOptions o = ResolveOptions(Parsed({"--scenario=zipf"}), /*cpus=*/3);
  o.offered = 1.0 / 3;  // not a short decimal
  o.outage = false;
  o.failure_mode = FailureMode::kFailOpen;
  o.algorithm = Algorithm::kSlidingWindowCounter;
  o.instance = 2;
  o.fd = 7;
  o.prefix = "lh:1:2:";
  const std::vector<std::string> args = FlagArgs(o);
  EXPECT_THAT(args, Contains("--scenario=zipf"));
  EXPECT_THAT(args, Contains("--instance=2"));
  EXPECT_THAT(args, Contains("--live=true"));
  for (const std::string& a : args)
    EXPECT_FALSE(absl::StartsWith(a, "--keys="));
  const DemoOptions got = ResolveOptions(Parsed(args), /*cpus=*/64);
  EXPECT_EQ(FlagArgs(got), args);
  EXPECT_EQ(got.offered, o.offered);
  EXPECT_EQ(got.threads, o.threads);
  EXPECT_EQ(got.prefix, o.prefix);
  EXPECT_EQ(FlagText(got, "failure_mode"), "fail_open");
  EXPECT_EQ(FlagText(got, "algorithm"), "sliding_counter");
  EXPECT_EQ(FlagText(got, "no_such_flag"), "");
}

// A URL (maybe with a password) reaches instances in the environment, not
// on their command line; --url wins over it.
TEST(FlagsTest, TheUrlFallsBackToTheEnvironment) {
  ASSERT_EQ(setenv(kRedisUrlEnv, "redis://:pw@127.0.0.1:1234", 1), 0);
  EXPECT_EQ(Parsed({}).url, "redis://:pw@127.0.0.1:1234");
  EXPECT_EQ(Parsed({"--url=redis://127.0.0.1:99"}).url, "redis://127.0.0.1:99");
  unsetenv(kRedisUrlEnv);
  EXPECT_EQ(Parsed({}).url, "");
}

// --redis=cluster: a private cluster, so no --url (an instance gets its URL
// from the parent) and no local mode; its outage is a kill -9 unless told
// otherwise, and lasts past the failover with time left after it.
TEST(FlagsTest, RedisCluster) {
  EXPECT_EQ(Parsed({}).redis, RedisKind::kSingle);
  EXPECT_EQ(Parsed({}).outage_kind, OutageKind::kStop);
  EXPECT_EQ(ParseError({"--redis=sentinel"}),
            "--redis is 'sentinel'; it must be single or cluster");
  const DemoOptions cluster = Parsed({"--redis=cluster"});
  EXPECT_EQ(cluster.redis, RedisKind::kCluster);
  EXPECT_EQ(cluster.outage_kind, OutageKind::kKill);
  EXPECT_EQ(Parsed({"--redis=cluster", "--outage_kind=stop"}).outage_kind,
            OutageKind::kStop);
  EXPECT_THAT(FlagArgs(cluster), Contains("--redis=cluster"));

  DemoOptions o = ResolveOptions(cluster, /*cpus=*/2);
  EXPECT_EQ(Message(o), "");
  const std::string refused =
      "--redis=cluster starts a private cluster for leased or direct mode: "
      "drop --url (or $TOKENLEASE_REDIS_URL), --mode=local or --redis";
  o.url = "redis://127.0.0.1:6379";
  EXPECT_EQ(ValidateOptions(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(o), refused);
  o.instance = 0;  // the parent's cluster, in the environment
  EXPECT_EQ(Message(o), "");
  o = ResolveOptions(Parsed({"--redis=cluster", "--mode=local"}), 2);
  EXPECT_EQ(Message(o), refused);
  o.mode = Mode::kDirect;
  EXPECT_EQ(Message(o), "");

  // The failover takes 3-5 s: at least 6 s of outage, ending by 80% of the
  // run; the single server's stays 40% to 60%.
  struct Case {
    double seconds, at, length;
  };
  for (const Case& c :
       {Case{20, 8, 6}, Case{16, 6.4, 6}, Case{10, 2, 6}, Case{60, 24, 12}}) {
    o = ResolveOptions(
        Parsed({"--redis=cluster", absl::StrCat("--seconds=", c.seconds)}), 2);
    EXPECT_DOUBLE_EQ(o.outage_at, c.at) << c.seconds;
    EXPECT_DOUBLE_EQ(o.outage_seconds, c.length) << c.seconds;
    EXPECT_EQ(Message(o), "") << c.seconds;
  }
  o = ResolveOptions(Parsed({"--seconds=10"}), 2);
  EXPECT_DOUBLE_EQ(o.outage_at, 4);
  EXPECT_DOUBLE_EQ(o.outage_seconds, 2);
  o = ResolveOptions(
      Parsed({"--redis=cluster", "--outage_at=3", "--outage_seconds=4"}), 2);
  EXPECT_EQ(o.outage_at, 3);  // given values are kept
  EXPECT_EQ(o.outage_seconds, 4);
}

// --tls: the private server (or cluster) over mutual TLS, so no --url and
// no local mode; an instance gets the run's certificates as --tls_*_file,
// which a user gives only with a rediss:// --url.
TEST(FlagsTest, Tls) {
  EXPECT_FALSE(Parsed({}).tls);
  DemoOptions o = ResolveOptions(Parsed({"--tls"}), /*cpus=*/2);
  EXPECT_TRUE(o.tls);
  EXPECT_EQ(Message(o), "");
  EXPECT_EQ(Message(ResolveOptions(Parsed({"--tls", "--redis=cluster"}), 2)),
            "");
  const std::string refused =
      "--tls starts a private Redis with TLS for leased or direct mode: drop "
      "--url (or $TOKENLEASE_REDIS_URL) or --mode=local (for a Redis of your "
      "own: a rediss:// --url)";
  EXPECT_EQ(Message(ResolveOptions(Parsed({"--tls", "--mode=local"}), 2)),
            refused);
  o.url = "rediss://127.0.0.1:6380";
  EXPECT_EQ(Message(o), refused);

  // What the parent hands an instance: the URL in the environment, the
  // files as flags.
  o.tls_ca_file = "/tmp/d/ca.pem";
  o.tls_cert_file = "/tmp/d/client.pem";
  o.tls_key_file = "/tmp/d/client.key";
  o.instance = 1;
  EXPECT_EQ(Message(o), "");
  const std::vector<std::string> args = FlagArgs(o);
  EXPECT_THAT(args, Contains("--tls=true"));
  EXPECT_THAT(args, Contains("--tls_ca_file=/tmp/d/ca.pem"));
  const DemoOptions got = Parsed(args);
  EXPECT_EQ(got.tls_cert_file, o.tls_cert_file);
  EXPECT_EQ(got.tls_key_file, o.tls_key_file);

  // A user's files go with a rediss:// URL of their own, not with --tls.
  const std::string files =
      "--tls_ca_file, --tls_cert_file and --tls_key_file go with a rediss:// "
      "--url (--tls makes its own)";
  o = ResolveOptions(
      Parsed({"--url=rediss://127.0.0.1:6380", "--tls_ca_file=ca.pem"}), 2);
  EXPECT_EQ(Message(o), "");
  o.url = "redis://127.0.0.1:6379";
  EXPECT_EQ(Message(o), files);
  EXPECT_EQ(
      Message(ResolveOptions(Parsed({"--tls", "--tls_ca_file=ca.pem"}), 2)),
      files);
}

struct SizingCase {
  int cpus;
  int instances;  // --instances, 0: chosen
  LoadPlan want;
};

void PrintTo(const SizingCase& c, std::ostream* os) {
  *os << c.cpus << " CPUs, --instances=" << c.instances;
}

class SizingTest : public ::testing::TestWithParam<SizingCase> {};

// One CPU's share stays with redis-server and the parent: the load gets the
// others, over 2 to 4 instances, one load thread per spare CPU once there
// are enough of them.
TEST_P(SizingTest, PlanForTheCpus) {
  const SizingCase& c = GetParam();
  const LoadPlan got = PlanLoad(c.cpus, c.instances);
  EXPECT_EQ(got, c.want);
  if (c.cpus > 2 && c.instances == 0) {
    EXPECT_LE(got.instances * got.threads, c.cpus - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cpus, SizingTest,
    ::testing::Values(SizingCase{0, 0, {2, 1}},  // unknown: as 1
                      SizingCase{1, 0, {2, 1}}, SizingCase{2, 0, {2, 1}},
                      SizingCase{3, 0, {2, 1}}, SizingCase{4, 0, {3, 1}},
                      SizingCase{5, 0, {4, 1}}, SizingCase{8, 0, {4, 1}},
                      SizingCase{9, 0, {4, 2}}, SizingCase{16, 0, {4, 3}},
                      SizingCase{64, 0, {4, 15}},
                      SizingCase{1024, 0, {4, kMaxThreads}},
                      // --instances given: the threads spread over them.
                      SizingCase{2, 8, {8, 1}}, SizingCase{16, 2, {2, 7}},
                      SizingCase{16, 64, {64, 1}}),
    [](const ::testing::TestParamInfo<SizingCase>& info) {
      return absl::StrCat("Cpus", info.param.cpus, "Instances",
                          info.param.instances);
    });

TEST(SizingTest, UsableCpusIsAtLeastOne) { EXPECT_GE(UsableCpus(), 1); }

// A direct decision blocks its thread for a round trip: more threads, all
// asleep while they wait.
TEST(SizingTest, DirectModeKeepsSeveralCallsInFlight) {
  EXPECT_EQ(PlanLoad(2, 0, Mode::kDirect), (LoadPlan{2, kDirectThreads}));
  EXPECT_EQ(PlanLoad(64, 0, Mode::kDirect), (LoadPlan{4, 15}));
  EXPECT_EQ(PlanLoad(2, 0, Mode::kLocal), (LoadPlan{2, 1}));
}

TEST(SizingTest, ScenarioDefaults) {
  const DemoOptions zipf = ResolveOptions(Parsed({"--scenario=zipf"}), 2);
  EXPECT_EQ(zipf.limit, kZipfLimit);
  EXPECT_EQ(zipf.burst, kZipfLimit);
  // The hottest key is offered 5 x its limit.
  EXPECT_NEAR(ZipfP0(zipf) * zipf.offered, kOverload * kZipfLimit, 1e-6);
}

TEST(SizingTest, GivenValuesAreKeptAndResolvingTwiceChangesNothing) {
  const DemoOptions r =
      ResolveOptions(Parsed({"--instances=3", "--limit=700", "--burst=7",
                             "--offered=900", "--seconds=10", "--outage_at=2"}),
                     /*cpus=*/16);
  EXPECT_EQ(r.instances, 3);
  EXPECT_EQ(r.threads, 5);  // 15 spare CPUs over 3 instances
  EXPECT_EQ(r.limit, 700);
  EXPECT_EQ(r.burst, 7);
  EXPECT_EQ(r.offered, 900);
  EXPECT_EQ(r.outage_at, 2);
  EXPECT_EQ(r.outage_seconds, 2);  // 20% of 10 s
  EXPECT_EQ(FlagArgs(ResolveOptions(r, /*cpus=*/1)), FlagArgs(r));
  // A small limit's burst still gives every instance a token of it.
  EXPECT_EQ(ResolveOptions(Parsed({"--limit=8", "--instances=4"}), 2).burst, 4);
}

TEST(SizingTest, TheBannerSaysWhatWasChosenAndWhy) {
  EXPECT_EQ(DescribeChoices(DemoOptions(), Defaults(), 2),
            "load: 2 instances x 1 thread (chosen for 2 CPUs), tick pacing (a "
            "wake-up every 1.00ms); offered 50,000/s (chosen) = 5.0 x the "
            "limit on the hot key\n");
  const DemoOptions given = Parsed(
      {"--instances=4", "--threads=2", "--offered=20000", "--pacing=sleep"});
  EXPECT_EQ(DescribeChoices(given, ResolveOptions(given, 2), 2),
            "load: 4 instances x 2 threads (--instances, --threads), sleep "
            "pacing; offered 20,000/s (--offered) = 2.0 x the limit on the "
            "hot key\n");
}

}  // namespace
}  // namespace tokenlease::tools
