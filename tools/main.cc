// The `tokenlease` command-line program. Its one command, `demo`, is the
// live multi-instance demo (tools/demo/).
#include <cstdio>
#include <string_view>

#include "demo/demo.h"

namespace {

constexpr char kUsage[] = R"(Usage: tokenlease <command> [flags]

Commands:
  demo    the live multi-instance demo: several processes share one limit
          through Redis (leased or direct mode; a private redis-server is
          started unless --url is given) or split it locally (local mode),
          with a row per window and a summary that checks the bounds
  help    print this help

Run `tokenlease demo --help` for the demo's flags.
)";

}  // namespace

int main(int argc, char** argv) {
  const std::string_view command = argc >= 2 ? argv[1] : "";
  if (command == "demo") return tokenlease::tools::RunDemo(argc, argv);
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
