-- tokenlease acquire, protocol 1. docs/lua-protocol.md is the contract.
-- Mirrors the local engine (src/local/band_eval_inl.h, sliding_log.cc) in
-- whole microseconds with exact integer arithmetic: Lua numbers are doubles,
-- so every quantity is kept below 2^53 (ValidateScriptSpec bounds the spec).
--
-- KEYS: per band i (0-based, in order) "{tag}:b<i>"; a sliding_log band
--       also has "{tag}:b<i>:m" right after it. Optionally last, a lease
--       key "{tag}:r:<lease_id>": a grant is recorded there for release.lua
--       (not with charge=1).
-- ARGV: 1 "1" (protocol), 2 now_us (-1 = TIME), 3 wanted, 4 minimum,
--       5 max_wait_us, 6 charge (0/1), 7 max_debt, 8 max_borrow_us,
--       9 band count n, then 9 fields per band: algorithm, limit, period_us,
--       burst, refill, anchor, window_offset_us, log_granularity_us,
--       max_log_entries.
-- Reply: {granted, remaining, retry_after_us, reset_after_us, now_us, wait_us}
--
-- ASSEMBLED at build time (cmake/embed_lua.cmake): every line
-- `--@include lib/<file>.lua [<part>]` is replaced by that file (or part)
-- of lua/lib/, shared with release.lua and batch.lua (lib/acquire.lua is
-- the body of this script, which batch.lua runs per item). The result,
-- <build>/lua/acquire.lua (installed as share/tokenlease/lua/acquire.lua),
-- is the script Redis runs and hashes; its SHA1 is in acquire.lua.sha1 next
-- to it.
--
-- PERFORMANCE NOTES. Redis caches the compiled chunk, but the chunk body
-- (every `local function`, every table) runs again on each call, and the
-- embedded Lua is slow: ~50-300 ns per closure (more with upvalues),
-- ~150-900 ns per table (more with fields), ~300 ns per tonumber(string),
-- ~400-900 ns per number->string conversion, ~1-3 us per redis.call; all
-- garbage is also collected later. So this script:
--  * creates few closures (helpers of a kind only when a band of that kind
--    is present, the sliding-log code only with a sliding_log band), with
--    few upvalues (constants are literals: 2^51 = 2251799813685248,
--    2^52 = 4503599627370496);
--  * dispatches on the band kind with if-chains, returns results as
--    multiple values (no result tables), keeps a band's state in the band's
--    own table, declared in its constructor (no rehash);
--  * parses "0", "1", "-1" arguments without tonumber, states with one
--    string.match, writes states with one string.format('%d ...') (exact:
--    lua_Integer is 64-bit; '%.0f' only beyond 2^53) and passes TTLs and
--    scores to redis.call as numbers (Redis formats them with %.17g: exact
--    and without exponent below 1e17);
--  * uses ZCARD (pcall) as the sliding log's type check instead of TYPE;
--  * divides with `%` (exact below 2^52) and keeps the long path of muldiv
--    for larger products only; builds error messages only on errors.

local ERR = 'ERR tokenlease acquire: '  -- prefix of the argument errors
local N_ARG = 9  -- ARGV index of the band count
--@include lib/args.lua head

--@include lib/arith.lua

--@include lib/args.lua arguments
v = A[3]
local wanted = v == '1' and 1 or int_arg(v, 0, 1125899906842624)
if not wanted then return {err = ERR .. 'wanted is ' .. tostring(v) ..
      '; it must be an integer in [0, 1125899906842624]'} end
v = A[4]
local minimum = (v == '1' and wanted >= 1) and 1 or int_arg(v, 0, wanted)
if not minimum then return {err = ERR .. 'minimum is ' .. tostring(v) ..
      '; it must be an integer in [0, ' .. sformat('%.0f', wanted) .. ']'} end
v = A[5]
local max_wait = v == '0' and 0 or int_arg(v, 0, 4503599627370496)
if not max_wait then return {err = ERR .. 'max_wait_us is ' .. tostring(v) ..
      '; it must be an integer in [0, 4503599627370496]'} end
v = A[6]
local charge = v == '0' and 0 or int_arg(v, 0, 1)
if not charge then return {err = ERR .. 'charge is ' .. tostring(v) ..
      '; it must be an integer in [0, 1]'} end
v = A[7]
local max_debt = v == '0' and 0 or int_arg(v, 0, 1099511627776)
if not max_debt then return {err = ERR .. 'max_debt is ' .. tostring(v) ..
      '; it must be an integer in [0, 1099511627776]'} end
--@include lib/args.lua band_count
local SI = N_ARG + 9 * nb + 1  -- where empty_since_us is, if given
--@include lib/args.lua since
if #A ~= SI then
  --@include lib/args.lua arg_count
end

-- Bands (same layout and checks as release.lua and batch.lua).
local bands, k = {}, 1
local has_log, has_window, has_step, has_counter = false, false, false, false
for i = 1, nb do
  local base = 9 * i
  --@include lib/band.lua
  --@include lib/acquire.lua band
end
local grant_key = false  -- where a grant is recorded for its release
if #KEYS == k then
  grant_key = KEYS[k]
  local bkey = KEYS[1]
  --@include lib/args.lua lease_key
  if charge == 1 then
    return {err = ERR .. 'a charge records no grant: send no lease key (' ..
            (k - 1) .. ' keys)'}
  end
elseif #KEYS ~= k - 1 then
  return {err = ERR .. 'expected ' .. (k - 1) .. ' keys (' .. k ..
          ' with a lease key), got ' .. #KEYS}
end

--@include lib/args.lua now
local W = max_wait < max_borrow and max_wait or max_borrow
local h = 0  -- a recorded grant's lifetime: its release horizon
if grant_key then
  --@include lib/release.lua horizon
end

--@include lib/acquire.lua helpers

--@include lib/acquire.lua load

--@include lib/acquire.lua commit

--@include lib/acquire.lua charge

--@include lib/acquire.lua admits

--@include lib/acquire.lua decide
