#include "cli/flag_table.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace tokenlease::cli {

FlagTable::Entry* FlagTable::Find(absl::string_view name) {
  for (Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

bool FlagTable::specified(absl::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return e.specified;
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> FlagTable::Parse(
    absl::Span<const std::string> args) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    // A lone "-" and negative numbers ("-1") are positional arguments: the
    // CL.THROTTLE form takes numbers, and its range checks say more than
    // "unknown flag -1".
    if (arg.size() < 2 || arg[0] != '-' || absl::ascii_isdigit(arg[1])) {
      positional.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      positional.insert(positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    if (arg == "help" || arg == "h" || arg == "helpfull" || arg == "?") {
      help_requested_ = true;
      return positional;
    }
    absl::string_view name = arg, value;
    const size_t eq = arg.find('=');
    const bool has_value = eq != absl::string_view::npos;
    if (has_value) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    Entry* e = Find(name);
    std::string bool_value = "true";
    if (e == nullptr && !has_value && absl::StartsWith(name, "no")) {
      // --noflag, as absl accepts for a bool.
      Entry* b = Find(name.substr(2));
      if (b != nullptr && b->is_bool) {
        e = b;
        bool_value = "false";
      }
    }
    if (e == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!has_value) {
      if (e->is_bool) {
        value = bool_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value (--", name, "=<value>)"));
      }
    }
    std::string error;
    if (!e->parse(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name, "=", value, " is not a valid value: ", error));
    }
    e->specified = true;
  }
  return positional;
}

std::string FlagTable::Usage() const {
  std::string out = usage_;
  if (!out.empty() && out.back() != '\n') out += '\n';
  absl::StrAppend(&out, "\nFlags (default after '='):\n");
  for (const Entry& e : entries_) {
    std::string shown = e.default_text;
    if (e.is_string && (shown.empty() || absl::StrContains(shown, ' '))) {
      shown = absl::StrCat("\"", shown, "\"");
    }
    absl::StrAppend(&out, "  --", e.name, "=", shown, "\n",
                    Wrap(e.help, /*indent=*/6));
  }
  absl::StrAppend(&out, "  --help\n", Wrap("print this help and exit 0", 6));
  return out;
}

std::string Wrap(absl::string_view text, int indent, int width) {
  std::string out;
  for (absl::string_view paragraph : absl::StrSplit(text, '\n')) {
    std::string line(indent, ' ');
    bool empty = true;
    for (absl::string_view word :
         absl::StrSplit(paragraph, ' ', absl::SkipEmpty())) {
      if (!empty && static_cast<int>(line.size() + 1 + word.size()) > width) {
        absl::StrAppend(&out, line, "\n");
        line.assign(indent, ' ');
        empty = true;
      }
      if (!empty) line += ' ';
      line.append(word.data(), word.size());
      empty = false;
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace tokenlease::cli
