-- lib/band.lua, in acquire.lua, release.lua and batch.lua inside their loop
-- over the bands (for i = 1, nb): band i's 9 arguments A[base + 1 .. base + 9],
-- validated in order (the first bad one is the error reply), and its keys:
-- key = KEYS[k] (+ meta = KEYS[k + 1] for a sliding log; k is advanced).
-- Sets kind: 'gcra' (smooth token bucket or GCRA), 'step' (stepwise token
-- bucket), 'fixed', 'counter' or 'log', and what the kind needs:
-- gcra/step: burst (0 = limit), p and l (a token costs p units of 1/l us),
-- tol (gcra: burst * p); log: meta, goff (granule offset), q (quantum in
-- ns, or false); stamp (below).
local algo = A[base + 1]
if algo ~= 'token_bucket' and algo ~= 'gcra' and algo ~= 'fixed_window' and
   algo ~= 'sliding_counter' and algo ~= 'sliding_log' then
  return {err = ERR .. 'bands[' .. (i - 1) .. '].algorithm is \'' ..
      tostring(algo) ..
      '\'; one of token_bucket, gcra, fixed_window, sliding_counter, sliding_log'}
end
v = A[base + 2]
local limit = int_arg(v, 1, 1099511627776)
if not limit then return {err = ERR .. 'bands[' .. (i - 1) .. '].limit is ' ..
    tostring(v) ..
    '; it must be an integer in [1, 1099511627776]'} end
v = A[base + 3]
local period = int_arg(v, 1, 158112000000000)
if not period then return {err = ERR .. 'bands[' .. (i - 1) .. '].period_us is ' ..
    tostring(v) ..
    '; it must be an integer in [1, 158112000000000]'} end
v = A[base + 4]
local burst = v == '0' and 0 or int_arg(v, 0, 1099511627776)
if not burst then return {err = ERR .. 'bands[' .. (i - 1) .. '].burst is ' ..
    tostring(v) ..
    '; it must be an integer in [0, 1099511627776]'} end
local refill = A[base + 5]
if refill ~= 'smooth' and refill ~= 'stepwise' then
  return {err = ERR .. 'bands[' .. (i - 1) .. '].refill is \'' ..
          tostring(refill) .. '\'; smooth or stepwise'}
end
local anchor = A[base + 6]
if anchor ~= 'aligned' and anchor ~= 'first_request' then
  return {err = ERR .. 'bands[' .. (i - 1) .. '].anchor is \'' ..
          tostring(anchor) .. '\'; aligned or first_request'}
end
v = A[base + 7]
local off = v == '0' and 0 or int_arg(v, -2251799813685248, 2251799813685248)
if not off then
  return {err = ERR .. 'bands[' .. (i - 1) .. '].window_offset_us is ' ..
    tostring(v) ..
    '; it must be an integer in [-2251799813685248, 2251799813685248]'}
end
v = A[base + 8]
local granule = v == '0' and 0 or int_arg(v, 0, period)
if not granule then return {err = ERR .. 'bands[' .. (i - 1) .. '].log_granularity_us is ' ..
    tostring(v) ..
    '; it must be an integer in [0, ' .. sformat('%.0f', period) .. ']'} end
v = A[base + 9]
local max_entries = v == '0' and 0 or int_arg(v, 0, 1048576)
if not max_entries then
  return {err = ERR .. 'bands[' .. (i - 1) .. '].max_log_entries is ' ..
    tostring(v) ..
    '; it must be an integer in [0, 1048576]'}
end
if max_entries == 0 then max_entries = 256 end
if max_entries < 2 then
  return {err = ERR .. 'bands[' .. (i - 1) ..
          '].max_log_entries must be 0 or >= 2'}
end
local key = KEYS[k]; k = k + 1
local kind, p, l, tol, meta, goff, q
if algo == 'token_bucket' or algo == 'gcra' then
  if burst == 0 then burst = limit end
  kind = (algo == 'gcra' or refill == 'smooth') and 'gcra' or 'step'
  local g, h = period, limit
  while h > 0 do g, h = h, g % h end
  p, l, tol = period / g, limit / g, false
  if kind == 'gcra' then
    tol = burst * p
    if tol + max_borrow * l >= 2251799813685248 then
      return {err = ERR .. 'bands[' .. (i - 1) .. '].burst * period / limit (+ max_borrow) is beyond the exact range (2^51 units of 1/limit us)'}
    end
  elseif (burst + limit - 1 - (burst + limit - 1) % limit) / limit * period +
         max_borrow + period >= 2251799813685248 then
    return {err = ERR .. 'bands[' .. (i - 1) .. '].time to refill burst (+ max_borrow) is beyond 2^51 us'}
  end
elseif algo == 'fixed_window' then
  kind = 'fixed'
elseif algo == 'sliding_counter' then
  kind = 'counter'
else
  kind = 'log'
  meta, goff, q = KEYS[k], false, false
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
      return {err = ERR .. 'bands[' .. (i - 1) .. '].period / max_log_entries must be between 1us and 2^51 ns'}
    end
  end
end
-- The band's stamp, stored after its state (lib/state.lua restamp): what
-- a state's numbers mean, so that a call with another spec of the same
-- limit name re-expresses it or refuses it. A log has none (its entries
-- are times and tokens whatever the spec).
local stamp = false
if kind == 'gcra' then
  stamp = sformat('g%d/%d', p, l)
elseif kind == 'step' then
  stamp = sformat('s%d/%d/%d', limit, period, burst)
elseif kind ~= 'log' then
  stamp = sformat('%s%d/%s%d', kind == 'fixed' and 'f' or 'c', period,
                  (kind == 'counter' or anchor == 'aligned') and 'a' or 'r',
                  off % period)  -- a counter's windows are always aligned
end
