-- lib/acquire.lua: the body of acquire.lua after its arguments, in parts
-- (`--@include lib/acquire.lua <part>`), shared with batch.lua, which runs
-- the load and the decision once per acquire or charge item, inside a
-- function (so a `return` here is the script's reply in acquire.lua and the
-- item's in batch.lua). They use the script's locals: bands, nb, now, W,
-- wanted, minimum, charge, max_debt, max_borrow, grant_key (false, or the
-- lease key to record a grant under) and h (the release horizon, with a
-- grant_key), has_* and the helpers of lib/args.lua and lib/arith.lua.

--@part band
-- Inside the loop over the bands, after lib/band.lua: band i's table, the
-- fields its kind uses: kind, key, limit, period, burst, stamp (none for a
-- log); gcra/step: p, l, tol (see lib/band.lua); fixed/counter/log: offset, aligned; log: meta,
-- granule, goff, q, max_entries, and its state (prune: the expired entries
-- to remove, see LOG.load).
if kind == 'gcra' then
  -- The state fields are set by the load (declared here: no rehash).
  bands[i] = {kind = kind, key = key, limit = limit, period = period, burst = burst,
              p = p, l = l, tol = tol, stamp = stamp, far = false, d = 0, tn = 0,
              f = 0, allowed = 0}
elseif kind == 'step' then
  has_step = true
  bands[i] = {kind = kind, key = key, limit = limit, period = period, burst = burst,
              p = p, l = l, stamp = stamp, tokens = 0, anchor = 0}
else
  local offset = off % period  -- exact: |off| <= 2^51
  has_window = true
  if kind == 'fixed' then
    bands[i] = {kind = 'fixed', key = key, limit = limit, period = period, burst = limit,
                offset = offset, aligned = anchor == 'aligned', stamp = stamp,
                start = 0, count = 0, left = 0}
  elseif kind == 'counter' then
    has_counter = true
    bands[i] = {kind = 'counter', key = key, limit = limit, period = period,
                burst = limit, offset = offset, aligned = anchor == 'aligned',
                stamp = stamp, start = 0, prev = 0, cur = 0, w = 0}
  else
    has_log = true
    bands[i] = {kind = 'log', key = key, meta = meta, limit = limit, period = period,
                burst = limit, offset = offset, aligned = anchor == 'aligned',
                granule = granule, goff = goff, q = q, max_entries = max_entries,
                total = 0, latest = 0, at = 0, count = 0, newest_score = false,
                newest_tokens = false, newest_member = false, prune = false,
                dead = 0}
  end
end

--@part helpers
---------------------------------------------------------------------------
-- Per band kind, a state s (a table) is loaded and normalised to `now`;
-- admits(b, s, cost) says whether cost fits; eval(b, s, cost) returns
-- admit, remaining, wait, reset (and for commit the new debt / tokens);
-- commit(b, s, cost, x) stores the grant. W is the borrowing allowance
-- min(max_wait, max_borrow) in microseconds.
--
-- gcra: state "t f l": TAT = t + f / l us, f in [0, l). s.d = TAT - now in
--   units of 1/l us (the debt); a token costs p units.
-- step: "tokens anchor" (tokens < 0 while borrowed).
-- fixed: "start count".
-- counter: "start prev cur" (start aligned). The estimate is
--   prev * (P - e) / P + cur; w = ceil(prev * (P - e) / P) makes the
--   integer test "cur + cost + w <= limit" exact.
-- log: a ZSET of grants, one member "<score>:<tokens>" per distinct record
--   time (score = time in us, or quantum index k for time k * q ns), plus
--   "{tag}:b<i>:m" = "total latest". See LOG below.

-- Helpers made only when a band of their kind is present (a closure costs).
local aligned_start, step_wait, counter_reset
if has_window then
  aligned_start = function(t, len, off)
    if t >= off then return off + dfloor(t - off, len) * len end
    return off - len
  end
end
if has_step then
  -- Stepwise: time until `tokens` reaches target.
  step_wait = function(b, tokens, anchor, target)
    if tokens >= target then return 0 end
    local w = anchor + dceil(target - tokens, b.limit) * b.period - now
    return w > 0 and w or 0
  end
end
if has_counter then
  -- Sliding counter: time until the window's counts stop mattering.
  counter_reset = function(b, s, final_cur)
    if final_cur > 0 then return s.start + 2 * b.period - now end
    if s.prev > 0 then
      local x = s.start + b.period - now
      return x > 0 and x or 0
    end
    return 0
  end
end

local LOG  -- the sliding-log functions, made only when a band needs them
local parse_member, log_left
if has_log then
  --@include lib/log.lua helpers
  --@include lib/log.lua fmt
  -- Where a grant evaluated at s.at is recorded (score).
  local function record_score(b, s)
    local t = s.at
    if b.granule > 0 then
      t = aligned_start(t, b.granule, b.goff)
    elseif b.q then
      local r
      t, r = muldiv(t, 1000, b.q)
      if r > 0 then t = t + 1 end
    end
    if s.count > 0 and s.newest_score > t then t = s.newest_score end
    return t
  end
  -- The error reply of a member that is no "<score>:<tokens>" entry.
  local function bad_member(key, m)
    return {err = ERR .. 'key \'' .. key .. '\' holds the member \'' ..
            string.sub(m, 1, 64) .. '\', not a tokenlease log entry; ' ..
            'delete or rename it'}
  end
  -- Loads band b's state into b; returns the error reply of a key of
  -- another type or of a corrupt state, else nothing. It only reads, and
  -- it checks every member a later step of the call reads (the newest; the
  -- two oldest live ones of a full log, which a grant folds): the expired
  -- entries are removed by prune_all just before the first write, so a
  -- failing call leaves no trace.
  local function load(b)
    -- ZCARD is the type check (an error reply on a key of another type).
    local count = rpcall('ZCARD', b.key)
    if type(count) == 'table' then
      local key, want = b.key, 'zset'
      --@include lib/state.lua wrongtype
    end
    -- The meta "total latest".
    local key = b.meta
    --@include lib/state.lua read
    local total, latest = x, y
    local s = b  -- the state lives in the band table
    s.total = 0; s.latest = now; s.at = 0; s.count = 0
    s.newest_score = false; s.newest_tokens = false; s.newest_member = false
    s.prune = false; s.dead = 0
    if total then
      s.total = total; s.latest = math.max(latest, now)
    else  -- no meta (deleted by hand?): count what the log holds
      for _, m in ipairs(rcall('ZRANGE', b.key, 0, -1)) do
        local _, tok = parse_member(m)
        if not tok then return bad_member(b.key, m) end
        s.total = s.total + tok
      end
    end
    local at = s.latest  -- expiry is irreversible: evaluate at the latest time
    s.at = at
    if at - b.period >= 0 then
      local kmax = at - b.period
      if b.q then kmax = (muldiv(kmax, 1000, b.q)) end
      if kmax >= 1e17 then kmax = sformat('%.0f', kmax) end
      local dead = rcall('ZRANGEBYSCORE', b.key, '-inf', kmax)
      for _, m in ipairs(dead) do
        local _, tok = parse_member(m)
        if not tok then return bad_member(b.key, m) end
        s.total = s.total - tok
      end
      if #dead > 0 then
        s.prune = kmax  -- prune_all removes exactly `dead`
        s.dead = #dead  -- until then, the live entries start at index #dead
        count = count - #dead
      end
    end
    s.count = count
    if s.count == 0 then s.total = 0 end
    if s.count > 0 then
      -- The newest entry is not expired (count > 0): the same before or
      -- after the pruning.
      local last = rcall('ZRANGE', b.key, -1, -1)
      s.newest_score, s.newest_tokens = parse_member(last[1])
      s.newest_member = last[1]
      if not s.newest_tokens then return bad_member(b.key, last[1]) end
      if count > b.max_entries then  -- a grant folds the two oldest
        for _, m in ipairs(rcall('ZRANGE', b.key, s.dead, s.dead + 1)) do
          if not parse_member(m) then return bad_member(b.key, m) end
        end
      end
    end
  end
  -- Removes the expired entries the loads found: just before the call's
  -- (or item's) first write.
  local function prune_all()
    for i = 1, nb do
      local b = bands[i]
      if b.prune then rcall('ZREMRANGEBYSCORE', b.key, '-inf', b.prune) end
    end
  end
  local function eval(b, s, cost)
    local newest = s.count > 0 and log_left(b, s.newest_score, now) or 0
    if s.total + cost <= b.limit then
      return true, b.limit - s.total - cost, 0,
             cost > 0 and log_left(b, record_score(b, s), now) or newest
    end
    local rem = b.limit - s.total
    if rem < 0 then rem = 0 end
    if cost > b.limit then return false, rem, -1, newest end
    local must = s.total + cost - b.limit
    local expired, from = 0, 0
    -- Reads only (the expired entries are still there: skipped). A foreign
    -- member is the error reply, as the 5th value.
    while from < s.count do  -- bounded: at most max_log_entries + 1 entries
      local page = rcall('ZRANGE', b.key, s.dead + from, s.dead + from + 127)
      if #page == 0 then break end
      for _, m in ipairs(page) do
        local sc, tok = parse_member(m)
        if not tok then return false, rem, 0, newest, bad_member(b.key, m) end
        expired = expired + tok
        if expired >= must then
          local w = log_left(b, sc, now)
          return false, rem, w > 0 and w or 0, newest
        end
      end
      from = from + 128
    end
    return false, rem, 0, newest
  end
  local function save(b, s)
    if s.count == 0 then
      rcall('DEL', b.key, b.meta)
      return
    end
    local newest, total, latest = s.newest_score, s.total, s.latest
    --@include lib/log.lua write
  end
  local function save_all()
    for i = 1, nb do
      if bands[i].kind == 'log' then save(bands[i], bands[i]) end
    end
  end
  local function record(b, s, cost)
    if cost <= 0 then return end
    local t = record_score(b, s)
    s.total = s.total + cost
    if s.count > 0 and t == s.newest_score then
      rcall('ZREM', b.key, s.newest_member)
      s.newest_tokens = s.newest_tokens + cost
    else
      -- Up to max_log_entries + 1 entries; beyond, fold the oldest into the
      -- next one (its tokens then count longer: stricter, never looser).
      if s.count > b.max_entries then
        local two = rcall('ZRANGE', b.key, 0, 1)
        local _, t0 = parse_member(two[1])
        local sc1, t1 = parse_member(two[2])
        rcall('ZREM', b.key, two[1], two[2])
        rcall('ZADD', b.key, fmt(sc1), fmt(sc1) .. ':' .. fmt(t0 + t1))
        s.count = s.count - 1
      end
      s.count = s.count + 1
      s.newest_tokens = cost
    end
    s.newest_score = t
    local ts = fmt(t)
    s.newest_member = ts .. ':' .. fmt(s.newest_tokens)
    rcall('ZADD', b.key, ts, s.newest_member)
  end
  -- One constructor: adding fields one by one would rehash the table.
  LOG = {load = load, prune_all = prune_all, eval = eval, save = save,
         save_all = save_all, record = record}
end

--@part load
-- Load every band's state: reads only (the first error reply leaves every
-- key as it was). The logs' pruning waits for the first write.

-- The state of a band lives in its table (fewer tables per call): states[i]
-- is bands[i].
local states = bands
for i = 1, nb do
  local b = bands[i]
  local kind = b.kind
  if kind == 'log' then
    local e = LOG.load(b)
    if e then return e end
  else
    local key = b.key
    --@include lib/state.lua read
    if x == nil and empty_since and empty_since <= now then
      -- No state in a Redis whose tokenlease state began at empty_since
      -- (new, or emptied): the key counts as drained then, not as fresh.
      -- Each call that finds no state derives the same state, so the
      -- first write keeps it consistent.
      if kind == 'gcra' then  -- TAT = empty_since + tol / l us
        y = b.tol % b.l; x = empty_since + (b.tol - y) / b.l; z = b.l
      elseif kind == 'step' then  -- no tokens, steps counted from then
        x = 0; y = empty_since
      elseif kind == 'fixed' then  -- that window's limit used
        x = b.aligned and aligned_start(empty_since, b.period, b.offset) or
            empty_since
        y = b.limit
      else  -- counter: that window's count at the limit
        x = aligned_start(empty_since, b.period, b.offset); y = 0; z = b.limit
      end
    end
    if kind == 'gcra' then
      local t, f, l = x, y, z
      local far, d, tn = false, 0, 0
      if t and t >= now then
        --@include lib/state.lua gcra
        tn = t - now
        if tn * b.l >= 2251799813685248 then  -- far ahead (clock stepped back): deny all
          far = true
        else
          d = tn * b.l + f
        end
      end
      b.far = far; b.d = d; b.tn = tn; b.f = f; b.allowed = b.tol + W * b.l
    elseif kind == 'step' then
      local tokens, anchor = x, y
      if not tokens then tokens = b.burst; anchor = now end
      --@include lib/state.lua step
      b.tokens = tokens; b.anchor = anchor
    elseif kind == 'fixed' then
      local start, count = x, y
      if not start then count = 0 end
      if start == nil or now - start >= b.period then  -- before start: same window
        start = b.aligned and aligned_start(now, b.period, b.offset) or now
        count = 0
      end
      b.start = start; b.count = count; b.left = start + b.period - now
    else  -- counter
      local start, prev, cur = x, y, z
      local P = b.period
      if not start then prev = 0; cur = 0 end
      local since = start and now - start or 2 * P
      if since >= P then
        if since < 2 * P then
          prev = cur; start = start + P
        else
          prev = 0; start = aligned_start(now, P, b.offset)
        end
        cur = 0
      end
      local el = now - start
      if el < 0 then el = 0 end
      local w = 0
      if prev > 0 then
        local r
        w, r = muldiv(prev, P - el, P)
        if r > 0 then w = w + 1 end
      end
      b.start = start; b.prev = prev; b.cur = cur; b.w = w
    end
  end
end

--@part commit
-- Stores the grant of `cost` (x: gcra the new debt, step the tokens after).
local function commit(b, s, cost, x)
  local kind = b.kind
  local reset, f1, f2, f3
  if kind == 'gcra' then
    if x <= 0 then rcall('DEL', b.key); return end
    local whole, frac = muldiv(x, 1, b.l)
    reset, f1, f2, f3 = dceil(x, b.l), now + whole, frac, b.l
  elseif kind == 'step' then
    s.tokens = x
    reset, f1, f2 = step_wait(b, x, s.anchor, b.burst), x, s.anchor
  elseif kind == 'fixed' then
    local count = s.count + cost
    s.count = count
    reset, f1, f2 = count > 0 and s.left or 0, s.start, count
  elseif kind == 'counter' then
    local cur = s.cur + cost
    s.cur = cur
    reset, f1, f2, f3 = counter_reset(b, s, cur), s.start, s.prev, cur
  else
    LOG.record(b, s, cost)
    return
  end
  --@include lib/state.lua write
end

--@part charge
if charge == 1 then
  if has_log then LOG.prune_all() end  -- every key read: writes may come
  local charged, remaining, reset = wanted, nil, 0
  for i = 1, nb do
    local b, s = bands[i], states[i]
    local kind, take, rem, rst = b.kind, 0
    -- Charge up to `wanted` within max_debt.
    if kind == 'gcra' then
      if not s.far then
        -- Debt stays below 2^51 units so that every later load is exact.
        local cap = b.tol + max_debt * b.p
        if cap > 2251799813685248 then cap = 2251799813685248 end
        if s.d < cap then
          take = dfloor(cap - s.d, b.p)
          if wanted < take then take = wanted end
        end
        if take > 0 then s.d = s.d + take * b.p; commit(b, s, take, s.d) end
      end
    elseif kind == 'step' then
      -- Keep the time to refill below 2^51 us (exact arithmetic).
      local md = max_debt
      local max_steps = dfloor(2251799813685248 - max_borrow, b.period) - 1
      if dceil(md + b.burst, b.limit) > max_steps then
        md = max_steps * b.limit - b.burst
        if md < 0 then md = 0 end
      end
      take = s.tokens + md
      if wanted < take then take = wanted end
      if take < 0 then take = 0 end
      if take > 0 then commit(b, s, take, s.tokens - take) end
    else
      if kind == 'fixed' then
        take = b.limit + max_debt - s.count
      elseif kind == 'counter' then
        take = b.limit + max_debt - s.w - s.cur
      else
        take = b.limit + max_debt - s.total
      end
      if wanted < take then take = wanted end
      if take < 0 then take = 0 end
      if take > 0 then commit(b, s, take) end
    end
    if take < charged then charged = take end
    -- remaining, reset of the state after it.
    if kind == 'gcra' then
      if s.far then
        rem, rst = 0, s.tn + (s.f > 0 and 1 or 0)
      else
        rem, rst = s.d <= b.tol and dfloor(b.tol - s.d, b.p) or 0, dceil(s.d, b.l)
      end
    elseif kind == 'step' then
      rem, rst = s.tokens > 0 and s.tokens or 0, step_wait(b, s.tokens, s.anchor, b.burst)
    elseif kind == 'fixed' then
      rem, rst = b.limit - s.count, s.count > 0 and s.left or 0
    elseif kind == 'counter' then
      rem, rst = b.limit - s.cur - s.w, counter_reset(b, s, s.cur)
    else
      rem, rst = b.limit - s.total, s.count > 0 and log_left(b, s.newest_score, now) or 0
    end
    if rem < 0 then rem = 0 end
    if remaining == nil or rem < remaining then remaining = rem end
    if rst > reset then reset = rst end
  end
  if has_log then LOG.save_all() end
  return {charged, remaining, 0, reset, now, 0}
end

--@part admits
local function admits(b, s, cost)
  local kind = b.kind
  if kind == 'gcra' then
    if s.far then return false end
    local need = cost * b.p
    return need < 4503599627370496 and need <= s.allowed - s.d
  elseif kind == 'step' then
    local after = s.tokens - cost
    if after >= 0 then return true end
    if W <= 0 then return false end
    return step_wait(b, after, s.anchor, 0) <= W
  elseif kind == 'fixed' then
    return s.count + cost <= b.limit
  elseif kind == 'counter' then
    return s.cur + cost + s.w <= b.limit
  end
  return s.total + cost <= b.limit
end

-- admit, remaining, wait, reset, x (gcra: new debt; step: tokens after).
local function eval(b, s, cost)
  local kind = b.kind
  if kind == 'gcra' then
    local need = cost * b.p
    if need >= 4503599627370496 then need = nil end
    local tol = b.tol
    if s.far then
      local wait = -1
      if cost <= b.burst then
        local a = s.f + need - tol
        wait = s.tn + (a >= 0 and dceil(a, b.l) or -dfloor(-a, b.l))
      end
      return false, 0, wait, s.tn + (s.f > 0 and 1 or 0)
    end
    local d = s.d
    if need ~= nil and need <= s.allowed - d then
      local nd = d + need
      if nd <= tol then
        return true, dfloor(tol - nd, b.p), 0, dceil(nd, b.l), nd
      end
      return true, 0, dceil(nd - tol, b.l), dceil(nd, b.l), nd
    end
    return false, d <= tol and dfloor(tol - d, b.p) or 0,
           cost > b.burst and -1 or dceil(d + need - tol, b.l), dceil(d, b.l)
  elseif kind == 'step' then
    local tokens, anchor = s.tokens, s.anchor
    local after = tokens - cost
    if admits(b, s, cost) then
      return true, after > 0 and after or 0,
             after >= 0 and 0 or step_wait(b, after, anchor, 0),
             step_wait(b, after, anchor, b.burst), after
    end
    return false, tokens > 0 and tokens or 0,
           cost > b.burst and -1 or step_wait(b, tokens, anchor, cost),
           step_wait(b, tokens, anchor, b.burst)
  elseif kind == 'fixed' then
    local count, limit = s.count, b.limit
    if count + cost <= limit then
      return true, limit - count - cost, 0, count + cost > 0 and s.left or 0
    end
    return false, limit - count > 0 and limit - count or 0,
           cost > limit and -1 or s.left, count > 0 and s.left or 0
  elseif kind == 'counter' then
    local cur, w, limit = s.cur, s.w, b.limit
    local after = cur + cost
    if after + w <= limit then
      local x = limit - after - w
      return true, x > 0 and x or 0, 0, counter_reset(b, s, after)
    end
    local x = limit - cur - w
    local wait
    if cost > limit then
      wait = -1
    else
      -- Smallest e in [0, P] with weight * (P - e) <= room * P.
      local P, weight, room, base = b.period
      if after <= limit then
        weight, room, base = s.prev, limit - after, s.start
      else
        weight, room, base = cur, limit - cost, s.start + P
      end
      local span = (muldiv(room, P, weight))
      wait = base + (span >= P and 0 or P - span) - now
      if wait < 0 then wait = 0 end
    end
    return false, x > 0 and x or 0, wait, counter_reset(b, s, cur)
  end
  return LOG.eval(b, s, cost)
end

--@part decide
local admitted = true
for i = 1, nb do
  if not admits(bands[i], states[i], minimum) then admitted = false; break end
end

if admitted then
  -- The largest amount in [minimum, wanted] every band admits (admission is
  -- monotone in the cost), by bisection: at most 51 steps.
  local lo, hi = minimum, wanted
  while lo < hi do
    local d = hi - lo
    local mid = lo + (d - d % 2) / 2 + d % 2  -- lo + ceil((hi - lo) / 2)
    local ok = true
    for i = 1, nb do
      if not admits(bands[i], states[i], mid) then ok = false; break end
    end
    if ok then lo = mid else hi = mid - 1 end
  end
  if has_log then LOG.prune_all() end  -- every key read: writes may come
  local remaining, reset, wait = nil, 0, 0
  for i = 1, nb do
    local b, s = bands[i], states[i]
    local _, rem, w, rst, x = eval(b, s, lo)
    if lo > 0 then commit(b, s, lo, x) end
    if remaining == nil or rem < remaining then remaining = rem end
    if rst > reset then reset = rst end
    if w > wait then wait = w end
  end
  if has_log then LOG.save_all() end
  if grant_key and lo > 0 then
    -- The grant, for release.lua (lib/release.lua start): "<tokens>
    -- <now_us>" until its release horizon. '%d' is exact: both < 2^53.
    local ms = dceil(h, 1000) + MARGIN_MS
    rcall('SET', grant_key, sformat('%d %d', lo, now), 'PX',
          ms < 1e17 and ms or sformat('%.0f', ms))
  end
  return {lo, remaining, 0, reset, now, wait}
end

-- Denied: nothing is charged; bands that would have admitted report their
-- state without this request, the others how long until it fits. The
-- evaluations only read (a log's 5th value: the error reply of a foreign
-- member found looking for the entry that frees room).
local remaining, reset, retry = nil, 0, 0
for i = 1, nb do
  local b, s = bands[i], states[i]
  local admit, rem, w, rst, e = eval(b, s, minimum)
  if admit then admit, rem, w, rst, e = eval(b, s, 0) end
  if not admit and e then return e end
  if remaining == nil or rem < remaining then remaining = rem end
  if rst > reset then reset = rst end
  if not admit and retry ~= -1 then
    if w == -1 then retry = -1 elseif w > retry then retry = w end
  end
end
if has_log then LOG.prune_all(); LOG.save_all() end
return {0, remaining, retry, reset, now, 0}
