-- tokenlease announce, protocol 1. docs/lua-protocol.md is the contract.
-- Instance discovery: an instance of a group says it is alive for ttl_ms
-- more (or that it leaves), and learns how many instances of the group are
-- alive. FailureMode::kFailLocal divides a limit by that count.
--
-- KEYS: 1 the group's key "{<prefix><group>}:instances", a sorted set:
--       member = instance id, score = when its announcement expires (µs,
--       the server's time unless now_us is given).
-- ARGV: 1 "1" (protocol), 2 now_us (-1 = TIME), 3 instance id (1 to 128
--       bytes), 4 ttl_ms: [1, 600000] to announce, 0 to leave.
-- Reply: the instances alive after the call (this one included when it
--        announced).
--
-- Expired members are removed first, and so are members whose expiry lies
-- further ahead than any announcement can reach (not written by this
-- script: they must not count forever). The key itself expires with its
-- last live member. Assembled at build time like the other scripts.

local ERR = 'ERR tokenlease announce: '  -- prefix of the argument errors
--@include lib/args.lua head

if #ARGV ~= 4 then
  return {err = ERR .. 'expected 4 arguments, got ' .. #ARGV}
end
--@include lib/args.lua arguments
if #KEYS ~= 1 then
  return {err = ERR .. 'expected 1 key, got ' .. #KEYS}
end
local key = KEYS[1]
local id = A[3]
if id == nil or #id < 1 or #id > 128 then
  return {err = ERR .. 'the instance id is ' .. tostring(id and #id) ..
          ' bytes; it must be 1 to 128'}
end
v = A[4]
local ttl_ms = v == '0' and 0 or int_arg(v, 1, 600000)
if not ttl_ms then return {err = ERR .. 'ttl_ms is ' .. tostring(v) ..
      '; it must be 0 (leave) or an integer in [1, 600000]'} end

--@include lib/args.lua now

-- The first call on the key is also its type check: nothing written yet.
local pruned = rpcall('ZREMRANGEBYSCORE', key, '-inf', now)
if type(pruned) == 'table' and pruned.err then
  local want = 'zset'
  --@include lib/state.lua wrongtype
end
-- 600 s is the longest announcement: anything beyond is foreign.
rcall('ZREMRANGEBYSCORE', key, '(' .. (now + 600000000), '+inf')
if ttl_ms == 0 then
  rcall('ZREM', key, id)
else
  rcall('ZADD', key, now + ttl_ms * 1000, id)
end
local last = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
if last[2] then
  -- The key lives as long as its longest announcement, plus the scripts'
  -- TTL margin (longer with an explicit now, which may lag the server's
  -- clock that expires keys).
  local ms = math.ceil((tonumber(last[2]) - now) / 1000) + MARGIN_MS
  rcall('PEXPIRE', key, ms)
end
return rcall('ZCARD', key)
