-- Divide and conquer: a merge sort. A list longer than the cut-off is
-- halved, both halves sorted (anywhere in the cluster), and the sorted
-- halves merged.
-- usage: synodic run [--nodes N] examples/skel/mergesort.lua [count] [cutoff]
local skel = require "synodic.skel"

local count = math.tointeger(tonumber(arg[1])) or 100000
local cutoff = math.tointeger(tonumber(arg[2])) or 5000

local function trivial(list) return #list <= cutoff end
local function solve(list) table.sort(list) return list end
local function divide(list)
  local half = #list // 2
  return {table.move(list, 1, half, 1, {}), table.move(list, half + 1, #list, 1, {})}
end
local function combine(sorted)
  local a, b, out, i, j = sorted[1], sorted[2], {}, 1, 1
  while i <= #a or j <= #b do
    if j > #b or (i <= #a and a[i] <= b[j]) then
      out[#out + 1], i = a[i], i + 1
    else
      out[#out + 1], j = b[j], j + 1
    end
  end
  return out
end

local seed = 42
local list = {}
for k = 1, count do
  seed = (seed * 1103515245 + 12345) % 2147483648
  list[k] = seed
end
local sorted = skel.run(skel.dc(trivial, solve, divide, combine), {list})[1]
for k = 2, #sorted do assert(sorted[k - 1] <= sorted[k], "not sorted") end
print(("sorted %d numbers (halves of at most %d sorted directly): first %d, last %d"):format(#sorted, cutoff, sorted[1], sorted[#sorted]))
