// Redis Cluster's routing facts, as pure functions the client thread uses:
// the slot map (CLUSTER SLOTS) and the redirects (MOVED, ASK) of error
// replies. Tested without servers (tests/redis/cluster_map_test.cc).
#ifndef TOKENLEASE_SRC_REDIS_CLUSTER_MAP_H_
#define TOKENLEASE_SRC_REDIS_CLUSTER_MAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "redis/reply.h"

namespace tokenlease::internal {

inline constexpr int kClusterSlots = 16384;

// Slots [first, last] served by the primary at host:port.
struct SlotRange {
  int first = 0;
  int last = 0;
  std::string host;  // numeric, as the cluster announces it
  int port = 0;
};

// The primaries of a CLUSTER SLOTS reply. A primary announced with an empty
// host ("" or "?": the node does not know its own address) is `asked_host`,
// the node that answered. InvalidArgument naming what is malformed (a
// reply that is no slot map, a slot out of range, a host name instead of
// an address: routing never resolves names on the client thread).
absl::StatusOr<std::vector<SlotRange>> ParseClusterSlots(
    const RedisReply& reply, absl::string_view asked_host);

// A redirect: "MOVED <slot> <host>:<port>" (the slot lives there now) or
// "ASK <slot> <host>:<port>" (this one command, after ASKING, goes there).
struct Redirect {
  enum class Kind : uint8_t { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  int slot = 0;
  std::string host;  // `current_host` when the reply leaves it empty
  int port = 0;
};

// The redirect an error reply's text carries, or nullopt if it is none.
std::optional<Redirect> ParseRedirect(absl::string_view error,
                                      absl::string_view current_host);

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_CLUSTER_MAP_H_
