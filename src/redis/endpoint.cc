#include "redis/endpoint.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tokenlease::internal {
namespace {

constexpr absl::string_view kForms =
    "accepted forms: redis[s]://[[user]:password@]host[:port][/db], "
    "unix:///path/to/socket[?db=N], "
    "redis[s]+cluster://[[user]:password@]host:port[,host:port...] and "
    "redis[s]+sentinel://[[user]:password@]host:port[,host:port...]/name[/db] "
    "(rediss: TLS)";

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

// "host[:port]" or "[v6]:port" into `hp` (whose port is the default).
absl::Status ParseHostPort(absl::string_view url, absl::string_view authority,
                           HostPort* hp) {
  absl::string_view port_text;
  if (absl::ConsumePrefix(&authority, "[")) {
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return Bad(url, "unterminated IPv6 literal");
    }
    hp->host = std::string(authority.substr(0, close));
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return Bad(url, "unexpected text after the IPv6 literal");
    }
    port_text = after;
  } else {
    const size_t colon = authority.find(':');
    hp->host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) {
      port_text = authority.substr(colon + 1);
    }
  }
  if (hp->host.empty()) return Bad(url, "the host is empty");
  for (char c : hp->host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_' &&
        c != ':') {
      return Bad(url, absl::StrCat("the host \"", hp->host,
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
  if (!port_text.empty() && (!absl::SimpleAtoi(port_text, &hp->port) ||
                             hp->port < 1 || hp->port > 65535)) {
    return Bad(url, absl::StrCat("port \"", port_text,
                                 "\" is not a number between 1 and 65535"));
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
  auto host_port = [](const std::string& h, int p) {
    const bool v6 = absl::StrContains(h, ':');
    return absl::StrCat(v6 ? "[" : "", h, v6 ? "]" : "", ":", p);
  };
  const char* redis = tls ? "rediss" : "redis";
  if (topology == Topology::kSingle) {
    return absl::StrCat(redis, "://", host_port(host, port), "/", db);
  }
  std::string hosts;
  for (const HostPort& s : seeds) {
    absl::StrAppend(&hosts, hosts.empty() ? "" : ",",
                    host_port(s.host, s.port));
  }
  if (topology == Topology::kCluster) {
    return absl::StrCat(redis, "+cluster://", hosts);
  }
  return absl::StrCat(redis, "+sentinel://", hosts, "/", service, "/", db);
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
  using Topology = RedisEndpoint::Topology;
  int default_port = 6379;
  // "rediss" is "redis" over TLS, in every form but unix://.
  if (absl::ConsumePrefix(&rest, "rediss")) {
    ep.tls = true;
  } else if (!absl::ConsumePrefix(&rest, "redis")) {
    return Bad(url, "unknown scheme");
  }
  if (absl::ConsumePrefix(&rest, "+cluster://")) {
    ep.topology = Topology::kCluster;
  } else if (absl::ConsumePrefix(&rest, "+sentinel://")) {
    ep.topology = Topology::kSentinel;
    default_port = 26379;
  } else if (!absl::ConsumePrefix(&rest, "://")) {
    return Bad(url, "unknown scheme");
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
  absl::string_view path = slash == absl::string_view::npos
                               ? absl::string_view()
                               : rest.substr(slash + 1);
  if (ep.topology == Topology::kSentinel) {
    // "/name[/db]": the primary's name is required.
    const size_t name_end = path.find('/');
    ep.service = std::string(path.substr(0, name_end));
    path = name_end == absl::string_view::npos ? absl::string_view()
                                               : path.substr(name_end + 1);
    if (ep.service.empty()) {
      return Bad(url,
                 "a sentinel URL names the primary after the hosts "
                 "(redis+sentinel://host:26379/mymaster)");
    }
  }
  if (absl::Status s = ParseDb(url, path, &ep); !s.ok()) return s;
  if (ep.topology == Topology::kCluster && ep.db != 0) {
    return Bad(url, "a Redis Cluster has database 0 only");
  }
  const size_t at = authority.rfind('@');
  if (at != absl::string_view::npos) {
    absl::Status s = ParseUserInfo(url, authority.substr(0, at), &ep);
    if (!s.ok()) return s;
    authority = authority.substr(at + 1);
  }
  for (absl::string_view one : absl::StrSplit(authority, ',')) {
    HostPort hp;
    hp.port = default_port;
    if (absl::Status s = ParseHostPort(url, one, &hp); !s.ok()) return s;
    ep.seeds.push_back(std::move(hp));
  }
  if (ep.topology == Topology::kSingle) {
    if (ep.seeds.size() != 1) {
      return Bad(url,
                 "redis:// takes one host (several: redis+cluster:// or "
                 "redis+sentinel://)");
    }
    ep.host = ep.seeds[0].host;
    ep.port = ep.seeds[0].port;
    ep.seeds.clear();
  } else {
    ep.host = ep.seeds[0].host;
    ep.port = ep.seeds[0].port;
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

namespace tokenlease::internal {

absl::Status ResolveHosts(RedisEndpoint* endpoint) {
  if (endpoint->topology == RedisEndpoint::Topology::kSingle) {
    absl::StatusOr<std::string> a = ResolveHost(*endpoint);
    if (!a.ok()) return a.status();
    endpoint->address = *std::move(a);
    return absl::OkStatus();
  }
  for (HostPort& s : endpoint->seeds) {
    RedisEndpoint one;
    one.host = s.host;
    absl::StatusOr<std::string> a = ResolveHost(one);
    if (!a.ok()) return a.status();
    s.address = *std::move(a);
  }
  endpoint->address = endpoint->seeds[0].address;
  return absl::OkStatus();
}

}  // namespace tokenlease::internal
