// Running a shell command line from a test, as a script would: the tests
// of documented console examples and of the `tokenlease` program itself.
#ifndef TOKENLEASE_TESTS_TESTING_SHELL_H_
#define TOKENLEASE_TESTS_TESTING_SHELL_H_

#include <string>

namespace tokenlease::testing {

struct ShellResult {
  std::string out;  // stdout
  std::string err;  // stderr
  int status = -1;  // the wait status (pclose); -1 if it could not run
  // The exit code; -1 if it did not exit (a signal) or could not run.
  int exit_code() const;
};

// Runs `command` with bash -c; stdout and stderr apart. Waits for it to
// end: bound it with timeout(1) in `command` if it might not.
ShellResult RunShell(const std::string& command);

}  // namespace tokenlease::testing

#endif  // TOKENLEASE_TESTS_TESTING_SHELL_H_
