#include "redis/cluster_map.h"

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tokenlease::internal {
namespace {

bool IsNumericAddress(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

absl::Status Malformed(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("CLUSTER SLOTS reply: ", why));
}

}  // namespace

absl::StatusOr<std::vector<SlotRange>> ParseClusterSlots(
    const RedisReply& reply, absl::string_view asked_host) {
  if (reply.type != RedisReply::Type::kArray) {
    return Malformed(absl::StrCat("not an array: ", reply.DebugString()));
  }
  std::vector<SlotRange> ranges;
  for (const RedisReply& e : reply.elements) {
    // [first, last, [host, port, id, ...], replicas...]
    if (e.type != RedisReply::Type::kArray || e.elements.size() < 3 ||
        e.elements[0].type != RedisReply::Type::kInteger ||
        e.elements[1].type != RedisReply::Type::kInteger ||
        e.elements[2].type != RedisReply::Type::kArray ||
        e.elements[2].elements.size() < 2) {
      return Malformed(absl::StrCat("unexpected entry ", e.DebugString()));
    }
    SlotRange r;
    const int64_t first = e.elements[0].integer;
    const int64_t last = e.elements[1].integer;
    if (first < 0 || last < first || last >= kClusterSlots) {
      return Malformed(
          absl::StrCat("slot range ", first, "-", last, " is outside 0-16383"));
    }
    r.first = static_cast<int>(first);
    r.last = static_cast<int>(last);
    const RedisReply& node = e.elements[2];
    const RedisReply& host = node.elements[0];
    const RedisReply& port = node.elements[1];
    if (host.type != RedisReply::Type::kString ||
        port.type != RedisReply::Type::kInteger || port.integer < 1 ||
        port.integer > 65535) {
      return Malformed(absl::StrCat("unexpected node ", node.DebugString()));
    }
    r.host = host.str.empty() || host.str == "?" ? std::string(asked_host)
                                                 : host.str;
    r.port = static_cast<int>(port.integer);
    if (!IsNumericAddress(r.host)) {
      return Malformed(
          absl::StrCat("node \"", r.host,
                       "\" is a host name; announce addresses "
                       "(cluster-preferred-endpoint-type ip, the default)"));
    }
    ranges.push_back(std::move(r));
  }
  return ranges;
}

std::optional<Redirect> ParseRedirect(absl::string_view error,
                                      absl::string_view current_host) {
  Redirect r;
  if (absl::StartsWith(error, "MOVED ")) {
    r.kind = Redirect::Kind::kMoved;
  } else if (absl::StartsWith(error, "ASK ")) {
    r.kind = Redirect::Kind::kAsk;
  } else {
    return std::nullopt;
  }
  std::vector<absl::string_view> parts =
      absl::StrSplit(error, ' ', absl::SkipEmpty());
  if (parts.size() != 3) return std::nullopt;
  if (!absl::SimpleAtoi(parts[1], &r.slot) || r.slot < 0 ||
      r.slot >= kClusterSlots) {
    return std::nullopt;
  }
  // "host:port", "[v6]:port" is not sent (Redis writes v6 bare): the port
  // follows the last ':'.
  const size_t colon = parts[2].rfind(':');
  if (colon == absl::string_view::npos) return std::nullopt;
  if (!absl::SimpleAtoi(parts[2].substr(colon + 1), &r.port) || r.port < 1 ||
      r.port > 65535) {
    return std::nullopt;
  }
  r.host = std::string(parts[2].substr(0, colon));
  if (r.host.empty()) r.host = std::string(current_host);
  return r;
}

}  // namespace tokenlease::internal
