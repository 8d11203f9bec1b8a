-- lib/release.lua: the body of release.lua after its bands, in parts
-- (`--@include lib/release.lua <part>`), shared with batch.lua, which runs
-- start, read and apply once per release item, inside a function (so a
-- `return` here is the script's reply in release.lua and the item's in
-- batch.lua). They use the script's locals: bands, nb, now, amount,
-- granted_at, dedup (the lease key, where acquire.lua recorded the grant),
-- max_borrow, st (a table for the states read), h (declared 0 by the
-- script, set by the part horizon), parse_member, log_left, log_rec (part
-- log_rec) and the helpers of lib/args.lua and lib/arith.lua.

--@part horizon
-- h = how long after its grant a lease may still be released: until the
-- band would have recovered the tokens anyway (the longest over the bands).
-- acquire.lua keeps a grant's record that long.
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

--@part start
-- The grant recorded under the lease key (acquire.lua with a lease key,
-- batch.lua's lease op): "<tokens granted> <granted_at_us>". No record,
-- nothing to give back: never granted under this key, released already,
-- or past its release horizon. At most the recorded tokens go back, into
-- the window of the recorded grant time (ARGV's granted_at_us is not
-- used).
local grant = rpcall('GET', dedup)
if not grant then return 0 end
if grant.err then
  local key, want = dedup, 'string'
  --@include lib/state.lua wrongtype
end
local gn, gt = smatch(grant, '^(%d+) (-?%d+)$')
gn, gt = tonumber(gn), tonumber(gt)
if not (gn and gt and gn < 9007199254740992 and gt > -9007199254740992 and
        gt < 9007199254740992) then
  return {err = ERR .. 'key \'' .. dedup .. '\' holds \'' .. string.sub(grant, 1, 64) ..
          '\', not a tokenlease grant record; delete or rename it'}
end
if amount > gn then amount = gn end
granted_at = gt
-- The time left to release the grant; nothing to do once it is past.
local left = granted_at + h - now
if amount == 0 or left <= 0 then return 0 end

--@part log_rec
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

--@part read
-- Read and check every state first: the reads are the type checks, and a
-- value that is no tokenlease state is the error reply (lib/state.lua
-- read), so a failing call writes nothing and marks nothing as applied. A
-- log band's first entry at or after the grant's record is read here too
-- (ZRANGEBYSCORE fails on a wrong type), and its two newest entries are
-- checked (the apply reads the newest left after taking from the first).
-- st[3i-2..3i] = the state's numbers (log: total, latest, first entry).
for i = 1, nb do
  local b = bands[i]
  local key, first = b.key, false
  if b.kind == 'log' then
    local rec = log_rec(b)
    if rec >= 1e17 then rec = sformat('%.0f', rec) end
    first = rpcall('ZRANGEBYSCORE', key, rec, '+inf', 'LIMIT', 0, 1)
    if first.err then
      local want = 'zset'
      --@include lib/state.lua wrongtype
    end
    local check = rcall('ZRANGE', key, -2, -1)
    check[#check + 1] = first[1]
    for _, m in ipairs(check) do
      if not parse_member(m) then
        return {err = ERR .. 'key \'' .. key .. '\' holds the member \'' ..
                string.sub(m, 1, 64) .. '\', not a tokenlease log entry; ' ..
                'delete or rename it'}
      end
    end
    key = b.meta
  end
  --@include lib/state.lua read
  if first then z = first end
  st[3 * i - 2] = x or false; st[3 * i - 1] = y or false; st[3 * i] = z or false
end


--@part apply
-- At most once: the record goes with the first release that applies, so a
-- release sent twice (a retry) gives back nothing the second time.
rcall('DEL', dedup)

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
      --@include lib/state.lua gcra
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
      --@include lib/state.lua step
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
        --@include lib/log.lua fmt
        rcall('ZREM', b.key, z[1])
        if tok > back then rcall('ZADD', b.key, fmt(sc), fmt(sc) .. ':' .. fmt(tok - back)) end
        total = total - back
        local last = rcall('ZRANGE', b.key, -1, -1)
        if #last == 0 then
          rcall('DEL', b.key, b.meta)
        else
          local newest = parse_member(last[1])
          --@include lib/log.lua write
        end
      end
    end
  end
  if back < 0 then back = 0 end
  if reset then
    --@include lib/state.lua write
  end
  if back < returned then returned = back end
end
return returned
