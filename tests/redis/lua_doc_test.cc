// docs/lua-protocol.md against the scripts this build assembled: every
// console example is replayed, in order, on a fresh private redis-server and
// must print exactly what the document shows; no SHA1 the document quotes
// may differ from the build's; the build's lua/*.lua and *.sha1 files are
// the embedded scripts and digests.
//
// A console example is a line "$ redis-cli ... -p 23458 ..." in a ```console
// block, followed by its expected output: the lines up to the next "$ " line
// (less the one empty line that separates two examples) or the end of the
// block. The line is run with bash after replacing "-p 23458" by the test
// server's port and "build/release/lua/" by this build's lua/ directory.
//
// The document shows what redis-server prints. Under Valkey (the Valkey
// matrix of scripts/test.sh: TOKENLEASE_REDIS_SERVER=valkey-server) the
// one known difference, the text of the NOSCRIPT error, is expected in
// Valkey's words (kValkeyTexts); every other byte must still match.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "support/redis_info.h"
#include "testing/redis_server.h"
#include "testing/shell.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease {
namespace {

constexpr char kDocPath[] = TOKENLEASE_DOC_PATH;
constexpr char kLuaBuildDir[] = TOKENLEASE_LUA_BUILD_DIR;
constexpr char kDocPort[] = "-p 23458";
constexpr char kDocLuaDir[] = "build/release/lua/";

// Redis's text -> Valkey's, where they differ in the document's examples.
// Valkey 8 drops the hint of the NOSCRIPT error; the library only looks at
// the "NOSCRIPT" prefix (RedisReply::ErrorStartsWith).
const std::vector<std::pair<std::string, std::string>> kValkeyTexts = {
    {"NOSCRIPT No matching script. Please use EVAL.\n",
     "NOSCRIPT No matching script.\n"},
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Example {
  int line = 0;         // of the "$ " line in the document, 1-based
  std::string command;  // as written, without "$ "
  std::string expected;
};

std::vector<Example> ParseConsoleExamples(const std::string& doc) {
  std::vector<Example> out;
  std::vector<std::string> lines = absl::StrSplit(doc, '\n');
  bool in_console = false;
  std::vector<std::string> output;  // of out.back()
  auto finish = [&](bool separated) {
    if (out.empty() || output.empty()) return;
    if (separated && output.back().empty()) output.pop_back();
    for (const std::string& l : output)
      absl::StrAppend(&out.back().expected, l, "\n");
    output.clear();
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (!in_console) {
      in_console = l == "```console";
      continue;
    }
    if (l == "```") {
      finish(false);
      in_console = false;
      continue;
    }
    if (absl::StartsWith(l, "$ ")) {
      finish(true);
      out.push_back({static_cast<int>(i + 1), l.substr(2), ""});
      continue;
    }
    output.push_back(l);
  }
  return out;
}

TEST(LuaDocTest, ConsoleExamplesReplayByteForByte) {
  const std::string doc = ReadFile(kDocPath);
  ASSERT_FALSE(doc.empty()) << "cannot read " << kDocPath;
  const std::vector<Example> examples = ParseConsoleExamples(doc);
  ASSERT_GE(examples.size(), 40u) << "too few console examples in " << kDocPath;

  testing::RedisServer server;
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<std::string> info = server.Command({"INFO", "server"});
  ASSERT_TRUE(info.ok()) << info.status();
  const bool valkey = support::InfoText(*info, "server_name") == "valkey";
  const std::string port = absl::StrCat("-p ", server.port());
  const std::string lua_dir = absl::StrCat(kLuaBuildDir, "/");
  for (const Example& e : examples) {
    const std::string where = absl::StrCat(kDocPath, ":", e.line);
    // Every example must talk to the test's server, never to a default one.
    ASSERT_TRUE(absl::StartsWith(e.command, "redis-cli ") &&
                absl::StrContains(e.command, absl::StrCat(kDocPort, " ")))
        << where << ": a console example must be a `redis-cli ... " << kDocPort
        << " ...` line: " << e.command;
    const std::string command = absl::StrReplaceAll(
        e.command, {{kDocPort, port}, {kDocLuaDir, lua_dir}});
    const testing::ShellResult r = testing::RunShell(command);
    const std::string expected =
        valkey ? absl::StrReplaceAll(e.expected, kValkeyTexts) : e.expected;
    EXPECT_EQ(r.out, expected)
        << where << ": the example's output differs\n"
        << "command:  " << e.command << "\n"
        << "ran:      " << command << "\n"
        << "expected (" << expected.size() << " bytes"
        << (valkey ? ", in Valkey's words" : "") << "):\n"
        << expected << "actual (" << r.out.size() << " bytes):\n"
        << r.out << "stderr:\n"
        << r.err << "exit status: " << r.status;
  }
}

TEST(LuaDocTest, QuotedDigestsAreTheBuiltOnes) {
  const std::string doc = ReadFile(kDocPath);
  ASSERT_FALSE(doc.empty()) << "cannot read " << kDocPath;
  const std::set<std::string> built = {
      std::string(internal::lua::kAcquireSha1),
      std::string(internal::lua::kReleaseSha1),
      std::string(internal::lua::kBatchSha1),
      std::string(internal::lua::kAnnounceSha1),
      std::string(internal::lua::kSinceSha1)};
  const std::regex hex40("(^|[^0-9a-fA-F])([0-9a-fA-F]{40})(?![0-9a-fA-F])");
  for (std::sregex_iterator it(doc.begin(), doc.end(), hex40), end; it != end;
       ++it) {
    const std::string digest = (*it)[2];
    EXPECT_TRUE(built.count(digest) > 0)
        << kDocPath << " quotes the digest " << digest
        << ", which is none of acquire.lua's (" << internal::lua::kAcquireSha1
        << "), release.lua's (" << internal::lua::kReleaseSha1
        << "), batch.lua's (" << internal::lua::kBatchSha1 << "), since.lua's ("
        << internal::lua::kSinceSha1 << ") and announce.lua's ("
        << internal::lua::kAnnounceSha1
        << ") of this build; refer to the .sha1 files instead";
  }
}

TEST(LuaDocTest, BuiltScriptFilesAreTheEmbeddedScripts) {
  const std::string dir = absl::StrCat(kLuaBuildDir, "/");
  EXPECT_EQ(ReadFile(dir + "acquire.lua"), internal::lua::kAcquireScript);
  EXPECT_EQ(ReadFile(dir + "release.lua"), internal::lua::kReleaseScript);
  EXPECT_EQ(ReadFile(dir + "acquire.lua.sha1"),
            std::string(internal::lua::kAcquireSha1) + "\n");
  EXPECT_EQ(ReadFile(dir + "release.lua.sha1"),
            std::string(internal::lua::kReleaseSha1) + "\n");
  EXPECT_EQ(ReadFile(dir + "batch.lua"), internal::lua::kBatchScript);
  EXPECT_EQ(ReadFile(dir + "batch.lua.sha1"),
            std::string(internal::lua::kBatchSha1) + "\n");
  EXPECT_EQ(ReadFile(dir + "announce.lua"), internal::lua::kAnnounceScript);
  EXPECT_EQ(ReadFile(dir + "announce.lua.sha1"),
            std::string(internal::lua::kAnnounceSha1) + "\n");
  EXPECT_EQ(ReadFile(dir + "since.lua"), internal::lua::kSinceScript);
  EXPECT_EQ(ReadFile(dir + "since.lua.sha1"),
            std::string(internal::lua::kSinceSha1) + "\n");
}

}  // namespace
}  // namespace tokenlease
