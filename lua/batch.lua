-- tokenlease batch, protocol 1. docs/lua-protocol.md is the contract.
-- Many keys' acquires, charges and releases for ONE limit (one spec) in one
-- call: each item does what acquire.lua or release.lua does with the same
-- arguments, the items in order (an item sees the effect of the earlier
-- ones on the keys they share), each all or none on its own.
--
-- KEYS: per item, in order: an acquire or charge item, the limit's band
--       keys as acquire.lua takes them ("{tag}:b<i>", and "{tag}:b<i>:m"
--       right after a sliding_log band's); a lease or release item, the
--       same, then its lease key "{tag}:r:<lease_id>".
--       Or no KEYS at all (the Redis Cluster form): the same keys, in the
--       same order, in ARGV right after the items (before
--       empty_since_us). Redis Cluster routes a call by its declared keys,
--       which must share one hash slot; keys read by the script but not
--       declared may be of any slot the node serves (a key of another
--       node, or of a slot in migration, fails its item alone: "non local
--       key").
-- ARGV: 1 "1" (protocol), 2 now_us (-1 = TIME, read once for the call),
--       3 max_borrow_us, 4 band count n, then 9 fields per band (as in
--       acquire.lua), then the item count m (0 to MAX_ITEMS), then per item
--       its op and fields: "acquire" wanted minimum max_wait_us |
--       "lease" wanted minimum max_wait_us (an acquire that records its
--       grant under the lease key, as acquire.lua with a lease key) |
--       "charge" amount max_debt | "release" amount granted_at_us.
-- Reply: m elements, element j answering item j: acquire.lua's 6 integers
--        (acquire and lease items); one integer (charge items): what is
--        left after the charge (acquire.lua's remaining) when all of the
--        amount was charged, else the part not charged, negative (the debt
--        cap; nothing is left then); release.lua's integer; or an error
--        reply for that item alone.
--
-- ASSEMBLED like acquire.lua. The arguments, the spec (lib/band.lua), the
-- helpers and TIME are done once per call; acquire.lua's body
-- (lib/acquire.lua: load, charge, decide) and release.lua's
-- (lib/release.lua: start, read, apply) once per item, inside the functions
-- acquire_item and release_item.
--
-- ALL OR NONE PER ITEM. An item reads (and type-checks, with redis.pcall)
-- every key it touches before its first write, so its error replies (a
-- key of another type; a value that is no tokenlease state, see
-- lib/state.lua read) leave its keys as they were. It runs under pcall,
-- so an error raised inside it (by the Lua, or by a redis.call) ends that
-- item only, with an error reply, never the call: a raised error would
-- otherwise end the script with the earlier items' writes kept. The
-- errors of the call's layout (protocol, spec, counts, an unknown op) come
-- before any item runs: the call's error reply, nothing applied.
--
-- PERFORMANCE NOTES: see acquire.lua. Per item: no closure, the band
-- tables reused (band i's state lives in bands[i], loaded again by each
-- item), one table (an acquire or lease item's reply). A charge item
-- replies one integer: Redis turns a table reply into an array node of its
-- own after looking up six fields (err, ok, double, ...), and each integer
-- costs more than a Lua line (the 6-integer table was about a quarter of a
-- charge item's server instructions, callgrind). A charge of a
-- one-band GCRA limit (most charges: a token bucket's cold keys) takes
-- fast_charge below: one command for a key without state, no pcall, no
-- generic band code; an acquire or lease of such a limit without
-- borrowing takes fast_grant (the grant and its record: two commands for
-- a key without state, three with one, as the general path).

local ERR = 'ERR tokenlease batch: '  -- prefix of the errors
local N_ARG = 4  -- ARGV index of the band count
local MAX_ITEMS = 64  -- kMaxBatchItems (src/redis/script_call.h)
--@include lib/args.lua head

--@include lib/arith.lua

--@include lib/args.lua arguments
--@include lib/args.lua band_count
local im = N_ARG + 9 * nb + 1  -- ARGV index of the item count
if #A < im then
  return {err = ERR .. 'expected at least ' .. im .. ' arguments for ' .. nb ..
          ' bands, got ' .. #A}
end

-- Bands (same layout and checks as acquire.lua), once: each item sets the
-- keys (b.key, b.meta) of the band tables to its own.
local bands, k = {}, 1
local has_log, has_window, has_step, has_counter = false, false, false, false
for i = 1, nb do
  local base = N_ARG + 9 * (i - 1)
  --@include lib/band.lua
  --@include lib/acquire.lua band
end
local ka = k - 1  -- keys of an acquire or charge item; a release item's + 1

-- The layout of the items: every op known, the argument and key counts
-- right, before any item runs.
v = A[im]
local m = v == '0' and 0 or int_arg(v, 0, MAX_ITEMS)
if not m then
  return {err = ERR .. 'item count is ' .. tostring(v) ..
          '; it must be an integer in [0, ' .. MAX_ITEMS .. ']'}
end
local ai, nk = im + 1, 0  -- ARGV index of the next item, keys so far
for j = 1, m do
  local op = A[ai]
  if op == 'acquire' then ai = ai + 4; nk = nk + ka
  elseif op == 'lease' then ai = ai + 4; nk = nk + ka + 1
  elseif op == 'charge' then ai = ai + 3; nk = nk + ka
  elseif op == 'release' then ai = ai + 3; nk = nk + ka + 1
  elseif op == nil then
    return {err = ERR .. 'expected more than ' .. #A .. ' arguments for ' ..
            m .. ' items'}
  else
    return {err = ERR .. 'items[' .. (j - 1) .. '].op is \'' .. tostring(op) ..
            '\'; acquire, lease, charge or release'}
  end
end
-- Where the items' keys are: KEYS, or (no KEYS declared, items with keys:
-- the Redis Cluster form, for items of several hash slots of one node)
-- ARGV right after the items.
local IK, ik = KEYS, 0  -- the keys' table, and the index before the first
if #KEYS == 0 and nk > 0 then IK, ik = A, ai - 1 end
local SI = ai + (IK == A and nk or 0)  -- where empty_since_us is, if given
--@include lib/args.lua since
if #A ~= SI - 1 and #A ~= SI then
  return {err = ERR .. 'expected ' .. (SI - 1) .. ' arguments for ' .. m ..
          ' items (' .. SI .. ' with empty_since_us), got ' .. #A}
end
if IK == KEYS and #KEYS ~= nk then
  return {err = ERR .. 'expected ' .. nk .. ' keys, got ' .. #KEYS}
end

--@include lib/args.lua now

-- The arguments of the item being run: the locals of acquire.lua and
-- release.lua that lib/acquire.lua and lib/release.lua use.
local W, wanted, minimum, charge, max_debt = 0, 0, 0, 0, 0
local amount, granted_at, dedup, grant_key = 0, 0, false, false

-- The release horizon h (from the spec: once per call): a lease item's
-- record lives that long, and a release item applies within it.
local h = 0
--@include lib/release.lua horizon

--@include lib/acquire.lua helpers

--@include lib/acquire.lua commit

--@include lib/acquire.lua admits

-- acquire.lua after its arguments, for one acquire or charge item: its
-- reply (6 integers, or an error reply; the items' loop makes a charge
-- item's one integer).
local function acquire_item()
  --@include lib/acquire.lua load

  --@include lib/acquire.lua charge

  --@include lib/acquire.lua decide
end

-- Where a grant was recorded in a log (log_rec).
local log_rec
if has_log then
  --@include lib/release.lua log_rec
end
local st = {}  -- the states a release item read

-- release.lua after its arguments, for one release item: its reply (an
-- integer, or an error reply).
local function release_item()
  --@include lib/release.lua start

  --@include lib/release.lua read

  --@include lib/release.lua apply
end

-- A lease item's lease key error reply (as acquire.lua words it), or nil.
local function lease_key_error(grant_key, bkey)
  --@include lib/args.lua lease_key
end

-- An item's argument error (as acquire.lua and release.lua word theirs).
local function bad_arg(j, field, v, range)
  return {err = ERR .. 'items[' .. (j - 1) .. '].' .. field .. ' is ' ..
          tostring(v) .. '; it must be an integer in ' .. range}
end

-- A GCRA charge item (one band: the token bucket's smooth refill), and
-- below a grant (fast_grant), without acquire_item's generality: the
-- key's state read and written by the fewest commands. No state: one,
-- SET NX GET (the general path: GET, then SET); a state: two, that SET
-- (writing nothing, reading it) and the SET of the new state, as the
-- general path. Only where Redis takes NX and GET together (7.0 or
-- later) and no empty_since was given (a key without state is then
-- fresh). Its replies and writes are exactly the general path's
-- (lib/acquire.lua load and charge, lib/state.lua write). A value
-- it does not take as is (another spec's stamp, another type's error, a
-- TAT far ahead, anything unusual) goes down the general path (nil),
-- which takes the value SET returned instead of its GET (pre_state), so
-- its checks and error replies stay as they are.
local fast_charge, fast_grant
if nb == 1 and bands[1].kind == 'gcra' and not empty_since and
   (tonumber(redis.REDIS_VERSION_NUM) or 0) >= 0x070000 then
  local b = bands[1]
  local p, l, tol, stamp, burst = b.p, b.l, b.tol, b.stamp, b.burst
  local ls = sformat('%d', l)
  -- TTLs in ms as the strings SET takes (Redis would format a number
  -- with '%.17g' on every call; charges of a call share a few TTLs).
  local ttl_str = {}
  -- The states written, by debt: the charges of a call's fresh keys mostly
  -- write one (a cold key charged 1 token), and a string.format of three
  -- numbers and a new string cost more than the SET (about 7,000 of 38,000
  -- server instructions per item, callgrind; docs/benchmarks.md).
  local state_str, state_ms = {}, {}
  -- The new state of debt d > 0 (units of 1/l us), as commit writes it:
  -- the value and its TTL in ms (d <= 2^51 + p: '%d' is exact).
  local function state_of(d)
    local str = state_str[d]
    if str then return str, state_ms[d] end
    local whole, frac = muldiv(d, 1, l)
    local ms = dceil(dceil(d, l), 1000) + MARGIN_MS
    local mss = ttl_str[ms]
    if not mss then mss = sformat('%d', ms); ttl_str[ms] = mss end
    str = sformat('%d %d %d %s', now + whole, frac, l, stamp)
    state_str[d], state_ms[d] = str, mss
    return str, mss
  end
  -- The debt (units of 1/l us) of the value `old` a SET NX GET returned,
  -- as lib/acquire.lua load finds it; nil for the general path (an error
  -- reply; a value it takes as pre_state: another spec's or another l's,
  -- a TAT far ahead, anything unusual).
  local function debt_of(old)
    if type(old) ~= 'string' then return nil end
    local t, f, z, st = smatch(old, '^(%d+) (%d+) (%d+) (%S+)$')
    t, f = tonumber(t), tonumber(f)
    if not t or z ~= ls or st ~= stamp or t >= 9007199254740992 or
       f >= l then
      pre_state = old
      return nil
    end
    if t < now then return 0 end
    local tn = t - now
    if tn * l >= 2251799813685248 then pre_state = old; return nil end
    return tn * l + f
  end
  fast_charge = function(key)
    -- Charge up to wanted within max_debt (lib/acquire.lua charge).
    local cap = tol + max_debt * p
    if cap > 2251799813685248 then cap = 2251799813685248 end
    local take = dfloor(cap, p)  -- with no state: a debt of 0
    if wanted < take then take = wanted end
    if take <= 0 then return nil end  -- no write to try
    local d = take * p
    local str, ms = state_of(d)
    local old = rpcall('SET', key, str, 'PX', ms, 'NX', 'GET')
    if old ~= false then  -- a state (written: nothing), or an error reply
      d = debt_of(old)
      if not d then return nil end
      take = 0
      if d < cap then
        take = dfloor(cap - d, p)
        if wanted < take then take = wanted end
      end
      if take > 0 then
        d = d + take * p
        str, ms = state_of(d)
        rcall('SET', key, str, 'PX', ms)
      end
    end
    if take < wanted then return take - wanted end  -- capped: none left
    return d <= tol and dfloor(tol - d, p) or 0
  end
  -- The grant record's TTL (lib/acquire.lua decide), once per call.
  local rec_ms = dceil(h, 1000) + MARGIN_MS
  if rec_ms >= 1e17 then rec_ms = sformat('%.0f', rec_ms) end
  -- An acquire or lease item of minimum >= 1 without borrowing (W = 0),
  -- as lib/acquire.lua load and decide do it for this band: the largest
  -- grant in [minimum, wanted] that fits, its state written, and for a
  -- lease its grant record (the general path: GET, SET, SET). A key
  -- without state: SET NX GET of the grant a full bucket gives, then the
  -- record. A minimum that does not fit a full bucket goes down the
  -- general path (its SET NX would write a denial's state).
  fast_grant = function(key)
    local need = minimum * p
    if need > tol then return nil end
    local lo = dfloor(tol, p)  -- with no state: a debt of 0
    if wanted < lo then lo = wanted end
    local d = lo * p
    local str, ms = state_of(d)
    local old = rpcall('SET', key, str, 'PX', ms, 'NX', 'GET')
    if old ~= false then  -- a state (written: nothing), or an error reply
      local d0 = debt_of(old)
      if not d0 then return nil end
      if need > tol - d0 then  -- denied: nothing written
        return {0, d0 <= tol and dfloor(tol - d0, p) or 0,
                minimum > burst and -1 or dceil(d0 + need - tol, l),
                dceil(d0, l), now, 0}
      end
      lo = dfloor(tol - d0, p)
      if wanted < lo then lo = wanted end
      d = d0 + lo * p
      str, ms = state_of(d)
      rcall('SET', key, str, 'PX', ms)
    end
    if grant_key then
      rcall('SET', grant_key, sformat('%d %d', lo, now), 'PX', rec_ms)
    end
    return {lo, dfloor(tol - d, p), 0, dceil(d, l), now, 0}
  end
end

-- The items, in order.
local md_str, md_num = false, false  -- the last max_debt, as given and read
local out, ko = {}, 1  -- the replies; key index of the item's first key
ai = im + 1
for j = 1, m do
  local op, kk = A[ai], ko
  for i = 1, nb do
    local b = bands[i]
    b.key = IK[ik + kk]; kk = kk + 1
    if b.kind == 'log' then b.meta = IK[ik + kk]; kk = kk + 1 end
  end
  local v1, v2, ok, r = A[ai + 1], A[ai + 2]
  grant_key = false
  if op == 'acquire' or op == 'lease' then
    local v3 = A[ai + 3]
    ai = ai + 4
    if op == 'lease' then
      grant_key = IK[ik + kk]; kk = kk + 1
      r = lease_key_error(grant_key, bands[1].key)
    end
    wanted = v1 == '1' and 1 or int_arg(v1, 0, 1125899906842624)
    minimum = wanted and
              ((v2 == '1' and wanted >= 1) and 1 or int_arg(v2, 0, wanted))
    local max_wait = v3 == '0' and 0 or int_arg(v3, 0, 4503599627370496)
    if r then  -- the lease key's error
    elseif not wanted then r = bad_arg(j, 'wanted', v1, '[0, 1125899906842624]')
    elseif not minimum then
      r = bad_arg(j, 'minimum', v2, '[0, ' .. sformat('%.0f', wanted) .. ']')
    elseif not max_wait then
      r = bad_arg(j, 'max_wait_us', v3, '[0, 4503599627370496]')
    else
      W = max_wait < max_borrow and max_wait or max_borrow
      charge = 0; max_debt = 0
      if fast_grant and W == 0 and minimum >= 1 then
        r = fast_grant(bands[1].key)
      end
      if not r then ok, r = pcall(acquire_item); pre_state = false end
    end
  elseif op == 'charge' then
    ai = ai + 3
    wanted = v1 == '1' and 1 or int_arg(v1, 0, 1125899906842624)
    -- The charges of a call mostly share one max_debt (the burst).
    if v2 == md_str then max_debt = md_num
    else
      max_debt = v2 == '0' and 0 or int_arg(v2, 0, 1099511627776)
      md_str, md_num = v2, max_debt
    end
    if not wanted then r = bad_arg(j, 'amount', v1, '[0, 1125899906842624]')
    elseif not max_debt then
      r = bad_arg(j, 'max_debt', v2, '[0, 1099511627776]')
    else
      W = 0; minimum = 0; charge = 1  -- as acquire.lua's charge=1
      if fast_charge then r = fast_charge(bands[1].key) end
      if not r then
        ok, r = pcall(acquire_item); pre_state = false
        -- acquire.lua's reply {charged, remaining, ...} as one integer.
        if ok and not r.err then
          r = r[1] < wanted and r[1] - wanted or r[2]
        end
      end
    end
  else  -- release
    ai = ai + 3
    dedup = IK[ik + kk]; kk = kk + 1
    r = lease_key_error(dedup, bands[1].key)
    amount = v1 == '1' and 1 or int_arg(v1, 0, 1125899906842624)
    granted_at = int_arg(v2, 0, 4503599627370496)
    if r then  -- the lease key's error
    elseif not amount then r = bad_arg(j, 'amount', v1, '[0, 1125899906842624]')
    elseif not granted_at then
      r = bad_arg(j, 'granted_at_us', v2, '[0, 4503599627370496]')
    else
      ok, r = pcall(release_item)
    end
  end
  if ok == false then  -- raised inside the item: its error reply
    r = {err = ERR .. 'items[' .. (j - 1) .. ']: ' ..
         (type(r) == 'table' and tostring(r.err) or tostring(r))}
  end
  out[j] = r
  ko = kk
end
return out
