-- alua.tostring: Lua source that rebuilds a value exactly, checked on
-- randomly generated values.
local tostr = alua.tostring

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "number" then
    if math.type(a) ~= math.type(b) then return false end
    if a ~= a then return b ~= b end
    if a == 0 and b == 0 then return 1 / a == 1 / b end
    return a == b
  end
  if type(a) ~= "table" then return a == b end
  for k, v in pairs(a) do
    if not same(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

math.randomseed(42)
local specials = {0.0, -0.0, 1 / 0, -1 / 0, 0 / 0, math.pi, -1e-300, 5e-324, 1.7976931348623157e308,
  math.mininteger, math.maxinteger, 0, -1, 3, 3.0, 2 ^ 53, 2 ^ 53 + 1}

local function random_string()
  local n = math.random(0, 20)
  local bytes = {}
  for i = 1, n do bytes[i] = math.random(0, 255) end
  return string.char(table.unpack(bytes))
end

local function random_value(depth)
  local r = math.random(1, depth > 3 and 6 or 8)
  if r == 1 then return specials[math.random(#specials)]
  elseif r == 2 then return math.random(math.mininteger, math.maxinteger)
  elseif r == 3 then return (math.random() - 0.5) * 10 ^ math.random(-300, 300)
  elseif r == 4 then return random_string()
  elseif r == 5 then return math.random() < 0.5
  elseif r == 6 then return math.random(-1000, 1000)
  else
    local t = {}
    -- Keys are scalars: a rebuilt table key is a new object, so no
    -- comparison by key could find it.
    for _ = 1, math.random(0, 6) do
      local k = random_value(4)
      if k ~= nil and k == k then t[k] = random_value(depth + 1) end
    end
    for i = 1, math.random(0, 4) do t[i] = random_value(depth + 1) end
    return t
  end
end

for i = 1, 2000 do
  local v = random_value(0)
  local src = tostr(v)
  local back = load("return " .. src, "=tostring", "t")()
  assert(same(v, back), "value " .. i .. " did not survive: " .. src)
end

assert(tostr(nil) == "nil" and tostr(true) == "true")
local cyclic = {}
cyclic.me = cyclic
local ok, err = pcall(tostr, cyclic)
assert(not ok and err:find("contains itself"), err)
ok, err = pcall(tostr, print)
assert(not ok and err:find("cannot write a function"), err)
print("alua_tostring ok")
alua.exit()
