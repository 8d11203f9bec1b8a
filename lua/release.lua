-- tokenlease release, protocol 1. docs/lua-protocol.md is the contract.
-- Gives back unused tokens of one grant: at most what acquire.lua recorded
-- under the lease key, and at most once (the record goes).
--
-- KEYS: the acquire keys of the limit (same order), then the lease key
--       "{tag}:r:<lease_id>" the grant was recorded under.
-- ARGV: 1 "1" (protocol), 2 now_us (-1 = TIME), 3 amount, 4 granted_at_us
--       (checked, not used: the recorded grant time is), 5 max_borrow_us,
--       6 band count n, then 9 fields per band as acquire.
-- Reply: tokens returned (the smallest credit over the bands; 0 if no grant
--        is recorded under the key: none made, released already,
--        or past its release horizon).
--
-- ASSEMBLED at build time like acquire.lua (`--@include` lines: parts of
-- lua/lib/ shared with it and batch.lua; lib/release.lua is the body of this
-- script, which batch.lua runs per item); the result is
-- <build>/lua/release.lua, its SHA1 in release.lua.sha1.
--
-- PERFORMANCE NOTES: see acquire.lua (few closures and tables, constants
-- as literals: 2^51 = 2251799813685248, 2^52 = 4503599627370496; `%`
-- divisions below 2^52; '%d' formatting; numbers passed to redis.call as
-- numbers). Every state is read before the record is changed (so a failing
-- call uses up nothing), and the reads double as the type checks
-- (GET / ZRANGEBYSCORE fail on a key of another type): no TYPE calls.

local ERR = 'ERR tokenlease release: '  -- prefix of the argument errors
local N_ARG = 6  -- ARGV index of the band count
--@include lib/args.lua head

--@include lib/arith.lua

--@include lib/args.lua arguments
v = A[3]
local amount = v == '1' and 1 or int_arg(v, 0, 1125899906842624)
if not amount then return {err = ERR .. 'amount is ' .. tostring(v) ..
      '; it must be an integer in [0, 1125899906842624]'} end
v = A[4]
local granted_at = int_arg(v, 0, 4503599627370496)
if not granted_at then return {err = ERR .. 'granted_at_us is ' .. tostring(v) ..
      '; it must be an integer in [0, 4503599627370496]'} end
--@include lib/args.lua band_count
--@include lib/args.lua arg_count

-- Bands (same layout and checks as acquire.lua).
local bands, k, has_log = {}, 1, false
for i = 1, nb do
  local base = 6 + 9 * (i - 1)
  --@include lib/band.lua
  if kind == 'gcra' or kind == 'step' then
    bands[i] = {kind = kind, key = key, limit = limit, period = period, burst = burst,
                p = p, l = l, tol = tol, stamp = stamp}
  elseif kind == 'log' then
    has_log = true
    bands[i] = {kind = 'log', key = key, meta = meta, limit = limit, period = period,
                granule = granule, goff = goff, q = q}
  else
    bands[i] = {kind = kind, key = key, limit = limit, period = period,
                stamp = stamp}
  end
end
if #KEYS ~= k then
  return {err = ERR .. 'expected ' .. k .. ' keys, got ' .. #KEYS}
end
local dedup = KEYS[k]
do  -- the lease key must be under the limit's own tag: never read as a
    -- record (and deleted) elsewhere
  local grant_key, bkey = dedup, KEYS[1]
  --@include lib/args.lua lease_key
end

--@include lib/args.lua now

local h = 0
--@include lib/release.lua horizon
--@include lib/release.lua start

-- Sliding log helpers (made only when a log band is present).
local parse_member, log_rec, log_left
if has_log then
  --@include lib/log.lua helpers
  --@include lib/release.lua log_rec
end

local st = {}  -- the states read
--@include lib/release.lua read

--@include lib/release.lua apply
