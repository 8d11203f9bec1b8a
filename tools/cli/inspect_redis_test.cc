// `tokenlease inspect` against the test binary's redis-server, after real
// decisions made with DirectLimiter: the decoded numbers of every
// algorithm and of a composite limit, with and without the limit flags;
// corrupt values, wrong types and another spec's state; lease records;
// that it only reads; and over TLS (rediss://) against a server of its own
// with test certificates (support/tls_certs.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/inspect.h"
#include "cli/read_only_redis.h"
#include "support/tls_certs.h"
#include "testing/redis_test.h"
#include "testing/wait.h"
#include "tokenlease/direct.h"
#include "tokenlease/leased.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

constexpr char kKey[] = "user:42";
constexpr int kTaken = 4;  // decisions made before inspecting

struct Outcome {
  int code;
  std::string out, err;
};

// Microseconds that make aligned windows of `period` start one second ago,
// so that no window ends during the test whatever the time of day.
int64_t OffsetStartingNowUs(absl::Duration period) {
  return (absl::ToUnixMicros(absl::Now()) - 1'000'000) %
         absl::ToInt64Microseconds(period);
}

class InspectRedisTest : public testing::RedisTest {
 protected:
  // `n` admitted decisions of cost 1 on kKey with `spec`.
  void Take(const LimitSpec& spec, int n) {
    DirectLimiterOptions o;
    o.redis.url = url();
    o.key_prefix = prefix();
    absl::StatusOr<std::unique_ptr<DirectLimiter>> l =
        DirectLimiter::Create(spec, o);
    ASSERT_TRUE(l.ok()) << l.status();
    for (int i = 0; i < n; ++i) {
      const Decision d = (*l)->TryAcquire(kKey, 1, absl::Seconds(10));
      ASSERT_EQ(d.source, DecisionSource::kDirect) << i;
      ASSERT_TRUE(d.allowed) << i;
    }
  }
  InspectReport Report(const std::optional<LimitSpec>& spec,
                       bool leases = false) {
    absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> r =
        ReadOnlyRedis::Connect(url(), absl::Seconds(10));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    absl::StatusOr<InspectReport> report =
        Inspect(**r, {prefix(), kKey, spec, leases});
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : InspectReport{};
  }
  // `tokenlease inspect <args> --url=... --prefix=... --key=user:42`.
  Outcome Command(std::vector<std::string> args) {
    args.push_back(absl::StrCat("--url=", url()));
    args.push_back(absl::StrCat("--prefix=", prefix()));
    args.push_back(absl::StrCat("--key=", kKey));
    std::ostringstream out, err;
    const int code = RunInspect(args, out, err);
    return {code, out.str(), err.str()};
  }
  std::string BandKey(int i) {
    return absl::StrCat("{", prefix(), kKey, "}:b", i);
  }
};

struct AlgorithmCase {
  std::string name;
  Band band;  // limit 10 per hour
  BandKind kind;
};

// The case's name in test listings (not its bytes).
void PrintTo(const AlgorithmCase& c, std::ostream* os) { *os << c.name; }

Band MakeBand(Algorithm a, Refill refill = Refill::kSmooth,
              WindowAnchor anchor = WindowAnchor::kAligned) {
  Band b;
  b.algorithm = a;
  b.limit = 10;
  b.period = absl::Hours(1);
  b.refill = refill;
  b.anchor = anchor;
  return b;
}

// The flags that give `b` (window_offset in µs).
std::vector<std::string> Flags(const Band& b) {
  return {absl::StrCat("--algorithm=", AlgorithmName(b.algorithm)),
          absl::StrCat("--limit=", b.limit),
          absl::StrCat("--period=", absl::FormatDuration(b.period)),
          absl::StrCat("--refill=",
                       b.refill == Refill::kSmooth ? "smooth" : "stepwise"),
          absl::StrCat("--anchor=", b.anchor == WindowAnchor::kAligned
                                        ? "aligned"
                                        : "first_request"),
          absl::StrCat("--window_offset=",
                       absl::ToInt64Microseconds(b.window_offset), "us")};
}

class InspectAlgorithmTest
    : public InspectRedisTest,
      public ::testing::WithParamInterface<AlgorithmCase> {};

TEST_P(InspectAlgorithmTest, DecodesTheStateRealDecisionsLeft) {
  Band band = GetParam().band;
  if (band.algorithm == Algorithm::kFixedWindow ||
      band.algorithm == Algorithm::kSlidingWindowCounter) {
    band.window_offset = absl::Microseconds(OffsetStartingNowUs(band.period));
  }
  LimitSpec spec;
  spec.bands = {band};
  Take(spec, kTaken);

  // With the spec: what a request could take now. A period of an hour
  // refills nothing during the test.
  InspectReport rep = Report(spec);
  EXPECT_THAT(rep.problems, IsEmpty());
  ASSERT_EQ(rep.bands.size(), 1u);
  const DecodedBand& d = rep.bands[0].decoded;
  EXPECT_EQ(rep.bands[0].key.key, BandKey(0));
  EXPECT_GT(rep.bands[0].key.pttl_ms, 0);
  EXPECT_EQ(d.kind, GetParam().kind);
  EXPECT_THAT(d.capacity, Optional(10));
  EXPECT_THAT(d.used, Optional(kTaken));
  EXPECT_THAT(d.available, Optional(10 - kTaken));
  EXPECT_THAT(rep.available, Optional(10 - kTaken));
  ASSERT_TRUE(d.full_in_us.has_value());
  EXPECT_GT(*d.full_in_us, 0);
  EXPECT_LE(*d.full_in_us, 2 * absl::ToInt64Microseconds(absl::Hours(1)));
  switch (d.kind) {
    case BandKind::kSmooth:  // 4 tokens of 6 minutes each
      EXPECT_GT(d.tat_us, rep.now_us + 23 * 60 * 1'000'000LL);
      EXPECT_LE(d.tat_us, rep.now_us + 24 * 60 * 1'000'000LL);
      break;
    case BandKind::kStepwise:
      EXPECT_EQ(d.tokens, 10 - kTaken);
      break;
    case BandKind::kFixed:
    case BandKind::kCounter:
      EXPECT_EQ(d.count, kTaken);
      EXPECT_LE(d.window_start_us, rep.now_us);
      EXPECT_GT(d.window_end_us, rep.now_us);
      break;
    case BandKind::kLog:
      EXPECT_GE(d.log_entries, 1);
      EXPECT_EQ(d.log_expired, 0);
      break;
    case BandKind::kUndecided:
      ADD_FAILURE() << "undecided";
  }

  // The command: exit 0, the raw value and the decoded lines.
  Outcome r = Command(Flags(band));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("band 0: ", BandKey(0))));
  EXPECT_THAT(
      r.out, HasSubstr(absl::StrCat("available now: ", 10 - kTaken, " of 10")));
  if (d.kind != BandKind::kLog) {
    EXPECT_THAT(r.out, HasSubstr("matches the spec"));
  }

  // Without the flags: the stamp says the kind and the units.
  rep = Report(std::nullopt);
  EXPECT_THAT(rep.problems, IsEmpty());
  ASSERT_EQ(rep.bands.size(), 1u);
  EXPECT_EQ(rep.bands[0].decoded.kind, GetParam().kind);
  EXPECT_THAT(rep.bands[0].decoded.used, Optional(kTaken));
  r = Command({});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("limit: not given; decoded from the stamps"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InspectAlgorithmTest,
    ::testing::Values(
        AlgorithmCase{"TokenBucket", MakeBand(Algorithm::kTokenBucket),
                      BandKind::kSmooth},
        AlgorithmCase{"TokenBucketStepwise",
                      MakeBand(Algorithm::kTokenBucket, Refill::kStepwise),
                      BandKind::kStepwise},
        AlgorithmCase{"Gcra", MakeBand(Algorithm::kGcra), BandKind::kSmooth},
        AlgorithmCase{"FixedWindowAligned", MakeBand(Algorithm::kFixedWindow),
                      BandKind::kFixed},
        AlgorithmCase{"FixedWindowFirstRequest",
                      MakeBand(Algorithm::kFixedWindow, Refill::kSmooth,
                               WindowAnchor::kFirstRequest),
                      BandKind::kFixed},
        AlgorithmCase{"SlidingCounter",
                      MakeBand(Algorithm::kSlidingWindowCounter),
                      BandKind::kCounter},
        AlgorithmCase{"SlidingLog", MakeBand(Algorithm::kSlidingWindowLog),
                      BandKind::kLog}),
    [](const ::testing::TestParamInfo<AlgorithmCase>& i) {
      return i.param.name;
    });

// A cluster or sentinel URL names no one server to read: refused, saying
// what to pass instead (and no password).
TEST(ReadOnlyRedisTest, RefusesClusterAndSentinelUrls) {
  for (const char* url : {"redis+cluster://:pw@127.0.0.1:1,127.0.0.1:2",
                          "redis+sentinel://:pw@127.0.0.1:1/mymaster"}) {
    absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> r =
        ReadOnlyRedis::Connect(url, absl::Seconds(1));
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("reads one server"));
    EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("pw")));
  }
}

TEST_F(InspectRedisTest, CompositeLimitOneBandEach) {
  // 10 per hour from the first request, and 20 per day in a rolling log.
  LimitSpec spec;
  spec.bands = {MakeBand(Algorithm::kFixedWindow, Refill::kSmooth,
                         WindowAnchor::kFirstRequest),
                MakeBand(Algorithm::kSlidingWindowLog)};
  spec.bands[1].limit = 20;
  spec.bands[1].period = absl::Hours(24);
  Take(spec, kTaken);
  InspectReport rep = Report(spec);
  EXPECT_THAT(rep.problems, IsEmpty());
  ASSERT_EQ(rep.bands.size(), 2u);
  EXPECT_THAT(rep.bands[0].decoded.available, Optional(10 - kTaken));
  EXPECT_THAT(rep.bands[1].decoded.available, Optional(20 - kTaken));
  EXPECT_EQ(rep.bands[1].meta.type, "string");
  EXPECT_THAT(rep.available, Optional(10 - kTaken));  // the least
  // Without flags both band keys are found.
  rep = Report(std::nullopt);
  ASSERT_EQ(rep.bands.size(), 2u);
  EXPECT_EQ(rep.bands[0].decoded.kind, BandKind::kFixed);
  EXPECT_EQ(rep.bands[1].decoded.kind, BandKind::kLog);
  const Outcome r = Command({"--algorithm=fixed_window,sliding_log",
                             "--anchor=first_request,aligned", "--limit=10,20",
                             "--period=1h,24h"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("now: 6 available (the least over the bands)"));
  // A one-band spec on the same name sees the log's keys as extra.
  rep = Report(LimitSpec{{spec.bands[0]}});
  EXPECT_EQ(rep.extra_keys.size(), 2u);
}

TEST_F(InspectRedisTest, AFreshKeyHasNoStateAndEverythingAvailable) {
  const InspectReport rep = Report(LimitSpec::Gcra(10, absl::Seconds(1)));
  ASSERT_EQ(rep.bands.size(), 1u);
  EXPECT_FALSE(rep.bands[0].present);
  EXPECT_THAT(rep.available, Optional(10));
  const Outcome r = Command({});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("no state: no band key exists"));
}

TEST_F(InspectRedisTest, AMetaKeyNoCallOfTheSpecReadsIsListedNotDecoded) {
  client().Run({"SET", BandKey(0) + ":m", "1 1767225600000000"});
  const InspectReport rep = Report(LimitSpec::Gcra(10, absl::Seconds(1)));
  EXPECT_THAT(rep.problems, IsEmpty());
  ASSERT_EQ(rep.bands.size(), 1u);
  EXPECT_FALSE(rep.bands[0].present);
  EXPECT_THAT(rep.extra_keys, ::testing::ElementsAre(BandKey(0) + ":m"));
  EXPECT_THAT(rep.available, Optional(10));
}

struct FaultCase {
  std::string name;
  std::vector<std::string> setup;  // a command on band key 0 ("$K")
  std::vector<std::string> flags;
  std::string message;
};

// The case's name in test listings (not its bytes).
void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class InspectFaultTest : public InspectRedisTest,
                         public ::testing::WithParamInterface<FaultCase> {};

TEST_P(InspectFaultTest, SaysWhatIsWrongAndExitsOne) {
  std::vector<std::string> cmd = GetParam().setup;
  for (std::string& a : cmd) {
    if (a == "$K") a = BandKey(0);
  }
  client().Run(cmd);
  const Outcome r = Command(GetParam().flags);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("ERROR: key '", BandKey(0), "' ",
                                            GetParam().message)));
  EXPECT_THAT(r.out, HasSubstr("1 problem(s)"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, InspectFaultTest,
    ::testing::Values(
        FaultCase{"CorruptValue",
                  {"SET", "$K", "garbage"},
                  {"--limit=10"},
                  "holds 'garbage', not a tokenlease state"},
        FaultCase{"CorruptValueWithoutSpec",
                  {"SET", "$K", "12 x g1/1"},
                  {},
                  "holds '12 x g1/1', not a tokenlease state"},
        FaultCase{"WrongType",
                  {"RPUSH", "$K", "x"},
                  {"--limit=10"},
                  "holds a list, not the string tokenlease keeps there"},
        FaultCase{"WrongTypeWithoutSpec",
                  {"HSET", "$K", "f", "v"},
                  {},
                  "holds a hash, not the string (or zset)"},
        FaultCase{"AStringWhereALogIsKept",
                  {"SET", "$K", "1 2"},
                  {"--algorithm=sliding_log", "--limit=10"},
                  "holds a string, not the zset tokenlease keeps there"},
        FaultCase{"AnotherSpecsState",
                  {"SET", "$K", "1767225600000000 3 f60000000/a0"},
                  {"--algorithm=gcra", "--limit=10"},
                  "holds the state of another spec ('f60000000/a0'; this "
                  "call's is 'g100000/1')"}),
    [](const ::testing::TestParamInfo<FaultCase>& i) { return i.param.name; });

TEST_F(InspectRedisTest, OnlyReads) {
  // A corrupt key, a state, and no tokenlease:since marker (the library's
  // connections write one; inspect must not).
  Take(LimitSpec::TokenBucket(10, absl::Hours(1)), 2);
  client().Run({"DEL", "tokenlease:since"});
  client().Run({"SET", absl::StrCat("{", prefix(), "other}:b0"), "garbage"});
  client().Run({"CONFIG", "RESETSTAT"});
  const std::string before = client().Run({"DEBUG", "DIGEST"}).str;
  for (const char* key : {kKey, "other"}) {
    std::ostringstream out, err;
    RunInspect(
        {absl::StrCat("--url=", url()), absl::StrCat("--prefix=", prefix()),
         absl::StrCat("--key=", key), "--leases"},
        out, err);
    EXPECT_EQ(err.str(), "");
  }
  // Every command the server ran since RESETSTAT was a read (or this
  // test's DEBUG and INFO).
  const std::string stats = client().Run({"INFO", "commandstats"}).str;
  EXPECT_EQ(client().Run({"DEBUG", "DIGEST"}).str, before);
  EXPECT_EQ(client().Run({"EXISTS", "tokenlease:since"}).integer, 0);
  std::set<std::string> seen;
  for (absl::string_view line : absl::StrSplit(stats, "\r\n")) {
    if (!absl::ConsumePrefix(&line, "cmdstat_")) continue;
    std::string name(line.substr(0, line.find(':')));
    name = name.substr(0, name.find('|'));  // "config|resetstat"
    seen.insert(name);
    if (name == "debug" || name == "info" || name == "config") continue;
    EXPECT_TRUE(IsReadOnlyCommand(name)) << name;
  }
  EXPECT_TRUE(seen.count("get") && seen.count("time")) << stats;
}

TEST_F(InspectRedisTest, ReadOnlyRedisRefusesWrites) {
  absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> r =
      ReadOnlyRedis::Connect(url(), absl::Seconds(10));
  ASSERT_TRUE(r.ok()) << r.status();
  for (const char* write : {"SET", "EVAL", "EVALSHA", "DEL", "set", "FLUSHALL",
                            "SCRIPT", "CONFIG"}) {
    absl::StatusOr<internal::RedisReply> reply = (*r)->Run({write, "k", "v"});
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kPermissionDenied)
        << write;
  }
  EXPECT_EQ(client().Run({"EXISTS", "k"}).integer, 0);
}

TEST_F(InspectRedisTest, ListsLeaseRecords) {
  LeasedLimiterOptions o;
  o.redis.url = url();
  o.key_prefix = prefix();
  o.lease.cold_key_policy = ColdKeyPolicy::kDeny;
  absl::StatusOr<std::unique_ptr<LeasedLimiter>> l =
      LeasedLimiter::Create(LimitSpec::TokenBucket(100, absl::Hours(1)), o);
  ASSERT_TRUE(l.ok()) << l.status();
  // Denied until the first lease arrives (bounded wait).
  ASSERT_TRUE(
      testing::WaitUntil([&] { return (*l)->TryAcquire(kKey).allowed; }));
  const InspectReport rep =
      Report(LimitSpec::TokenBucket(100, absl::Hours(1)), /*leases=*/true);
  EXPECT_THAT(rep.problems, IsEmpty());
  ASSERT_GE(rep.leases_found, 1);
  ASSERT_FALSE(rep.leases.empty());
  EXPECT_TRUE(absl::StartsWith(rep.leases[0].key.key,
                               absl::StrCat("{", prefix(), kKey, "}:r:")));
  EXPECT_THAT(rep.leases[0].line, HasSubstr("granted "));
  EXPECT_THAT(RenderInspect(rep), HasSubstr("lease records: "));
}

TEST_F(InspectRedisTest, UsageErrors) {
  std::ostringstream out, err;
  EXPECT_EQ(RunInspect({}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--key is missing"));
  err.str("");
  EXPECT_EQ(RunInspect({"a", "b"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("one key"));
  err.str("");
  EXPECT_EQ(RunInspect({"k", "--limit=0"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("bands[0].limit is 0"));
  err.str("");
  EXPECT_EQ(RunInspect({"k", "--url=unix:///nonexistent/x.sock"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("cannot connect"));
}

// A server with a TLS port of its own; certificates shared by the suite.
class InspectTlsTest : public ::testing::Test {
 protected:
  static constexpr char kPrefix[] = "tls:";

  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<support::TempTlsFiles>> certs =
        support::TempTlsFiles::Make();
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = certs->release();
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(certs_, nullptr); }
  // Starts the server and takes kTaken tokens of kKey through its
  // plaintext port (10 per hour).
  void StartServerAndTake(bool require_client_cert) {
    auto server = testing::StartRedisServer(
        {.tls = support::TlsServerOptionsFor(files(), require_client_cert)});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    DirectLimiterOptions o;
    o.redis.url = server_->url();
    o.key_prefix = kPrefix;
    absl::StatusOr<std::unique_ptr<DirectLimiter>> l =
        DirectLimiter::Create(LimitSpec::TokenBucket(10, absl::Hours(1)), o);
    ASSERT_TRUE(l.ok()) << l.status();
    for (int i = 0; i < kTaken; ++i) {
      ASSERT_TRUE((*l)->TryAcquire(kKey, 1, absl::Seconds(10)).allowed) << i;
    }
  }
  static const support::TlsFiles& files() { return certs_->files(); }
  // `tokenlease inspect <args> --url=<the TLS port> --prefix=tls:
  // --limit=10 --period=1h user:42`.
  Outcome Command(std::vector<std::string> args) {
    args.push_back(absl::StrCat("--url=", server_->tls_url()));
    for (const char* a :
         {"--prefix=tls:", "--limit=10", "--period=1h", "user:42"}) {
      args.push_back(a);
    }
    std::ostringstream out, err;
    const int code = RunInspect(args, out, err);
    return {code, out.str(), err.str()};
  }

  static support::TempTlsFiles* certs_;
  std::unique_ptr<testing::RedisServer> server_;
};

support::TempTlsFiles* InspectTlsTest::certs_ = nullptr;

TEST_F(InspectTlsTest, ReadsAKeyOverTlsVerifiedByTheCa) {
  ASSERT_NO_FATAL_FAILURE(StartServerAndTake(/*require_client_cert=*/false));
  const Outcome r = Command({absl::StrCat("--tls_ca_file=", files().ca_file)});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat(
                         "on rediss://127.0.0.1:", server_->tls_port(), "/0")));
  EXPECT_THAT(
      r.out, HasSubstr(absl::StrCat("available now: ", 10 - kTaken, " of 10")));
}

TEST_F(InspectTlsTest, MutualTls) {
  ASSERT_NO_FATAL_FAILURE(StartServerAndTake(/*require_client_cert=*/true));
  const std::string ca = absl::StrCat("--tls_ca_file=", files().ca_file);
  Outcome r =
      Command({ca, absl::StrCat("--tls_cert_file=", files().client_cert),
               absl::StrCat("--tls_key_file=", files().client_key)});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(
      r.out, HasSubstr(absl::StrCat("available now: ", 10 - kTaken, " of 10")));
  r = Command({ca});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr("client certificate"));
  EXPECT_THAT(r.err, HasSubstr("--tls_cert_file"));
}

TEST_F(InspectTlsTest, AWrongCaIsNamedWithinTheTimeout) {
  ASSERT_NO_FATAL_FAILURE(StartServerAndTake(/*require_client_cert=*/false));
  const absl::Time start = absl::Now();
  const Outcome r = Command(
      {absl::StrCat("--tls_ca_file=", files().other_ca_file), "--timeout=1s"});
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("the server's certificate is not trusted"));
  EXPECT_THAT(r.err, HasSubstr("--tls_ca_file names the CAs to trust"));
  EXPECT_THAT(r.err, HasSubstr("the --tls_* flags"));
}

TEST_F(InspectTlsTest, TlsFlagsNeedATlsUrlAndOneServer) {
  std::ostringstream out, err;
  EXPECT_EQ(RunInspect({"k", "--url=redis://127.0.0.1:1",
                        "--tls_ca_file=/etc/ssl/certs/ca.pem"},
                       out, err),
            2);
  EXPECT_THAT(err.str(), HasSubstr("--tls_ca_file given, but "
                                   "redis://127.0.0.1:1 is not a TLS URL"));
  absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> r =
      ReadOnlyRedis::Connect("rediss+cluster://127.0.0.1:1", absl::Seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("pass rediss://host:port"));
}

}  // namespace
}  // namespace tokenlease::cli
