-- lib/args.lua: what acquire.lua, release.lua and batch.lua have in common
-- up to and around their arguments, in parts (`--@include lib/args.lua
-- <part>`). The error replies start with the script's ERR ('ERR tokenlease
-- acquire: ') and are built only on errors.

--@part head
-- Globals used on every call, as locals.
local tonumber = tonumber
local rcall, rpcall = redis.call, redis.pcall
local smatch, sformat = string.match, string.format
-- A state value a call has already read with SET ... NX GET (batch.lua's
-- charge of a key with no state, see there), taken by the next read of
-- lib/state.lua instead of its GET; false when none.
local pre_state = false

--@part lease_key
-- grant_key (a lease key) must be "<tag>:r:<lease_id>" with the tag of the
-- limit's band 0 key bkey ("<tag>:b0"): a grant is never recorded over,
-- read from or deleted with another key. The error reply if not.
if #grant_key <= #bkey or
   string.sub(grant_key, 1, #bkey) ~= string.sub(bkey, 1, -4) .. ':r:' then
  return {err = ERR .. 'the lease key is \'' .. string.sub(grant_key, 1, 128) ..
          '\'; it must be \'' .. string.sub(bkey, 1, -4) .. ':r:<lease_id>\''}
end

--@part arguments
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

---------------------------------------------------------------------------
-- Arguments. "0", "1" and "-1" are taken without tonumber. A = ARGV, v =
-- the argument being read.

if ARGV[1] ~= '1' then
  return {err = ERR .. 'unknown protocol version \'' ..
          tostring(ARGV[1]) .. '\'; this script speaks version 1'}
end
local A = ARGV
local v = A[2]
local explicit_now = v == '-1' and -1 or int_arg(v, -1, 4503599627370496)
if not explicit_now then return {err = ERR .. 'now_us is ' .. tostring(v) ..
      '; it must be an integer in [-1, 4503599627370496]'} end
-- TTL margin beyond the time a state takes to become fresh. With an
-- explicit now (tests, replays) the caller's time may run slower than
-- the server's clock that expires keys, so the margin is 10 minutes.
local MARGIN_MS = explicit_now >= 0 and 600000 or 1000

--@part band_count
-- The last two arguments before the bands, max_borrow_us and the band
-- count n (at ARGV[N_ARG]); 9 fields per band follow n, band i's at
-- A[N_ARG + 9 * (i - 1) + 1 .. + 9].
v = A[N_ARG - 1]
local max_borrow = v == '0' and 0 or int_arg(v, 0, 31622400000000)
if not max_borrow then return {err = ERR .. 'max_borrow_us is ' .. tostring(v) ..
      '; it must be an integer in [0, 31622400000000]'} end
v = A[N_ARG]
local nb = v == '1' and 1 or int_arg(v, 1, 4)
if not nb then return {err = ERR .. 'band count is ' .. tostring(v) ..
      '; it must be an integer in [1, 4]'} end

--@part arg_count
-- The argument count of acquire.lua and release.lua: the bands are last.
if #A ~= N_ARG + 9 * nb then
  return {err = ERR .. 'expected ' .. (N_ARG + 9 * nb) .. ' arguments for ' ..
          nb .. ' bands, got ' .. #A}
end

--@part since
-- The optional last argument empty_since_us, at A[SI] (SI: the index it
-- has when given): when this Redis's tokenlease state began (since.lua's
-- marker). A key without state then counts as drained at that time, not
-- as fresh (lib/acquire.lua load): a Redis that lost its data hands out no
-- second burst. -1 or not given: no such time.
local empty_since = false
if #A == SI then
  v = A[SI]
  local es = v == '-1' and -1 or int_arg(v, -1, 4503599627370496)
  if not es then return {err = ERR .. 'empty_since_us is ' .. tostring(v) ..
        '; it must be an integer in [-1, 4503599627370496]'} end
  if es >= 0 then empty_since = es end
end

--@part now
-- The time of the call: the explicit now_us, or Redis TIME.
local now
if explicit_now >= 0 then
  now = explicit_now
else
  local t = rcall('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
