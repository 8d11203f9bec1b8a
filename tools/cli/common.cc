#include "cli/common.h"

#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "demo/flags.h"  // kRedisUrlEnv: one variable for every command
#include "redis/endpoint.h"

namespace tokenlease::cli {

int UsageError(std::ostream& err, absl::string_view command,
               absl::string_view message) {
  err << "tokenlease " << command << ": " << message << "\n(see `tokenlease "
      << command << " --help`)\n";
  return kExitUsage;
}

std::string ResolveRedisUrl(absl::string_view flag) {
  if (!flag.empty()) return std::string(flag);
  if (const char* env = std::getenv(tools::kRedisUrlEnv);
      env != nullptr && *env != '\0') {
    return env;
  }
  return kDefaultRedisUrl;
}

std::string Redacted(absl::string_view url) {
  return internal::RedactRedisUrl(url);
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;  // UTF-8 passes through; JSON allows it raw
        }
    }
  }
  out += '"';
  return out;
}

std::string FormatTimeUs(int64_t us) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(us),
                          absl::UTCTimeZone());
}

std::string FormatUs(int64_t us) {
  return absl::FormatDuration(absl::Microseconds(us));
}

}  // namespace tokenlease::cli
