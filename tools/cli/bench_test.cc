// `tokenlease bench --quick`: the whole command, with the private
// redis-server it starts itself; the table must be complete and every
// number positive (not fast: sanitizer builds run this too).
#include "cli/bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/bench_parts.h"

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
  EXPECT_THAT(r->redis, HasSubstr("a private redis-server"));

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
