// The `tokenlease` program itself (TOKENLEASE_CLI_PROGRAM): its dispatch to
// the commands and their exit statuses, as a shell script sees them. Every
// run is bounded by timeout(1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "support/tls_certs.h"
#include "testing/redis_test.h"
#include "testing/shell.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr
};

// Runs the program with `args` (already quoted for the shell).
Result Program(const std::string& args) {
  const testing::ShellResult r = testing::RunShell(absl::StrCat(
      "timeout -k 5 60 '", TOKENLEASE_CLI_PROGRAM, "' ", args, " 2>&1"));
  return {r.exit_code(), r.out + r.err};
}

TEST(ProgramTest, HelpListsEveryCommand) {
  const Result r = Program("help");
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"demo", "check", "inspect", "bench", "help"}) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\n  ", c, " ")));
  }
}

TEST(ProgramTest, UnknownCommandExitsTwo) {
  const Result r = Program("chekc");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, HasSubstr("unknown command \"chekc\""));
}

TEST(ProgramTest, EachCommandHasHelp) {
  for (const char* c : {"check", "inspect", "bench"}) {
    const Result r = Program(absl::StrCat(c, " --help"));
    EXPECT_EQ(r.code, 0) << c;
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("Usage: tokenlease ", c)));
    EXPECT_THAT(r.out, HasSubstr("--url=\"\""));
    for (const char* tls : {"--tls_ca_file=\"\"", "--tls_ca_dir=\"\"",
                            "--tls_cert_file=\"\"", "--tls_key_file=\"\"",
                            "--tls_server_name=\"\"", "--tls_insecure=false"}) {
      EXPECT_THAT(r.out, HasSubstr(tls)) << c;
    }
  }
}

class ProgramRedisTest : public testing::RedisTest {};

TEST_F(ProgramRedisTest, CheckExitStatusIsTheDecision) {
  const std::string args =
      absl::StrCat("check --url=", url(), " '--prefix=", prefix(),
                   "' --format=throttle k 0 1 3600");
  Result r = Program(args);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "0\n1\n0\n-1\n3600\n");
  r = Program(args);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out, ::testing::StartsWith("1\n1\n0\n"));
  r = Program(
      "check --limit=1 --key=k --timeout=200ms "
      "--url=unix:///nonexistent/tokenlease.sock");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST_F(ProgramRedisTest, InspectAfterCheck) {
  const std::string where =
      absl::StrCat("--url=", url(), " '--prefix=", prefix(), "'");
  ASSERT_EQ(
      Program(absl::StrCat("check ", where, " --key=k --limit=5 --period=1h"))
          .code,
      0);
  const Result r =
      Program(absl::StrCat("inspect ", where, " --limit=5 --period=1h k"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("available now: 4 of 5"));
}

TEST(ProgramTlsTest, CheckAndInspectOverTls) {
  absl::StatusOr<std::unique_ptr<support::TempTlsFiles>> certs =
      support::TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  const support::TlsFiles& files = (*certs)->files();
  auto server = testing::StartRedisServer(
      {.tls = support::TlsServerOptionsFor(files,
                                           /*require_client_cert=*/true)});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string where = absl::StrCat(
      "--url=", (*server)->tls_url(), " '--tls_ca_file=", files.ca_file,
      "' '--tls_cert_file=", files.client_cert,
      "' '--tls_key_file=", files.client_key, "' --prefix=tls:");
  Result r =
      Program(absl::StrCat("check ", where, " --key=k --limit=5 --period=1h"));
  EXPECT_EQ(r.code, 0) << r.out;
  r = Program(absl::StrCat("inspect ", where, " --limit=5 --period=1h k"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("available now: 4 of 5"));
  // The wrong CA: exit 2, the cause named, within the timeout.
  for (const char* command : {"check --key=k --limit=5", "inspect k"}) {
    const absl::Time start = absl::Now();
    r = Program(absl::StrCat(command,
                             " --timeout=1s --url=", (*server)->tls_url(),
                             " '--tls_ca_file=", files.other_ca_file, "'"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << command;
    EXPECT_EQ(r.code, 2) << command << ": " << r.out;
    EXPECT_THAT(r.out, HasSubstr("the server's certificate is not trusted"))
        << command;
  }
}

}  // namespace
}  // namespace tokenlease::cli
