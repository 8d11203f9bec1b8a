// The flags of one `tokenlease` command: a table of --name -> typed
// variable, parsed with absl's flag syntax (absl::ParseFlag, the same
// parser ABSL_FLAG uses: "1s" for a duration, true/false for a bool, ...).
//
// Why not ABSL_FLAG and absl::ParseCommandLine (no command uses them, the
// demo included): one global flag registry would mix the commands' flags
// (the demo's --url, --limit, --algorithm and --seconds have other types
// and defaults than the operator commands'), and ParseCommandLine exits
// with status 1 on a bad flag, which for `tokenlease check` means "denied"
// to a script. A table per command accepts only that command's flags,
// lists them with their defaults in --help, and returns usage errors for
// the command to exit with 2.
#ifndef TOKENLEASE_TOOLS_CLI_FLAG_TABLE_H_
#define TOKENLEASE_TOOLS_CLI_FLAG_TABLE_H_

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/flags/marshalling.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tokenlease::cli {

class FlagTable {
 public:
  // `usage`: what --help prints above the flags (the synopsis and what the
  // command does).
  explicit FlagTable(std::string usage) : usage_(std::move(usage)) {}

  // Registers --`name`, parsed into *target (which must outlive the table).
  // The value *target holds now is the default --help shows.
  template <typename T>
  void Add(std::string name, T* target, std::string help) {
    Entry e;
    e.name = std::move(name);
    e.help = std::move(help);
    // Explicit <T>: absl's template, not the deprecated Duration overload.
    e.default_text = absl::UnparseFlag<T>(*target);
    e.is_bool = std::is_same_v<T, bool>;
    e.is_string = std::is_same_v<T, std::string>;
    e.parse = [target](absl::string_view text, std::string* error) {
      return absl::ParseFlag<T>(absl::string_view(text.data(), text.size()),
                                target, error);
    };
    entries_.push_back(std::move(e));
  }

  // Parses `args` (what follows the command's name): "--name=value",
  // "--name value", "-name" forms, "--name"/"--noname" for a bool, and
  // "--" (everything after it is positional). Returns the positional
  // arguments, in order. InvalidArgument naming the flag for an unknown
  // flag, a missing value or a value absl cannot parse. --help, -h and
  // --helpfull set help_requested() and stop parsing.
  absl::StatusOr<std::vector<std::string>> Parse(
      absl::Span<const std::string> args);

  bool help_requested() const { return help_requested_; }
  // True if --`name` was given on the command line.
  bool specified(absl::string_view name) const;
  // The usage text and every flag with its default and help.
  std::string Usage() const;

 private:
  struct Entry {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_bool = false;
    bool is_string = false;
    bool specified = false;
    std::function<bool(absl::string_view, std::string*)> parse;
  };
  Entry* Find(absl::string_view name);

  std::string usage_;
  std::vector<Entry> entries_;
  bool help_requested_ = false;
};

// `text` wrapped at `width` columns, each line after `indent` spaces.
std::string Wrap(absl::string_view text, int indent, int width = 79);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_FLAG_TABLE_H_
