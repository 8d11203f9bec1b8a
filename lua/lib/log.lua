-- lib/log.lua: sliding-log code of acquire.lua, release.lua and batch.lua,
-- in parts (`--@include lib/log.lua <part>`), made only when a sliding_log
-- band is present. They use the script's locals smatch, sformat, tonumber, rcall,
-- muldiv, dceil, now and MARGIN_MS.

--@part helpers
-- Assigns the script's locals parse_member and log_left.
-- A member "<score>:<tokens>" as two numbers.
parse_member = function(m)
  local sc, tok = smatch(m, '^(-?%d+):(%d+)$')
  return tonumber(sc), tonumber(tok)
end
-- An entry's end of life (time + period) minus `at`, in whole us (rounded up).
log_left = function(b, score, at)
  if b.q then
    local x, r = muldiv(score, b.q, 1000)
    if r > 0 then x = x + 1 end
    return x + b.period - at
  end
  return score + b.period - at
end

--@part fmt
-- '%d' is exact and cheaper; '%.0f' (as before) beyond 2^53.
local function fmt(n)
  if n < 9007199254740992 and n > -9007199254740992 then return sformat('%d', n) end
  return sformat('%.0f', n)
end

--@part write
-- Both keys of log band b live until its newest entry (score `newest`)
-- expires (at least 1 us) + MARGIN_MS; the meta is "total latest" (uses fmt).
local e = log_left(b, newest, now)
local ms = dceil(e > 1 and e or 1, 1000) + MARGIN_MS
if ms >= 1e17 then ms = sformat('%.0f', ms) end
rcall('SET', b.meta, fmt(total) .. ' ' .. fmt(latest), 'PX', ms)
rcall('PEXPIRE', b.key, ms)
