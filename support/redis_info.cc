#include "support/redis_info.h"

#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tokenlease::support {
namespace {

// `field`= of cmdstat_<command> ("calls=1,usec=2,..."); 0 if absent.
int64_t CommandStat(absl::string_view info, absl::string_view command,
                    absl::string_view field) {
  const std::string stats = InfoText(info, absl::StrCat("cmdstat_", command));
  const std::string key = absl::StrCat(field, "=");
  for (absl::string_view part : absl::StrSplit(stats, ',')) {
    int64_t v = 0;
    if (absl::ConsumePrefix(&part, key) && absl::SimpleAtoi(part, &v)) {
      return v;
    }
  }
  return 0;
}

bool AllDigits(absl::string_view s) {
  return s.find_first_not_of("0123456789") == absl::string_view::npos;
}

}  // namespace

std::string InfoText(absl::string_view info, absl::string_view name) {
  const std::string key = absl::StrCat(name, ":");
  for (absl::string_view l : absl::StrSplit(info, "\r\n")) {
    if (absl::ConsumePrefix(&l, key)) return std::string(l);
  }
  return "";
}

std::string ServerVersion(absl::string_view info) {
  const bool valkey = InfoText(info, "server_name") == "valkey";
  std::string version =
      InfoText(info, valkey ? "valkey_version" : "redis_version");
  if (version.empty()) version = "?";
  return absl::StrCat(valkey ? "valkey-server " : "redis-server ", version);
}

int64_t InfoField(absl::string_view info, absl::string_view name) {
  int64_t v = 0;
  return absl::SimpleAtoi(InfoText(info, name), &v) ? v : -1;
}

int64_t CommandCalls(absl::string_view info, absl::string_view command) {
  return CommandStat(info, command, "calls");
}

int64_t CommandUsec(absl::string_view info, absl::string_view command) {
  return CommandStat(info, command, "usec");
}

int64_t ScriptCalls(absl::string_view info) {
  return CommandCalls(info, "evalsha") + CommandCalls(info, "eval");
}

int64_t ScriptUsec(absl::string_view info) {
  return CommandUsec(info, "evalsha") + CommandUsec(info, "eval");
}

int64_t ServerCpuUsec(absl::string_view info) {
  int64_t total = 0;
  for (absl::string_view name : {"used_cpu_user", "used_cpu_sys"}) {
    // "0.515652": whole seconds and up to 6 decimals, no sign.
    const std::string text = InfoText(info, name);
    const std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(text, absl::MaxSplits('.', 1));
    const std::string fraction =
        absl::StrCat(parts.second, std::string(6, '0')).substr(0, 6);
    int64_t sec = 0, usec = 0;
    if (parts.first.empty() || !AllDigits(parts.first) ||
        parts.second.size() > 6 || !AllDigits(parts.second) ||
        !absl::SimpleAtoi(parts.first, &sec) ||
        !absl::SimpleAtoi(fraction, &usec)) {
      return -1;
    }
    total += sec * 1000000 + usec;
  }
  return total;
}

}  // namespace tokenlease::support
