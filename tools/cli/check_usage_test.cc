// `tokenlease check` without Redis: its flag validation (every case exits
// 2 before any connection is made), --help, and the output formats.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/check.h"
#include "cli/common.h"
#include "tokenlease/spec.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct UsageCase {
  std::string name;
  std::vector<std::string> args;
  std::string message;
};

// The case's name in test listings (not its bytes).
void PrintTo(const UsageCase& c, std::ostream* os) { *os << c.name; }

class CheckUsageTest : public ::testing::TestWithParam<UsageCase> {};

// A command that would be valid (--key=k --limit=5) but for `flag`.
std::vector<std::string> ValidBut(std::string flag) {
  return {"--key=k", "--limit=5", std::move(flag)};
}

TEST_P(CheckUsageTest, ExitsTwoAndSaysWhatIsWrong) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCheck(GetParam().args, out, err), 2);
  EXPECT_EQ(out.str(), "");
  EXPECT_THAT(err.str(), HasSubstr(GetParam().message));
  EXPECT_THAT(err.str(), HasSubstr("tokenlease check: "));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckUsageTest,
    ::testing::Values(
        UsageCase{"NoLimit", {"--key=k"}, "--limit is missing"},
        UsageCase{"NoKey", {"--limit=5"}, "--key is missing"},
        UsageCase{"NegativeCost", ValidBut("--cost=-1"), "--cost is -1"},
        UsageCase{"UnknownFormat", ValidBut("--format=xml"),
                  "--format is 'xml'; it must be human, throttle or json"},
        UsageCase{"ZeroTimeout", ValidBut("--timeout=0"),
                  "--timeout is 0; it must be between 1ms and 1m"},
        UsageCase{"UnknownFlag", ValidBut("--bogus"), "unknown flag --bogus"},
        UsageCase{"DemoFlagsAreNotChecks", ValidBut("--instances=4"),
                  "unknown flag --instances"},
        UsageCase{"BadNumber", ValidBut("--cost=two"),
                  "--cost=two is not a valid value"},
        UsageCase{
            "BurstOnAWindow",
            {"--key=k", "--algorithm=fixed_window", "--limit=5", "--burst=3"},
            "--burst applies to token_bucket and gcra bands only"},
        UsageCase{"FlagsAndThrottleArguments",
                  {"--key=x", "k", "15", "30", "60"},
                  "not both"},
        UsageCase{"TooFewThrottleArguments",
                  {"k", "15", "30"},
                  "takes 4 or 5 arguments"},
        UsageCase{"ZeroRate",
                  {"--format=throttle", "k", "15", "0", "60"},
                  "argument 3 (count per period)"},
        UsageCase{"BadUrl", ValidBut("--url=http://x"), "redis URL"},
        UsageCase{"BadPrefix", ValidBut("--prefix={p"), "key_prefix"},
        UsageCase{"TlsFlagsWithAPlainUrl",
                  {"--key=k", "--limit=5", "--url=redis://:pw@127.0.0.1:1",
                   "--tls_ca_file=/ca.pem", "--tls_insecure"},
                  "--tls_ca_file, --tls_insecure given, but "
                  "redis://***@127.0.0.1:1 is not a TLS URL: use rediss://"},
        UsageCase{"ACertificateWithoutItsKey",
                  {"--key=k", "--limit=5", "--url=rediss://127.0.0.1:1",
                   "--tls_cert_file=/client.pem"},
                  "--tls_cert_file and --tls_key_file go together"},
        UsageCase{"ABadServerName",
                  {"--key=k", "--limit=5", "--url=rediss://127.0.0.1:1",
                   "--tls_server_name=a/b"},
                  "--tls_server_name \"a/b\": a host name has only"},
        // Files are read before anything is connected, and named by flag.
        UsageCase{"AnUnreadableCaFile",
                  {"--key=k", "--limit=5", "--url=rediss://127.0.0.1:1",
                   "--tls_ca_file=/nonexistent/ca.pem"},
                  "--tls_ca_file \"/nonexistent/ca.pem\" cannot be read"}),
    [](const ::testing::TestParamInfo<UsageCase>& i) { return i.param.name; });

TEST(CheckUsageTest, ABadUrlNeverShowsItsPassword) {
  std::ostringstream out, err;
  EXPECT_EQ(
      RunCheck(ValidBut("--url=redis://:hunter2@127.0.0.1:notaport"), out, err),
      2);
  EXPECT_THAT(err.str(), HasSubstr("redis URL"));
  EXPECT_THAT(err.str(), Not(HasSubstr("hunter2")));
}

TEST(CheckUsageTest, HelpListsEveryFlagWithItsDefault) {
  std::ostringstream out, err;
  EXPECT_EQ(RunCheck({"--help"}, out, err), 0);
  for (const char* flag : {"--algorithm=token_bucket",
                           "--limit=\"\"",
                           "--period=1s",
                           "--burst=0",
                           "--refill=smooth",
                           "--anchor=aligned",
                           "--window_offset=0",
                           "--log_granularity=0",
                           "--max_log_entries=0",
                           "--key=\"\"",
                           "--cost=1",
                           "--prefix=tokenlease:",
                           "--url=\"\"",
                           "--tls_ca_file=\"\"",
                           "--tls_ca_dir=\"\"",
                           "--tls_cert_file=\"\"",
                           "--tls_key_file=\"\"",
                           "--tls_server_name=\"\"",
                           "--tls_insecure=false",
                           "--timeout=2s",
                           "--format=human",
                           "CL.THROTTLE",
                           "Exit status: 0 allowed, 1 denied"}) {
    EXPECT_THAT(out.str(), HasSubstr(flag));
  }
}

CheckOutcome Outcome(bool allowed, int64_t retry_ns) {
  CheckOutcome o;
  o.decision.allowed = allowed;
  o.decision.remaining = allowed ? 4 : 0;
  o.decision.retry_after_ns = retry_ns;
  o.decision.reset_after_ns = 200'000'000;
  o.key = "user:\"42\"";
  o.cost = 1;
  o.spec = LimitSpec::Gcra(5, absl::Seconds(1));
  o.limit = 5;
  return o;
}

TEST(CheckFormatTest, HumanLine) {
  EXPECT_EQ(FormatHuman(Outcome(true, 0)),
            "allowed: remaining 4, retry after 0, reset after 200ms (key "
            "\"user:\\\"42\\\"\", cost 1, gcra(limit=5/1s, burst=5))\n");
  EXPECT_EQ(FormatHuman(Outcome(false, 150'000'000)),
            "denied: remaining 0, retry after 150ms, reset after 200ms (key "
            "\"user:\\\"42\\\"\", cost 1, gcra(limit=5/1s, burst=5))\n");
  EXPECT_THAT(FormatHuman(Outcome(false, kNever)),
              HasSubstr("retry after never (cost 1 is more than the limit "
                        "admits at once, 5)"));
}

TEST(CheckFormatTest, JsonObject) {
  EXPECT_EQ(FormatJson(Outcome(false, kNever)),
            "{\"allowed\":false,\"remaining\":0,\"retry_after_us\":-1,"
            "\"reset_after_us\":200000,\"limit\":5,\"key\":\"user:\\\"42\\\"\","
            "\"cost\":1,\"spec\":\"gcra(limit=5/1s, burst=5)\"}\n");
}

TEST(CommonTest, UrlFromTheFlagThenTheEnvironmentThenTheDefault) {
  ASSERT_EQ(setenv("TOKENLEASE_REDIS_URL", "redis://:pw@env-host:1", 1), 0);
  EXPECT_EQ(ResolveRedisUrl("redis://flag-host:2"), "redis://flag-host:2");
  EXPECT_EQ(ResolveRedisUrl(""), "redis://:pw@env-host:1");
  EXPECT_EQ(Redacted(ResolveRedisUrl("")), "redis://***@env-host:1");
  ASSERT_EQ(unsetenv("TOKENLEASE_REDIS_URL"), 0);
  EXPECT_EQ(ResolveRedisUrl(""), "redis://127.0.0.1:6379");
}

TEST(CommonTest, InFlagTermsNamesTheTlsFlags) {
  EXPECT_EQ(InFlagTerms("TLS: the server's certificate is not trusted: x "
                        "(RedisOptions::tls.ca_file names the CAs to trust)"),
            "TLS: the server's certificate is not trusted: x (--tls_ca_file "
            "names the CAs to trust)");
  EXPECT_EQ(InFlagTerms("set RedisOptions::tls.cert_file and key_file to one "
                        "its CA signed"),
            "set --tls_cert_file and --tls_key_file to one its CA signed");
  EXPECT_EQ(InFlagTerms("RedisOptions.tls.key_file \"/k.pem\": does not "
                        "match cert_file"),
            "--tls_key_file \"/k.pem\": does not match cert_file");
  EXPECT_EQ(InFlagTerms("(set RedisOptions::tls.server_name to a name it "
                        "holds)"),
            "(set --tls_server_name to a name it holds)");
  EXPECT_EQ(InFlagTerms("no TLS here"), "no TLS here");
}

TEST(CommonTest, JsonStringEscapes) {
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

}  // namespace
}  // namespace tokenlease::cli
