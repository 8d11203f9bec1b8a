-- lib/arith.lua, in acquire.lua, release.lua and batch.lua: exact integer
-- arithmetic on doubles (Lua numbers are doubles; integers are exact below
-- 2^53).

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
