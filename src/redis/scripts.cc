#include "redis/scripts.h"

#include "base/absl_view.h"
#include "tokenlease_lua/scripts.h"

namespace tokenlease::internal {

// Constant-initialized (the views are constexpr), so usable from any
// static initializer.
constinit const LuaScript kAcquireScript{AbslView(lua::kAcquireSha1),
                                         AbslView(lua::kAcquireScript)};
constinit const LuaScript kReleaseScript{AbslView(lua::kReleaseSha1),
                                         AbslView(lua::kReleaseScript)};
constinit const LuaScript kBatchScript{AbslView(lua::kBatchSha1),
                                       AbslView(lua::kBatchScript)};
constinit const LuaScript kAnnounceScript{AbslView(lua::kAnnounceSha1),
                                          AbslView(lua::kAnnounceScript)};
constinit const LuaScript kSinceScript{AbslView(lua::kSinceSha1),
                                       AbslView(lua::kSinceScript)};

}  // namespace tokenlease::internal
