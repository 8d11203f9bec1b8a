#include "redis/endpoint.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tokenlease::internal {
namespace {

constexpr absl::string_view kForms =
    "accepted forms: redis://[[user]:password@]host[:port][/db] and "
    "unix:///path/to/socket[?db=N]";

// Never echoes the credentials: a message may end up in a log.
absl::Status Bad(absl::string_view url, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "redis URL \"", RedactRedisUrl(url), "\": ", why, "; ", kForms));
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool PercentDecode(absl::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // "%" needs two hex digits
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// "user:password" or ":password" or "password" (redis-cli accepts a bare
// password as the default user's).
absl::Status ParseUserInfo(absl::string_view url, absl::string_view info,
                           RedisEndpoint* ep) {
  absl::string_view user, password;
  const size_t colon = info.find(':');
  if (colon == absl::string_view::npos) {
    password = info;
  } else {
    user = info.substr(0, colon);
    password = info.substr(colon + 1);
  }
  if (!PercentDecode(user, &ep->user) ||
      !PercentDecode(password, &ep->password)) {
    return Bad(url, "bad percent-encoding in the user or password");
  }
  if (ep->password.empty() && !ep->user.empty()) {
    return Bad(url, "a user needs a password (user:password@)");
  }
  return absl::OkStatus();
}

absl::Status ParseDb(absl::string_view url, absl::string_view text,
                     RedisEndpoint* ep) {
  if (text.empty()) return absl::OkStatus();
  if (!absl::SimpleAtoi(text, &ep->db) || ep->db < 0 || ep->db > 1 << 20) {
    return Bad(url, absl::StrCat("database \"", text,
                                 "\" is not a number between 0 and 1048576"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RedactRedisUrl(absl::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == absl::string_view::npos) {
    // No scheme: no authority to find; a '@' may still mark credentials.
    const size_t at = url.rfind('@');
    return at == absl::string_view::npos ? std::string(url)
                                         : absl::StrCat("***", url.substr(at));
  }
  const size_t start = scheme_end + 3;
  absl::string_view rest = url.substr(start);
  // Everything before the last '@' after the scheme: more than the userinfo
  // when a '@' follows the host (harmless), and all of it when a password
  // holds a '/' that a parser would take for the start of the path.
  const size_t at = rest.rfind('@');
  if (at == absl::string_view::npos) return std::string(url);
  return absl::StrCat(url.substr(0, start), "***", rest.substr(at));
}

std::string RedisEndpoint::Describe() const {
  if (!socket_path.empty()) {
    return db == 0 ? absl::StrCat("unix://", socket_path)
                   : absl::StrCat("unix://", socket_path, "?db=", db);
  }
  const bool v6 = absl::StrContains(host, ':');
  return absl::StrCat("redis://", v6 ? "[" : "", host, v6 ? "]" : "", ":", port,
                      "/", db);
}

absl::StatusOr<RedisEndpoint> ParseRedisUrl(absl::string_view url) {
  RedisEndpoint ep;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "unix://")) {
    const size_t at = rest.rfind('@');
    if (at != absl::string_view::npos) {
      absl::Status s = ParseUserInfo(url, rest.substr(0, at), &ep);
      if (!s.ok()) return s;
      rest = rest.substr(at + 1);
    }
    const size_t q = rest.find('?');
    if (q != absl::string_view::npos) {
      absl::string_view query = rest.substr(q + 1);
      rest = rest.substr(0, q);
      if (!absl::ConsumePrefix(&query, "db=")) {
        return Bad(url, "the only query parameter is db=N");
      }
      absl::Status s = ParseDb(url, query, &ep);
      if (!s.ok()) return s;
    }
    if (rest.empty() || rest[0] != '/') {
      return Bad(url, "a unix socket path must be absolute");
    }
    ep.socket_path = std::string(rest);
    return ep;
  }
  if (!absl::ConsumePrefix(&rest, "redis://")) {
    return Bad(url, "unknown scheme (rediss:// and TLS are not supported)");
  }
  const size_t slash = rest.find('/');
  if (slash != absl::string_view::npos &&
      rest.find('@', slash) != absl::string_view::npos) {
    // Most likely a password with a '/': say so without echoing any part.
    return Bad(url,
               "'@' after the host; a '/' in the user or password must be "
               "percent-encoded as %2F");
  }
  absl::string_view authority = rest.substr(0, slash);
  if (slash != absl::string_view::npos) {
    absl::Status s = ParseDb(url, rest.substr(slash + 1), &ep);
    if (!s.ok()) return s;
  }
  const size_t at = authority.rfind('@');
  if (at != absl::string_view::npos) {
    absl::Status s = ParseUserInfo(url, authority.substr(0, at), &ep);
    if (!s.ok()) return s;
    authority = authority.substr(at + 1);
  }
  absl::string_view port_text;
  if (absl::ConsumePrefix(&authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return Bad(url, "unterminated IPv6 literal");
    }
    ep.host = std::string(authority.substr(0, close));
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return Bad(url, "unexpected text after the IPv6 literal");
    }
    port_text = after;
  } else {
    const size_t colon = authority.find(':');
    ep.host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) {
      port_text = authority.substr(colon + 1);
    }
  }
  if (ep.host.empty()) return Bad(url, "the host is empty");
  for (char c : ep.host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_' &&
        c != ':') {
      return Bad(url, absl::StrCat("the host \"", ep.host,
                                   "\" has a character a host name cannot"));
    }
  }
  if (!port_text.empty() &&
      port_text.find_first_not_of("0123456789") != absl::string_view::npos) {
    // Not echoed: "redis://user:password" (no "@host") puts a password
    // here.
    const size_t offset = static_cast<size_t>(port_text.data() - url.data());
    return Bad(absl::StrCat(url.substr(0, offset), "***",
                            url.substr(offset + port_text.size())),
               "the port is not a number (a password needs \"@host\" after "
               "it)");
  }
  if (!port_text.empty() && (!absl::SimpleAtoi(port_text, &ep.port) ||
                             ep.port < 1 || ep.port > 65535)) {
    return Bad(url, absl::StrCat("port \"", port_text,
                                 "\" is not a number between 1 and 65535"));
  }
  return ep;
}

absl::StatusOr<std::string> ResolveHost(const RedisEndpoint& endpoint) {
  if (!endpoint.socket_path.empty()) return endpoint.socket_path;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(endpoint.host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot resolve redis host \"",
                                               endpoint.host,
                                               "\": ", gai_strerror(rc)));
  }
  char buf[NI_MAXHOST];
  const int nrc = getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof(buf),
                              nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(res);
  if (nrc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot render the address of \"", endpoint.host,
                     "\": ", gai_strerror(nrc)));
  }
  return std::string(buf);
}

}  // namespace tokenlease::internal
