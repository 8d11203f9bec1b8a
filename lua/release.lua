-- tokenlease release, protocol 1. docs/lua-protocol.md is the contract.
-- Gives back unused tokens of one grant, at most once per lease id.
--
-- KEYS: the acquire keys of the limit (same order), then the lease's dedup
--       key "{tag}:r:<lease_id>".
-- ARGV: 1 "1" (protocol), 2 now_us (-1 = TIME), 3 amount, 4 granted_at_us
--       (the now_us of the acquire reply that granted them),
--       5 max_borrow_us, 6 band count n, then 9 fields per band as acquire.
-- Reply: tokens returned (the smallest credit over the bands; 0 if the lease
--        id was already applied or the grant is past its release horizon).
--
-- PERFORMANCE NOTES: see acquire.lua (few closures and tables, constants
-- as literals: 2^51 = 2251799813685248, 2^52 = 4503599627370496; `%`
-- divisions below 2^52; '%d' formatting; numbers passed to redis.call as
-- numbers). Every state is read before the dedup key is set (so a failing
-- call marks nothing as applied), and the reads double as the type checks
-- (GET / ZRANGEBYSCORE fail on a key of another type): no TYPE calls.

local tonumber = tonumber
local rcall, rpcall = redis.call, redis.pcall
local smatch, sformat = string.match, string.format

-- floor(a * b / c) and the remainder, exact for integers 0 <= a < 2^53,
-- 0 <= b < 2^52, 1 <= c < 2^51 whose quotient is below 2^53.
local function muldiv(a, b, c)
  local p = a * b
  if p < 4503599627370496 then  -- exact product below 2^52: so is p % c
    local r = p % c
    return (p - r) / c, r
  end
  local floor = math.floor
  local bq = floor(b / c)
  local br = b - bq * c
  if br < 0 then bq = bq - 1; br = br + c elseif br >= c then bq = bq + 1; br = br - c end
  -- a * br / c by binary long multiplication: R < c keeps 2R + br < 2^53.
  local hi = 1
  while hi * 2 <= a do hi = hi * 2 end
  local x, q, r = a, 0, 0
  while hi >= 1 do
    q = q * 2; r = r * 2
    if r >= c then r = r - c; q = q + 1 end
    if x >= hi then
      x = x - hi; r = r + br
      if r >= c then r = r - c; q = q + 1 end
    end
    hi = hi / 2
  end
  return a * bq + q, r
end
-- floor(a / c) and ceil(a / c) (a >= 0 for dceil).
local function dfloor(a, c)
  if a < 4503599627370496 then return (a - a % c) / c end
  return (muldiv(a, 1, c))
end
local function dceil(a, c)
  if a < 4503599627370496 then
    local r = a % c
    if r > 0 then return (a - r) / c + 1 end
    return (a - r) / c
  end
  local q, r = muldiv(a, 1, c)
  if r > 0 then q = q + 1 end
  return q
end

-- An integer argument in [lo, hi], or nil.
local function int_arg(v, lo, hi)
  local x
  if v == '0' then x = 0
  elseif v == '1' then x = 1
  elseif v == '-1' then x = -1
  else
    x = tonumber(v)
    if x == nil or x % 1 ~= 0 then return nil end  -- NaN, inf: x % 1 ~= 0
  end
  if x < lo or x > hi then return nil end
  return x
end
local function bad(name, v, lo, hi)  -- the error reply of a bad argument
  return {err = 'ERR tokenlease release: ' .. name .. ' is ' .. tostring(v) ..
          '; it must be an integer in [' .. sformat('%.0f', lo) .. ', ' ..
          sformat('%.0f', hi) .. ']'}
end

---------------------------------------------------------------------------
-- Arguments. "0", "1" and "-1" are taken without tonumber.

if ARGV[1] ~= '1' then
  return {err = 'ERR tokenlease release: unknown protocol version \'' ..
          tostring(ARGV[1]) .. '\'; this script speaks version 1'}
end
local A = ARGV
local v = A[2]
local explicit_now = v == '-1' and -1 or int_arg(v, -1, 4503599627370496)
if not explicit_now then return bad('now_us', v, -1, 4503599627370496) end
-- TTL margin beyond the time a state takes to become fresh. With an
-- explicit now (tests, replays) the caller's time may run slower than
-- the server's clock that expires keys, so the margin is 10 minutes.
local MARGIN_MS = explicit_now >= 0 and 600000 or 1000
v = A[3]
local amount = v == '1' and 1 or int_arg(v, 0, 1125899906842624)
if not amount then return bad('amount', v, 0, 1125899906842624) end
v = A[4]
local granted_at = int_arg(v, 0, 4503599627370496)
if not granted_at then return bad('granted_at_us', v, 0, 4503599627370496) end
v = A[5]
local max_borrow = v == '0' and 0 or int_arg(v, 0, 31622400000000)
if not max_borrow then return bad('max_borrow_us', v, 0, 31622400000000) end

-- Bands (same layout and checks as acquire.lua).
v = A[6]
local nb = v == '1' and 1 or int_arg(v, 1, 4)
if not nb then return bad('band count', v, 1, 4) end
if #A ~= 6 + 9 * nb then
  return {err = 'ERR tokenlease release: expected ' .. (6 + 9 * nb) .. ' arguments for ' ..
          nb .. ' bands, got ' .. #A}
end
local bands, k, has_log = {}, 1, false
for i = 1, nb do
  local base = 6 + 9 * (i - 1)
  local algo = A[base + 1]
  if algo ~= 'token_bucket' and algo ~= 'gcra' and algo ~= 'fixed_window' and
     algo ~= 'sliding_counter' and algo ~= 'sliding_log' then
    return {err = 'ERR tokenlease release: bands[' .. (i - 1) .. '].algorithm is \'' ..
        tostring(algo) ..
        '\'; one of token_bucket, gcra, fixed_window, sliding_counter, sliding_log'}
  end
  v = A[base + 2]
  local limit = int_arg(v, 1, 1099511627776)
  if not limit then return bad('bands[' .. (i - 1) .. '].limit', v, 1, 1099511627776) end
  v = A[base + 3]
  local period = int_arg(v, 1, 158112000000000)
  if not period then
    return bad('bands[' .. (i - 1) .. '].period_us', v, 1, 158112000000000)
  end
  v = A[base + 4]
  local burst = v == '0' and 0 or int_arg(v, 0, 1099511627776)
  if not burst then return bad('bands[' .. (i - 1) .. '].burst', v, 0, 1099511627776) end
  local refill = A[base + 5]
  if refill ~= 'smooth' and refill ~= 'stepwise' then
    return {err = 'ERR tokenlease release: bands[' .. (i - 1) .. '].refill is \'' ..
            tostring(refill) .. '\'; smooth or stepwise'}
  end
  local anchor = A[base + 6]
  if anchor ~= 'aligned' and anchor ~= 'first_request' then
    return {err = 'ERR tokenlease release: bands[' .. (i - 1) .. '].anchor is \'' ..
            tostring(anchor) .. '\'; aligned or first_request'}
  end
  v = A[base + 7]
  local off = v == '0' and 0 or int_arg(v, -2251799813685248, 2251799813685248)
  if not off then
    return bad('bands[' .. (i - 1) .. '].window_offset_us', v,
               -2251799813685248, 2251799813685248)
  end
  v = A[base + 8]
  local granule = v == '0' and 0 or int_arg(v, 0, period)
  if not granule then
    return bad('bands[' .. (i - 1) .. '].log_granularity_us', v, 0, period)
  end
  v = A[base + 9]
  local max_entries = v == '0' and 0 or int_arg(v, 0, 1048576)
  if not max_entries then
    return bad('bands[' .. (i - 1) .. '].max_log_entries', v, 0, 1048576)
  end
  if max_entries == 0 then max_entries = 256 end
  if max_entries < 2 then
    return {err = 'ERR tokenlease release: bands[' .. (i - 1) ..
            '].max_log_entries must be 0 or >= 2'}
  end
  local key = KEYS[k]; k = k + 1
  if algo == 'token_bucket' or algo == 'gcra' then
    if burst == 0 then burst = limit end
    local kind = (algo == 'gcra' or refill == 'smooth') and 'gcra' or 'step'
    local g, h = period, limit
    while h > 0 do g, h = h, g % h end
    local p, l, tol = period / g, limit / g, false  -- a token costs p units of 1/l us
    if kind == 'gcra' then
      tol = burst * p
      if tol + max_borrow * l >= 2251799813685248 then
        return {err = 'ERR tokenlease release: bands[' .. (i - 1) .. '].burst * period / limit (+ max_borrow) is beyond the exact range (2^51 units of 1/limit us)'}
      end
    elseif (burst + limit - 1 - (burst + limit - 1) % limit) / limit * period +
           max_borrow + period >= 2251799813685248 then
      return {err = 'ERR tokenlease release: bands[' .. (i - 1) .. '].time to refill burst (+ max_borrow) is beyond 2^51 us'}
    end
    bands[i] = {kind = kind, key = key, limit = limit, period = period, burst = burst,
                p = p, l = l, tol = tol}
  elseif algo == 'fixed_window' or algo == 'sliding_counter' then
    bands[i] = {kind = algo == 'fixed_window' and 'fixed' or 'counter', key = key,
                limit = limit, period = period}
  else
    has_log = true
    local meta, goff, q = KEYS[k], false, false
    k = k + 1
    if granule > 0 then
      goff = off % granule  -- exact: |off| <= 2^51
    elseif limit > max_entries then
      -- The local engine's quantum ceil(period_ns / max_log_entries) ns;
      -- entries are scored by quantum index k (time k * q ns).
      local r
      q, r = muldiv(period, 1000, max_entries)
      if r > 0 then q = q + 1 end
      if q < 1000 or q >= 2251799813685248 then
        return {err = 'ERR tokenlease release: bands[' .. (i - 1) .. '].period / max_log_entries must be between 1us and 2^51 ns'}
      end
    end
    bands[i] = {kind = 'log', key = key, meta = meta, limit = limit, period = period,
                granule = granule, goff = goff, q = q}
  end
end
if #KEYS ~= k then
  return {err = 'ERR tokenlease release: expected ' .. k .. ' keys, got ' .. #KEYS}
end
local dedup = KEYS[k]

local now
if explicit_now >= 0 then
  now = explicit_now
else
  local t = rcall('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- How long after its grant a lease may still be released: until the band
-- would have recovered the tokens anyway.
local h = 0
for i = 1, nb do
  local b = bands[i]
  local kind, x = b.kind
  if kind == 'gcra' then x = dceil(b.tol, b.l) + max_borrow
  elseif kind == 'step' then x = dceil(b.burst, b.limit) * b.period + max_borrow
  elseif kind == 'log' then
    local g = b.granule
    if b.q then g = dceil(b.q, 1000) end
    x = b.period + g
  else
    x = b.period
  end
  if x > h then h = x end
end
local left = granted_at + h - now
if amount == 0 or left <= 0 then return 0 end

-- Sliding log helpers (made only when a log band is present).
local parse_member, log_rec, log_left
if has_log then
  parse_member = function(m)
    local sc, tok = smatch(m, '^(-?%d+):(%d+)$')
    return tonumber(sc), tonumber(tok)
  end
  -- Where the grant was recorded in a log (at the earliest).
  log_rec = function(b)
    local rec = granted_at
    if b.granule > 0 then
      if rec >= b.goff then rec = b.goff + dfloor(rec - b.goff, b.granule) * b.granule
      else rec = b.goff - b.granule end
    elseif b.q then
      local r
      rec, r = muldiv(rec, 1000, b.q)
      if r > 0 then rec = rec + 1 end
    end
    return rec
  end
  -- An entry's end of life (time + period) minus `at`, in whole us.
  log_left = function(b, score, at)
    if b.q then
      local e, r = muldiv(score, b.q, 1000)
      if r > 0 then e = e + 1 end
      return e + b.period - at
    end
    return score + b.period - at
  end
end

-- Read every state first: the reads are the type checks (a failing call
-- marks nothing as applied). A log band's first entry at or after the
-- grant's record is read here too (ZRANGEBYSCORE fails on a wrong type).
-- st[3i-2..3i] = the state's numbers (log: total, latest, first entry).
local st = {}
for i = 1, nb do
  local b = bands[i]
  local key, first = b.key, false
  if b.kind == 'log' then
    local rec = log_rec(b)
    if rec >= 1e17 then rec = sformat('%.0f', rec) end
    first = rpcall('ZRANGEBYSCORE', key, rec, '+inf', 'LIMIT', 0, 1)
    if first.err then
      return {err = 'WRONGTYPE tokenlease: key \'' .. key .. '\' holds a ' ..
              rcall('TYPE', key).ok ..
              ', not the zset tokenlease keeps there; delete or rename it'}
    end
    key = b.meta
  end
  -- The string state "n1 n2 [n3]" (nil if the key does not exist). The
  -- usual layout takes one string.match; anything else is split on
  -- whitespace as before.
  local x, y, z
  local str = rpcall('GET', key)
  if str then
    if str.err then  -- a string has no field err; an error reply does
      return {err = 'WRONGTYPE tokenlease: key \'' .. key .. '\' holds a ' ..
              rcall('TYPE', key).ok ..
              ', not the string tokenlease keeps there; delete or rename it'}
    end
    x, y, z = smatch(str, '^(%S+) (%S+) ?(%S*)$')
    if x then
      x, y = tonumber(x), tonumber(y)
      if z == '' then z = nil
      else
        z = tonumber(z)
        if z == nil then x = nil end
      end
    end
    if not (x and y) then
      local out = {}
      for w in string.gmatch(str, '%S+') do out[#out + 1] = tonumber(w) end
      x, y, z = out[1], out[2], out[3]
    end
  end
  if first then z = first end
  st[3 * i - 2] = x or false; st[3 * i - 1] = y or false; st[3 * i] = z or false
end

-- At most once: the dedup key outlives every release that could still apply.
-- (Redis formats a number argument with %.17g: exact, no exponent below
-- 1e17; beyond, only from nonsense input, '%.0f' as before.)
local dedup_ms = dceil(left, 1000) + MARGIN_MS
if dedup_ms >= 1e17 then dedup_ms = sformat('%.0f', dedup_ms) end
if not rcall('SET', dedup, '1', 'NX', 'PX', dedup_ms) then
  return 0
end

-- Gives back up to `amount` tokens to each band (its state x, y, z as
-- read); the smallest credit is returned.
local returned = amount
for i = 1, nb do
  local b = bands[i]
  local x, y, z = st[3 * i - 2], st[3 * i - 1], st[3 * i]
  if y == false then y = nil end
  if z == false then z = nil end
  local kind, back = b.kind, 0
  local reset, f1, f2, f3  -- the state to store: "f1 f2 [f3]", TTL reset + 1 s
  if kind == 'gcra' then
    local t, f, l = x, y, z
    if t and t >= now then  -- else already full
      f = f or 0; l = l or b.l
      if l ~= b.l then
        local r
        f, r = muldiv(f, b.l, l)
        if r > 0 then f = f + 1 end
        if f >= b.l then t = t + 1; f = 0 end
      end
      local tn = t - now
      if tn * b.l < 2251799813685248 then  -- else clock stepped far back: leave it
        local d = tn * b.l + f
        back = dfloor(d, b.p)
        if amount < back then back = amount end
        if back > 0 then
          d = d - back * b.p
          if d <= 0 then
            reset = 0
          else
            local whole, frac = muldiv(d, 1, b.l)
            reset, f1, f2, f3 = dceil(d, b.l), now + whole, frac, b.l
          end
        end
      end
    end
  elseif kind == 'step' then
    local tokens, anchor = x, y
    if tokens then  -- else full
      local elapsed = now - anchor
      if elapsed >= b.period then
        local steps = dfloor(elapsed, b.period)
        anchor = anchor + steps * b.period
        if tokens >= b.burst or steps >= dceil(b.burst - tokens, b.limit) then
          tokens = b.burst
        else
          tokens = tokens + steps * b.limit
        end
      end
      back = b.burst - tokens
      if amount < back then back = amount end
      if back > 0 then
        tokens = tokens + back
        reset = 0
        if tokens < b.burst then
          reset = anchor + dceil(b.burst - tokens, b.limit) * b.period - now
        end
        f1, f2 = tokens, anchor
      end
    end
  elseif kind == 'fixed' or kind == 'counter' then
    local start = x
    -- Only into the window the tokens were granted in, while it lasts.
    if start and now - start < b.period and granted_at >= start and
       granted_at < start + b.period then
      if kind == 'fixed' then
        local count = y
        back = count
        if amount < back then back = amount end
        if back > 0 then
          count = count - back
          reset, f1, f2 = count > 0 and start + b.period - now or 0, start, count
        end
      else
        local prev, cur = y, z
        back = cur
        if amount < back then back = amount end
        if back > 0 then
          cur = cur - back
          reset = 0
          if cur > 0 then reset = start + 2 * b.period - now
          elseif prev > 0 then
            reset = start + b.period - now
            if reset < 0 then reset = 0 end
          end
          f1, f2, f3 = start, prev, cur
        end
      end
    end
  elseif x then  -- log: x, y = meta total, latest; z = first entry at/after rec
    local total, latest = x, math.max(y, now)
    -- Its record must still count; tokens of an expired record are not
    -- taken from a later grant's record.
    if log_left(b, log_rec(b), latest) > 0 and #z > 0 then
      local sc, tok = parse_member(z[1])
      back = tok
      if amount < back then back = amount end
      if back > 0 then
        local function fmt(n)  -- '%d' is exact and cheaper; '%.0f' beyond 2^53
          if n < 9007199254740992 and n > -9007199254740992 then return sformat('%d', n) end
          return sformat('%.0f', n)
        end
        rcall('ZREM', b.key, z[1])
        if tok > back then rcall('ZADD', b.key, fmt(sc), fmt(sc) .. ':' .. fmt(tok - back)) end
        total = total - back
        local last = rcall('ZRANGE', b.key, -1, -1)
        if #last == 0 then
          rcall('DEL', b.key, b.meta)
        else
          local nsc = parse_member(last[1])
          local e = log_left(b, nsc, now)
          local ms = dceil(e > 1 and e or 1, 1000) + MARGIN_MS
          if ms >= 1e17 then ms = sformat('%.0f', ms) end
          rcall('SET', b.meta, fmt(total) .. ' ' .. fmt(latest), 'PX', ms)
          rcall('PEXPIRE', b.key, ms)
        end
      end
    end
  end
  if back < 0 then back = 0 end
  if reset then
    -- SET "f1 f2 [f3]" with a TTL of reset + 1 s, or DEL. '%d' is exact
    -- (64-bit lua_Integer) and much cheaper than '%.0f', kept for values
    -- beyond 2^53 (only from nonsense input).
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
  end
  if back < returned then returned = back end
end
return returned
