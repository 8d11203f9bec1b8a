#include "testing/key_dump.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "redis/reply.h"

namespace tokenlease::testing {
namespace {

// Every key matching ARGV[1]: {key, "<type>:<value>", PEXPIRETIME}.
constexpr char kDumpScript[] = R"lua(
local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  local t = redis.call('TYPE', k).ok
  local v = '?'
  if t == 'string' then v = redis.call('GET', k)
  elseif t == 'zset' then
    v = table.concat(redis.call('ZRANGE', k, 0, -1, 'WITHSCORES'), ' ')
  elseif t == 'list' then v = table.concat(redis.call('LRANGE', k, 0, -1), ' ')
  end
  out[#out + 1] = {k, t .. ':' .. v, redis.call('PEXPIRETIME', k)}
end
return out
)lua";

}  // namespace

std::map<std::string, KeyState> DumpKeys(SyncClient& client,
                                         const std::string& prefix) {
  const internal::RedisReply r =
      client.Eval(kDumpScript, {"0", absl::StrCat(prefix, "*")});
  std::map<std::string, KeyState> out;
  EXPECT_EQ(r.type, internal::RedisReply::Type::kArray) << r.DebugString();
  for (const internal::RedisReply& k : r.elements) {
    if (k.elements.size() != 3) {
      ADD_FAILURE() << k.DebugString();
      continue;
    }
    out[k.elements[0].str.substr(prefix.size())] = {k.elements[1].str,
                                                    k.elements[2].integer};
  }
  return out;
}

}  // namespace tokenlease::testing
