#include "testing/shell.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace tokenlease::testing {

int ShellResult::exit_code() const {
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

ShellResult RunShell(const std::string& command) {
  // stderr goes to a file of this process's own (tests run in parallel).
  const std::string err_path =
      absl::StrCat(::testing::TempDir(), "run_shell.", getpid(), ".err");
  const std::string quoted =
      absl::StrCat("'", absl::StrReplaceAll(command, {{"'", "'\\''"}}), "'");
  const std::string shell =
      absl::StrCat("bash -c ", quoted, " 2>'", err_path, "'");
  ShellResult r;
  FILE* p = popen(shell.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  r.status = pclose(p);
  std::ifstream err(err_path, std::ios::binary);
  std::stringstream text;
  text << err.rdbuf();
  r.err = text.str();
  std::remove(err_path.c_str());
  return r;
}

}  // namespace tokenlease::testing
