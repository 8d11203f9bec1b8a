-- tokenlease since, protocol 1. docs/lua-protocol.md is the contract.
-- When this Redis's tokenlease state began: the value of the marker key,
-- created with the server's time if it is absent (a new Redis, or one that
-- lost its data: a restart without persistence, FLUSHALL, a failover to an
-- empty replica). tokenlease sends it on every connection before any other
-- call, and passes the time as acquire.lua's and batch.lua's
-- empty_since_us when a limit starts empty after a data loss.
--
-- KEYS: 1 the marker key ("tokenlease:since").
-- ARGV: 1 "1" (protocol).
-- Reply: the time in µs since the Unix epoch (Redis's clock).
--
-- The marker is a string of decimal digits and has no TTL. A value that
-- is not one is an error naming the key (nothing written).

local ERR = 'ERR tokenlease since: '
if #KEYS ~= 1 or #ARGV ~= 1 or ARGV[1] ~= '1' then
  return {err = ERR .. 'expected 1 key and the argument 1 (protocol), got ' ..
          #KEYS .. ' keys and ' .. #ARGV .. ' arguments'}
end
local key = KEYS[1]
local v = redis.pcall('GET', key)
if type(v) == 'table' and v.err then
  return {err = 'WRONGTYPE tokenlease: key \'' .. key .. '\' holds a ' ..
          redis.call('TYPE', key).ok ..
          ', not the string tokenlease keeps there; delete or rename it'}
end
if v then
  if not string.match(v, '^%d+$') or #v > 16 then
    return {err = ERR .. 'key \'' .. key .. '\' holds \'' ..
            string.sub(v, 1, 64) .. '\', not a time in µs; delete it'}
  end
  return tonumber(v)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('SET', key, string.format('%d', now))
return now
