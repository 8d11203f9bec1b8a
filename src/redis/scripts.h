// The Lua scripts (lua/), embedded at build time: each known by the SHA1 of
// its exact bytes (EVALSHA) with its body (EVAL after NOSCRIPT).
#ifndef TOKENLEASE_SRC_REDIS_SCRIPTS_H_
#define TOKENLEASE_SRC_REDIS_SCRIPTS_H_

#include "redis/redis_client.h"

namespace tokenlease::internal {

// acquire.lua: check-and-charge, leases, charges (docs/lua-protocol.md).
extern const LuaScript kAcquireScript;
// release.lua: gives back unused tokens of one grant, at most once.
extern const LuaScript kReleaseScript;
// batch.lua: many keys' acquires, charges and releases for one limit.
extern const LuaScript kBatchScript;
// announce.lua: instance discovery (an instance alive for a TTL, or leaving;
// replies the group's live instances).
extern const LuaScript kAnnounceScript;
// since.lua: when this Redis's tokenlease state began (the data-loss
// marker; created with the server's time if absent).
extern const LuaScript kSinceScript;
// The marker key since.lua keeps.
inline constexpr char kSinceKey[] = "tokenlease:since";

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_SCRIPTS_H_
