// `tokenlease bench --quick`: the whole command, with the private
// redis-server it starts itself; the table must be complete and every
// number positive (not fast: sanitizer builds run this too). And with
// --url on a TLS port (rediss://).
#include "cli/bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/bench_parts.h"
#include "support/redis_server.h"
#include "support/tls_certs.h"

namespace tokenlease::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(BenchTest, QuickRunGivesACompleteTableOfPositiveNumbers) {
  std::ostringstream progress;
  absl::StatusOr<BenchReport> r = RunBenchmarks(QuickBenchOptions(), progress);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<std::string> names = HotCaseNames();
  ASSERT_EQ(r->hot.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const HotResult& h = r->hot[i];
    EXPECT_EQ(h.name, names[i]);
    EXPECT_EQ(h.note, "") << h.name;
    EXPECT_GT(h.median_ns, 0) << h.name;
    EXPECT_LE(h.min_ns, h.median_ns) << h.name;
    EXPECT_GE(h.max_ns, h.median_ns) << h.name;
    EXPECT_EQ(h.admitted, 1.0) << h.name;
  }
  const DirectResult& d = r->direct;
  ASSERT_TRUE(d.ran) << d.note;
  EXPECT_GT(d.single_p50_us, 0);
  EXPECT_GE(d.single_p99_us, d.single_p50_us);
  EXPECT_GT(d.single_per_s, 0);
  EXPECT_GT(d.pipelined_p50_us, 0);
  EXPECT_GE(d.pipelined_p99_us, d.pipelined_p50_us);
  EXPECT_GT(d.pipelined_per_s, 0);
  EXPECT_EQ(d.callers, 32);
  EXPECT_THAT(r->redis,
              ::testing::ContainsRegex("a private (redis|valkey)-server "));

  const std::string table = RenderBench(*r);
  for (const std::string& name : names) EXPECT_THAT(table, HasSubstr(name));
  EXPECT_THAT(table, HasSubstr("one caller, blocking calls"));
  EXPECT_THAT(table, HasSubstr("32 async calls in flight (pipelined)"));
  EXPECT_THAT(table, HasSubstr("compare them across machines"));
  EXPECT_THAT(table, Not(HasSubstr("not run")));
  EXPECT_THAT(progress.str(), HasSubstr("repetition 3 of 3"));
}

TEST(BenchTest, UsageErrorsExitTwo) {
  std::ostringstream out, err;
  EXPECT_EQ(RunBench({"--reps=0"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--reps is 0"));
  EXPECT_EQ(RunBench({"extra"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("unexpected argument 'extra'"));
  EXPECT_EQ(RunBench({"--help"}, out, err), 0);
  EXPECT_THAT(out.str(), HasSubstr("--callers=32"));
  EXPECT_THAT(out.str(), HasSubstr("--quick=false"));
  EXPECT_THAT(out.str(), HasSubstr("--tls_ca_file=\"\""));
  err.str("");
  EXPECT_EQ(RunBench({"--tls_ca_file=/ca.pem"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--tls_ca_file given without --url"));
}

TEST(BenchTest, ATlsUrl) {
  absl::StatusOr<std::unique_ptr<support::TempTlsFiles>> certs =
      support::TempTlsFiles::Make();
  ASSERT_TRUE(certs.ok()) << certs.status();
  auto server = support::StartRedisServer(
      {.tls = support::TlsServerOptionsFor((*certs)->files())});
  ASSERT_TRUE(server.ok()) << server.status();
  BenchOptions o = QuickBenchOptions();
  o.reps = 1;
  o.url = (*server)->tls_url();
  o.tls.ca_file = (*certs)->files().ca_file;
  std::ostringstream progress;
  absl::StatusOr<BenchReport> r = RunBenchmarks(o, progress);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->redis, HasSubstr("redis-server "));
  EXPECT_THAT(r->redis, HasSubstr(absl::StrCat(" at ", (*server)->tls_url())));
  EXPECT_TRUE(r->direct.ran) << r->direct.note;
  EXPECT_EQ(r->hot[1].note, "");  // the leased case took its lease
}

TEST(BenchStatsTest, MedianAndQuantile) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 2, 3}), 2.5);
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Quantile({5, 1, 4, 2, 3}, 0.5), 3);
  EXPECT_EQ(Quantile({5, 1, 4, 2, 3}, 0.99), 5);
}

}  // namespace
}  // namespace tokenlease::cli
