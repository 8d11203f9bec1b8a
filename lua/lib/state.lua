-- lib/state.lua: a band's state in Redis, as acquire.lua, release.lua and
-- batch.lua read, bring up to date and write it, in parts (`--@include
-- lib/state.lua <part>`). They use the script's locals rcall, rpcall,
-- smatch, sformat, tonumber, dceil, dfloor, muldiv, now, MARGIN_MS and ERR,
-- and the band b.

--@part read
-- The string state "n1 n2 [n3]" of `key` (band b's, or a log's meta key) in
-- x, y, z (nil if the key does not exist); str is the value. A value that
-- is not a state a tokenlease band of b's kind stores is the error reply,
-- naming the key, before anything is written: decimal integers below 2^53
-- in magnitude, two of them (a sliding counter: three; GCRA: two or three),
-- and in range for the kind (a count or a total is not negative, a GCRA
-- fraction f is in [0, l)). Never read as no state: a corrupt bucket must
-- not become a full one. A key of another type returns the WRONGTYPE error
-- reply (from the script, or from the function this is in: its caller
-- returns the reply).
local x, y, z
local str = rpcall('GET', key)
if str then
  if str.err then  -- a string has no field err; an error reply does
    local want = 'string'
    --@include lib/state.lua wrongtype
  end
  x, y, z = smatch(str, '^(-?%d+) (-?%d+) ?(-?%d*)$')
  if x then
    x, y = tonumber(x), tonumber(y)
    if z == '' then z = nil else z = tonumber(z) or false end
  end
  local kind = b.kind
  if not (x and y and z ~= false and
      x > -9007199254740992 and x < 9007199254740992 and
      y > -9007199254740992 and y < 9007199254740992 and
      (z == nil or z > -9007199254740992 and z < 9007199254740992) and
      (kind == 'step' and z == nil or
       kind == 'gcra' and y >= 0 and (z == nil or z >= 1 and y < z) or
       kind == 'fixed' and y >= 0 and z == nil or
       kind == 'counter' and y >= 0 and z and z >= 0 or
       kind == 'log' and x >= 0 and z == nil)) then
    return {err = ERR .. 'key \'' .. key .. '\' holds \'' .. string.sub(str, 1, 64) ..
            '\', not a tokenlease state; delete or rename it'}
  end
end

--@part wrongtype
-- `key` holds another type than the `want` ('string' or 'zset') tokenlease
-- keeps there: the error reply (made only now, TYPE call included); nothing
-- has been written.
return {err = 'WRONGTYPE tokenlease: key \'' .. key .. '\' holds a ' ..
        rcall('TYPE', key).ok .. ', not the ' .. want ..
        ' tokenlease keeps there; delete or rename it'}

--@part gcra
-- A TAT t + f / l us (t >= now) stored with another l (an older spec of
-- the limit): f in units of 1/b.l us, rounded up.
f = f or 0; l = l or b.l
if l ~= b.l then
  local r
  f, r = muldiv(f, b.l, l)
  if r > 0 then f = f + 1 end
  if f >= b.l then t = t + 1; f = 0 end
end

--@part step
-- A stepwise bucket's tokens and anchor refilled to now by whole steps.
local elapsed = now - anchor
if elapsed >= b.period then  -- a clock step back refills nothing
  local steps = dfloor(elapsed, b.period)
  anchor = anchor + steps * b.period
  if tokens >= b.burst or steps >= dceil(b.burst - tokens, b.limit) then
    tokens = b.burst
  else
    tokens = tokens + steps * b.limit
  end
end

--@part write
-- SET b.key "f1 f2 [f3]" with a TTL of ceil(reset / 1000) ms + MARGIN_MS,
-- or DEL it when reset <= 0 (a fresh state is not stored). '%d' is exact
-- (64-bit lua_Integer) and much cheaper than '%.0f', which is kept for
-- values beyond 2^53 (only from nonsense input). Redis formats a number
-- argument with %.17g: exact, no exponent below 1e17; beyond (only from
-- nonsense input), '%.0f' as before.
if reset <= 0 then
  rcall('DEL', b.key)
else
  local str
  if f1 < 9007199254740992 and f1 > -9007199254740992 and
     f2 < 9007199254740992 and f2 > -9007199254740992 then
    if f3 == nil then
      str = sformat('%d %d', f1, f2)
    elseif f3 < 9007199254740992 and f3 > -9007199254740992 then
      str = sformat('%d %d %d', f1, f2, f3)
    end
  end
  if str == nil then
    str = f3 == nil and sformat('%.0f %.0f', f1, f2) or
          sformat('%.0f %.0f %.0f', f1, f2, f3)
  end
  local ms = dceil(reset, 1000) + MARGIN_MS
  rcall('SET', b.key, str, 'PX', ms < 1e17 and ms or sformat('%.0f', ms))
end
