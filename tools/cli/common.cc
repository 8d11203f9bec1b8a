#include "cli/common.h"

#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
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

std::string InFlagTerms(absl::string_view message) {
  return absl::StrReplaceAll(
      message,
      {// StrReplaceAll takes the earliest match, and the longest there.
       {"RedisOptions::tls.cert_file and key_file",
        "--tls_cert_file and --tls_key_file"},
       {"RedisOptions.tls: cert_file and key_file",
        "--tls_cert_file and --tls_key_file"},
       {"set ca_file or ca_dir", "set --tls_ca_file or --tls_ca_dir"},
       {"RedisOptions::tls.", "--tls_"},
       {"RedisOptions.tls.", "--tls_"},
       {"RedisOptions.tls:", "TLS:"},
       {"RedisOptions.tls is set but RedisOptions.url",
        "--tls_* flags are given but the URL"}});
}

void WarnIfInsecure(std::ostream& err, absl::string_view command,
                    bool insecure) {
  if (!insecure) return;
  err << "tokenlease " << command
      << ": warning: --tls_insecure: the server's certificate is not "
         "verified; anyone on the path can pose as the server\n";
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
