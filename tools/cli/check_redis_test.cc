// `tokenlease check` against the test binary's redis-server: exactly the
// limit admitted, then denied, for every algorithm; CL.THROTTLE's form and
// reply; errors. And over TLS (rediss://), against a server of its own
// with test certificates (support/tls_certs.h): verified by a CA, mutual
// TLS, and a wrong CA named within the timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/check.h"
#include "support/tls_certs.h"
#include "testing/redis_test.h"

namespace tokenlease::cli {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Outcome {
  int code;
  std::string out, err;
};

class CheckRedisTest : public testing::RedisTest {
 protected:
  // `tokenlease check <args> --url=<this server> --prefix=<this test's>`.
  Outcome Check(std::vector<std::string> args) {
    args.push_back(absl::StrCat("--url=", url()));
    args.push_back(absl::StrCat("--prefix=", prefix()));
    std::ostringstream out, err;
    const int code = RunCheck(args, out, err);
    return {code, out.str(), err.str()};
  }
};

// A window offset that makes aligned windows of `period` start one second
// ago, so that no window ends during the test whatever the time of day.
std::string OffsetStartingNow(absl::Duration period) {
  const int64_t p = absl::ToInt64Microseconds(period);
  const int64_t now = absl::ToUnixMicros(absl::Now()) - 1'000'000;
  return absl::StrCat("--window_offset=", now % p, "us");
}

struct AlgorithmCase {
  std::string name;
  std::vector<std::string> flags;
  int64_t limit;
};

// The case's name in test listings (not its bytes).
void PrintTo(const AlgorithmCase& c, std::ostream* os) { *os << c.name; }

class CheckAlgorithmTest : public CheckRedisTest,
                           public ::testing::WithParamInterface<AlgorithmCase> {
};

TEST_P(CheckAlgorithmTest, AdmitsExactlyTheLimitThenDenies) {
  std::vector<std::string> args = GetParam().flags;
  args.push_back("--key=user:42");
  if (GetParam().name == "FixedWindowAligned" ||
      GetParam().name == "SlidingCounter") {
    args.push_back(OffsetStartingNow(absl::Hours(1)));
  }
  for (int64_t i = 0; i < GetParam().limit; ++i) {
    const Outcome r = Check(args);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, StartsWith(absl::StrCat(
                           "allowed: remaining ", GetParam().limit - 1 - i,
                           ", retry after 0, reset after ")));
    EXPECT_EQ(r.err, "");
  }
  for (int i = 0; i < 2; ++i) {
    const Outcome r = Check(args);
    ASSERT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_THAT(r.out, StartsWith("denied: remaining 0, retry after "));
    EXPECT_THAT(r.out, HasSubstr("(key \"user:42\", cost 1, "));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckAlgorithmTest,
    ::testing::Values(
        AlgorithmCase{"TokenBucket", {"--limit=3", "--period=1h"}, 3},
        AlgorithmCase{"TokenBucketStepwise",
                      {"--limit=3", "--period=1h", "--refill=stepwise"},
                      3},
        AlgorithmCase{
            "Gcra", {"--algorithm=gcra", "--limit=3", "--period=1h"}, 3},
        AlgorithmCase{"FixedWindowFirstRequest",
                      {"--algorithm=fixed_window", "--limit=3", "--period=1h",
                       "--anchor=first_request"},
                      3},
        AlgorithmCase{"FixedWindowAligned",
                      {"--algorithm=fixed_window", "--limit=3", "--period=1h"},
                      3},
        AlgorithmCase{
            "SlidingCounter",
            {"--algorithm=sliding_counter", "--limit=3", "--period=1h"},
            3},
        AlgorithmCase{"SlidingLog",
                      {"--algorithm=sliding_log", "--limit=3", "--period=1h"},
                      3},
        AlgorithmCase{
            "TwoBands",
            {"--algorithm=fixed_window,token_bucket",
             "--anchor=first_request,aligned", "--limit=3,5", "--period=1h"},
            3}),
    [](const ::testing::TestParamInfo<AlgorithmCase>& i) {
      return i.param.name;
    });

TEST_F(CheckRedisTest, ThrottleFormAnswersLikeRedisCellsReadme) {
  // CL.THROTTLE user123 15 30 60 on a new key: 0 16 15 -1 2.
  Outcome r = Check({"--format=throttle", "user123", "15", "30", "60"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n16\n15\n-1\n2\n");
}

TEST_F(CheckRedisTest, ThrottleFormDeniesWithRetryAfterInSeconds) {
  // One per hour, max_burst 0: the second call waits an hour.
  Outcome r = Check({"--format=throttle", "k", "0", "1", "3600"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n1\n0\n-1\n3600\n");
  r = Check({"--format=throttle", "k", "0", "1", "3600"});
  EXPECT_EQ(r.code, 1) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  EXPECT_THAT(lines, ElementsAre("1", "1", "0", AnyOf("3599", "3600"),
                                 AnyOf("3599", "3600"), ""));
  // Quantity 0 only looks: admitted, nothing taken.
  r = Check({"--format=throttle", "k", "0", "1", "3600", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("0\n1\n0\n-1\n"));
  // A quantity above the capacity can never fit: retry -1.
  r = Check({"--format=throttle", "other", "0", "1", "3600", "2"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, StartsWith("1\n1\n1\n-1\n"));
}

TEST_F(CheckRedisTest, ThrottleFormatOfAFlagLimit) {
  const Outcome r =
      Check({"--format=throttle", "--key=k", "--limit=3", "--period=1h"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "0\n3\n2\n-1\n1200\n");  // a token every 20 minutes
}

TEST_F(CheckRedisTest, JsonFormat) {
  const Outcome r = Check(
      {"--format=json", "--key=k", "--limit=3", "--period=1h", "--cost=2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"allowed\":true,\"remaining\":1,\"retry_after_us\":0,"
            "\"reset_after_us\":2400000000,\"limit\":3,\"key\":\"k\","
            "\"cost\":2,\"spec\":\"token_bucket(limit=3/1h, burst=3, "
            "smooth)\"}\n");
}

TEST_F(CheckRedisTest, AKeyOfAnotherTypeIsAnErrorThatSaysWhatToDo) {
  client().Run({"RPUSH", absl::StrCat("{", prefix(), "k}:b0"), "x"});
  const Outcome r = Check({"--key=k", "--limit=3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("holds a list"));
  EXPECT_THAT(r.err, HasSubstr("tokenlease inspect"));
}

TEST_F(CheckRedisTest, NoRedisIsAnErrorNotADenial) {
  std::ostringstream out, err;
  const int code = RunCheck({"--key=k", "--limit=3", "--timeout=300ms",
                             "--url=unix:///nonexistent/tokenlease.sock"},
                            out, err);
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out.str(), "");
  EXPECT_THAT(
      err.str(),
      HasSubstr("no decision from unix:///nonexistent/tokenlease.sock"));
  EXPECT_THAT(err.str(), HasSubstr("is Redis running"));
}

TEST_F(CheckRedisTest, ARefusedPasswordIsNeverPrinted) {
  // The server has no password: the login fails, and no message shows it.
  std::ostringstream out, err;
  const int code = RunCheck(
      {"--key=k", "--limit=3", "--timeout=500ms",
       absl::StrCat("--url=redis://:hunter2@127.0.0.1:", server().port())},
      out, err);
  EXPECT_EQ(code, 2);
  EXPECT_THAT(err.str(), HasSubstr("redis://***@127.0.0.1"));
  EXPECT_THAT(err.str(), Not(HasSubstr("hunter2")));
}

// A server with a TLS port of its own; certificates shared by the suite.
class CheckTlsTest : public ::testing::Test {
 protected:
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
  void StartServer(bool require_client_cert) {
    auto server = testing::StartRedisServer(
        {.tls = support::TlsServerOptionsFor(files(), require_client_cert)});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  static const support::TlsFiles& files() { return certs_->files(); }
  // `tokenlease check <args> --url=<the TLS port> --limit=1 --period=1h
  // --key=<key>`.
  Outcome Check(std::vector<std::string> args, const std::string& key = "k") {
    args.push_back(absl::StrCat("--url=", server_->tls_url()));
    args.push_back("--limit=1");
    args.push_back("--period=1h");
    args.push_back(absl::StrCat("--key=", key));
    std::ostringstream out, err;
    const int code = RunCheck(args, out, err);
    return {code, out.str(), err.str()};
  }

  static support::TempTlsFiles* certs_;
  std::unique_ptr<testing::RedisServer> server_;
};

support::TempTlsFiles* CheckTlsTest::certs_ = nullptr;

TEST_F(CheckTlsTest, DecidesOverTlsVerifiedByTheCa) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*require_client_cert=*/false));
  const std::string ca = absl::StrCat("--tls_ca_file=", files().ca_file);
  Outcome r = Check({ca});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("allowed: remaining 0"));
  EXPECT_EQ(r.err, "");
  // The limit's state is the server's: the second call is denied.
  r = Check({ca});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, StartsWith("denied: "));
  // The certificate names localhost too; --tls_server_name checks it.
  r = Check({ca, "--tls_server_name=localhost"}, "other");
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(CheckTlsTest, MutualTls) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*require_client_cert=*/true));
  const std::string ca = absl::StrCat("--tls_ca_file=", files().ca_file);
  Outcome r = Check({ca, absl::StrCat("--tls_cert_file=", files().client_cert),
                     absl::StrCat("--tls_key_file=", files().client_key)});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("allowed: "));
  // Without a certificate: no decision, and the message says what to set.
  r = Check({ca, "--timeout=1s"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("client certificate"));
  EXPECT_THAT(r.err, HasSubstr("--tls_cert_file"));
  EXPECT_THAT(r.err, Not(HasSubstr("RedisOptions")));
}

TEST_F(CheckTlsTest, AWrongCaIsNamedWithinTheTimeout) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*require_client_cert=*/false));
  const absl::Time start = absl::Now();
  const Outcome r = Check(
      {absl::StrCat("--tls_ca_file=", files().other_ca_file), "--timeout=1s"});
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("no decision from ", server_->tls_url())));
  EXPECT_THAT(r.err, HasSubstr("the server's certificate is not trusted"));
  EXPECT_THAT(r.err, HasSubstr("--tls_ca_file names the CAs to trust"));
  // --tls_insecure accepts it, and warns.
  const Outcome insecure =
      Check({absl::StrCat("--tls_ca_file=", files().other_ca_file),
             "--tls_insecure"});
  EXPECT_EQ(insecure.code, 0) << insecure.err;
  EXPECT_THAT(insecure.err, HasSubstr("warning: --tls_insecure"));
}

TEST_F(CheckTlsTest, APlaintextUrlOfATlsPortSaysToUseRediss) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*require_client_cert=*/false));
  std::ostringstream out, err;
  const int code =
      RunCheck({"--key=k", "--limit=1", "--timeout=1s",
                absl::StrCat("--url=redis://127.0.0.1:", server_->tls_port())},
               out, err);
  EXPECT_EQ(code, 2);
  EXPECT_THAT(err.str(), HasSubstr("rediss://"));
}

}  // namespace
}  // namespace tokenlease::cli
