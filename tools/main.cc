// The `tokenlease` command-line program.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "demo.h"
#include "demo_options.h"

namespace {

constexpr char kUsage[] = R"(Usage: tokenlease <command> [flags]

Commands:
  demo    run one in-process limit under load from several threads and show
          offered vs admitted rates and TryAcquire latency
  help    print this help; `tokenlease help demo` prints the demo's flags

A multi-process demo sharing one limit through Redis will come in a later
version. Run `tokenlease <command> --help` for a command's flags.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    absl::FPrintF(stderr, "%s", kUsage);
    return 2;
  }
  const std::string_view command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "demo") return tokenlease::tools::RunDemo(args);
  if (command == "help" || command == "--help" || command == "-h") {
    if (!args.empty() && args[0] == "demo") {
      absl::PrintF("%s", tokenlease::tools::DemoUsage());
    } else if (!args.empty()) {
      absl::FPrintF(stderr, "tokenlease: no help for unknown command \"%s\"\n",
                    args[0]);
      return 2;
    } else {
      absl::PrintF("%s", kUsage);
    }
    return 0;
  }
  absl::FPrintF(stderr,
                "tokenlease: unknown command \"%s\"; run `tokenlease help`\n",
                command);
  return 2;
}
