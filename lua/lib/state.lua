-- lib/state.lua: a band's state in Redis, as acquire.lua, release.lua and
-- batch.lua read, bring up to date and write it, in parts (`--@include
-- lib/state.lua <part>`). They use the script's locals rcall, rpcall,
-- smatch, sformat, tonumber, dceil, dfloor, muldiv, now, MARGIN_MS and ERR,
-- and the band b.

--@part read
-- The string state "n1 n2 [n3] [stamp]" of `key` (band b's, or a log's
-- meta key, which has no stamp) in x, y, z (nil if the key does not
-- exist); str is the value. A value that is not a state a tokenlease band
-- of b's kind stores is the error reply, naming the key, before anything
-- is written: decimal integers below 2^53 in magnitude, two of them (a
-- sliding counter: three; GCRA: two or three), and in range for the kind
-- (a count or a total is not negative, a GCRA fraction f is in [0, l)).
-- Never read as no state: a corrupt bucket must not become a full one. A
-- key of another type returns the WRONGTYPE error reply (from the script,
-- or from the function this is in: its caller returns the reply). The
-- stamp (b.stamp of the spec that wrote it, lib/band.lua) is checked and a
-- state of another spec converted by the part restamp.
local x, y, z
local str = pre_state  -- already read (lib/args.lua head), else GET it
if str then pre_state = false else str = rpcall('GET', key) end
if str then
  if str.err then  -- a string has no field err; an error reply does
    local want = 'string'
    --@include lib/state.lua wrongtype
  end
  local body, stamp = smatch(str, '^(.-) ([gscf][%d/ar]+)$')
  if not body then body = str end
  if stamp and stamp ~= b.stamp and
     smatch(stamp, '^%a') ~= smatch(b.stamp or '', '^%a') then
    --@include lib/state.lua foreign
  end
  x, y, z = smatch(body, '^(-?%d+) (-?%d+) ?(-?%d*)$')
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
  if stamp and stamp ~= b.stamp then
    --@include lib/state.lua restamp
  end
end

--@part restamp
-- The state x, y, z of `key` was written by another spec of the same limit
-- name (its stamp: "g<p>/<l>" for a smooth token bucket or GCRA, a token
-- costing p/l us; "s<limit>/<period>/<burst>" for a stepwise bucket;
-- "f" or "c" for a fixed window or sliding counter, then
-- "<period>/<a|r><offset>"), for example during a rolling deploy that
-- changes the limit. Tokens consumed stay consumed: the state is
-- re-expressed in this call's spec (b) with the same tokens used, rounded
-- up, so that callers alternating between two specs never get more than
-- the larger one allows. A state that cannot be re-expressed (another
-- kind, a window of another length or alignment, a log's meta key) is the
-- error reply, naming the key and both stamps: fail safe and visible.
local kind, old = b.kind, smatch(stamp, '^(%a)')
local p0, l0, n0 = smatch(stamp, '^[gs](%d+)/(%d+)/?(%d*)$')
p0, l0 = tonumber(p0), tonumber(l0)
if kind == 'gcra' and old == 'g' and p0 and n0 == '' and p0 >= 1 and
   p0 < 2251799813685248 and (z == nil or z == l0) then
  -- TAT x + y / l0 us: a debt d0 = (x - now) * l0 + y units of 1/l0 us,
  -- d0 / p0 tokens; in this spec d1 = ceil(d0 * b.p / p0) units of 1/b.l
  -- (at most 2^51: a debt that far denies everything, as a far TAT does).
  local d1 = 0
  if x >= now then
    local tn = x - now
    if tn * l0 >= 2251799813685248 or
       (tn * l0 + y) / p0 * b.p >= 1125899906842624 then
      d1 = 2251799813685248
    else
      local r
      d1, r = muldiv(tn * l0 + y, b.p, p0)
      if r > 0 then d1 = d1 + 1 end
    end
  end
  local whole, frac = muldiv(d1, 1, b.l)
  x, y, z = now + whole, frac, b.l  -- d1 = 0: a full bucket
elseif kind == 'step' and old == 's' and p0 and n0 ~= '' then
  -- burst0 - tokens consumed: tokens = b.burst - (burst0 - tokens), no
  -- lower than a debt that refills within 2^50 us (exact arithmetic).
  x = x + b.burst - tonumber(n0)
  local floor = b.burst - dfloor(1125899906842624, b.period) * b.limit
  if x < floor then x = floor end
else
  old = false
end
if not old then
  --@include lib/state.lua foreign
end

--@part foreign
-- The error reply of a state another spec wrote that this call's band b
-- cannot take over (nothing has been written).
return {err = ERR .. 'key \'' .. key .. '\' holds the state of another ' ..
        'spec (\'' .. stamp .. '\'; this call\'s is \'' ..
        (b.stamp or 'none') .. '\'), which this one cannot take over: ' ..
        'give each spec its own limit name, or delete the key'}

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
-- SET b.key "f1 f2 [f3] stamp" with a TTL of ceil(reset / 1000) ms +
-- MARGIN_MS, or DEL it when reset <= 0 (a fresh state is not stored). '%d'
-- is exact (64-bit lua_Integer) and much cheaper than '%.0f', which is kept
-- for values beyond 2^53 (only from nonsense input); one format call makes
-- the whole value. Redis formats a number argument with %.17g: exact, no
-- exponent below 1e17; beyond (only from nonsense input), '%.0f' as before.
if reset <= 0 then
  rcall('DEL', b.key)
else
  local str
  if f1 < 9007199254740992 and f1 > -9007199254740992 and
     f2 < 9007199254740992 and f2 > -9007199254740992 then
    if f3 == nil then
      str = sformat('%d %d %s', f1, f2, b.stamp)
    elseif f3 < 9007199254740992 and f3 > -9007199254740992 then
      str = sformat('%d %d %d %s', f1, f2, f3, b.stamp)
    end
  end
  if str == nil then
    str = f3 == nil and sformat('%.0f %.0f %s', f1, f2, b.stamp) or
          sformat('%.0f %.0f %.0f %s', f1, f2, f3, b.stamp)
  end
  local ms = dceil(reset, 1000) + MARGIN_MS
  rcall('SET', b.key, str, 'PX', ms < 1e17 and ms or sformat('%.0f', ms))
end
