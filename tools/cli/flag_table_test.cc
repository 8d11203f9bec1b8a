#include "cli/flag_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace tokenlease::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Values {
  std::string name = "default";
  int64_t count = 7;
  bool verbose = false;
  absl::Duration wait = absl::Seconds(2);
};

FlagTable MakeTable(Values* v) {
  FlagTable t("Usage: test");
  t.Add("name", &v->name, "a name");
  t.Add("count", &v->count, "a count");
  t.Add("verbose", &v->verbose, "say more");
  t.Add("wait", &v->wait, "how long");
  return t;
}

TEST(FlagTableTest, ParsesEveryFormAndKeepsPositionalsInOrder) {
  Values v;
  FlagTable t = MakeTable(&v);
  absl::StatusOr<std::vector<std::string>> pos =
      t.Parse({"a", "--name=x", "-count", "12", "--verbose", "b", "-1",
               "--wait=1.5s", "--", "--name=y"});
  ASSERT_TRUE(pos.ok()) << pos.status();
  EXPECT_THAT(*pos, ElementsAre("a", "b", "-1", "--name=y"));
  EXPECT_EQ(v.name, "x");
  EXPECT_EQ(v.count, 12);
  EXPECT_TRUE(v.verbose);
  EXPECT_EQ(v.wait, absl::Milliseconds(1500));
  EXPECT_TRUE(t.specified("count"));
  EXPECT_FALSE(t.help_requested());
}

TEST(FlagTableTest, NoPrefixTurnsABoolOffAndUnsetFlagsKeepTheirDefault) {
  Values v;
  v.verbose = true;
  FlagTable t = MakeTable(&v);
  ASSERT_TRUE(t.Parse({"--noverbose"}).ok());
  EXPECT_FALSE(v.verbose);
  EXPECT_EQ(v.name, "default");
  EXPECT_FALSE(t.specified("name"));
}

TEST(FlagTableTest, HelpStopsParsing) {
  Values v;
  FlagTable t = MakeTable(&v);
  ASSERT_TRUE(t.Parse({"--help", "--bogus"}).ok());
  EXPECT_TRUE(t.help_requested());
}

TEST(FlagTableTest, UsageListsEveryFlagWithItsDefault) {
  Values v;
  FlagTable t = MakeTable(&v);
  const std::string usage = t.Usage();
  EXPECT_THAT(usage, HasSubstr("Usage: test"));
  EXPECT_THAT(usage, HasSubstr("--name=default\n      a name"));
  EXPECT_THAT(usage, HasSubstr("--count=7\n"));
  EXPECT_THAT(usage, HasSubstr("--verbose=false\n"));
  EXPECT_THAT(usage, HasSubstr("--wait=2s\n"));
  EXPECT_THAT(usage, HasSubstr("--help\n"));
}

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

// The case's name in test listings (not its bytes).
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << absl::StrJoin(c.args, " ");
}

class FlagTableErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(FlagTableErrorTest, SaysWhatIsWrong) {
  Values v;
  FlagTable t = MakeTable(&v);
  absl::StatusOr<std::vector<std::string>> pos = t.Parse(GetParam().args);
  ASSERT_FALSE(pos.ok());
  EXPECT_EQ(pos.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(pos.status().message()),
              HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FlagTableErrorTest,
    ::testing::Values(
        BadCase{{"--bogus=1"}, "unknown flag --bogus"},
        BadCase{{"--noname"}, "unknown flag --noname"},  // not a bool
        BadCase{{"--count"}, "--count needs a value"},
        BadCase{{"--count=many"}, "--count=many is not a valid value"},
        BadCase{{"--wait=soon"}, "--wait=soon is not a valid value"},
        BadCase{{"--verbose=maybe"}, "--verbose=maybe is not a valid value"}));

TEST(WrapTest, BreaksAtTheWidthAndIndents) {
  EXPECT_EQ(Wrap("aaa bbb ccc", 2, 9), "  aaa bbb\n  ccc\n");
}

}  // namespace
}  // namespace tokenlease::cli
