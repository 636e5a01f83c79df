-- tostring of integers and table.concat of a list keep Lua 5.4.8's results
-- on the fast paths Synodic adds (vendor/README.md, the ninth change):
-- digits written two at a time, present integer and string fields read
-- without the stack, and __index still asked for absent ones.
local cases = {0, 1, -1, 9, 10, 11, 99, 100, 101, 999, 1000, -10, -99, -100, math.maxinteger, math.mininteger, math.maxinteger - 1, math.mininteger + 1}
for i = 1, 50000 do
  local e = math.random(0, 63)
  local v = math.random(math.mininteger, math.maxinteger) >> (63 - e)
  if math.random() < 0.5 then v = -v end
  cases[#cases + 1] = v
end
for _, v in ipairs(cases) do
  local a, b = tostring(v), string.format("%d", v)
  assert(a == b, a .. " ~= " .. b)
  assert(table.concat({v, v}, ",") == b .. "," .. b)
  assert(table.concat({v}) == b)
end
-- mixed fields, separators, ranges, floats, metatables
assert(table.concat({1, "a", 2.5, -3}, "") == "1a2.5-3")
assert(table.concat({1, 2, 3}, ", ", 2, 3) == "2, 3")
assert(table.concat({}, "x") == "")
local p = setmetatable({}, {__index = function(_, i) return i * 10 end})
assert(table.concat(p, "-", 1, 3) == "10-20-30")
local q = setmetatable({1, nil, 3}, {__index = function(_, i) return "m" .. i end})
assert(table.concat(q, ",", 1, 3) == "1,m2,3")
local ok, err = pcall(table.concat, {1, {}, 3})
assert(not ok and err:find("invalid value %(table%) at index 2"), err)
local big = {}
for i = 1, 10000 do big[i] = (i % 3 == 0) and ("s" .. i) or i end
local s = table.concat(big, "\n")
local parts = {}
for w in (s .. "\n"):gmatch("(.-)\n") do parts[#parts + 1] = w end
assert(#parts == 10000 and parts[3] == "s3" and parts[10000] == "10000")
print("concat_numbers ok")
