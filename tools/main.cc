// The `tokenlease` command-line program: `demo`, the live multi-instance
// demo (tools/demo/), and the operator's commands `check`, `inspect` and
// `bench` (tools/cli/).
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/bench.h"
#include "cli/check.h"
#include "cli/inspect.h"
#include "demo/demo.h"

namespace {

constexpr char kUsage[] = R"(Usage: tokenlease <command> [flags]

Commands:
  demo     the live multi-instance demo: several processes share one limit
           through Redis (leased or direct mode; a private redis-server is
           started unless --url is given) or split it locally (local mode),
           with a row per window and a summary that checks the bounds
  check    one direct-mode decision on Redis for a key, for scripts and
           operators (exit 0 allowed, 1 denied, 2 error); --format=throttle
           answers like redis-cell's CL.THROTTLE and takes its arguments
  inspect  a key's state in Redis, decoded for people (read-only: GET,
           ZRANGE, PTTL, TYPE, TIME); every algorithm and composite limits
  bench    this machine's hot-path and direct-mode numbers, with ratios
           taken in the same run, in under a minute (a private redis-server
           is started unless --url is given)
  help     print this help

Run `tokenlease <command> --help` for a command's flags and their defaults.
)";

}  // namespace

int main(int argc, char** argv) {
  const std::string_view command = argc >= 2 ? argv[1] : "";
  if (command == "demo") return tokenlease::tools::RunDemo(argc, argv);
  // The operator's commands take their arguments after the command's name.
  const std::vector<std::string> args(argv + (argc >= 2 ? 2 : argc),
                                      argv + argc);
  if (command == "check") {
    return tokenlease::cli::RunCheck(args, std::cout, std::cerr);
  }
  if (command == "inspect") {
    return tokenlease::cli::RunInspect(args, std::cout, std::cerr);
  }
  if (command == "bench") {
    return tokenlease::cli::RunBench(args, std::cout, std::cerr);
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::printf("%s", kUsage);
    return 0;
  }
  if (command.empty()) {
    std::fprintf(stderr, "%s", kUsage);
  } else {
    std::fprintf(
        stderr, "tokenlease: unknown command \"%.*s\"; run `tokenlease help`\n",
        static_cast<int>(command.size()), command.data());
  }
  return 2;
}
