-- Figure 1 of the Linda paper: each of np live tuples (eval) gets a unique
-- identifier from a shared counter; main collects them.
-- usage: synodic run examples/linda/unique_ids.lua [np]
local linda = require "synodic.linda"
local ts = linda.new()
local np = math.tointeger(tonumber(arg[1])) or 5

local function worker()
  local _, n = ts:rd("np", linda.int)
  local _, j = ts:take("count", linda.int) -- nobody else can read the counter now
  ts:out("count", j + 1)
  print(string.format("%d of %d.", j, n))
  return j
end

ts:out("np", np)
ts:out("count", 1)
for _ = 1, np do ts:eval("worker", worker) end
local ids = {}
for _ = 1, np do
  local _, j = ts:take("worker", linda.int)
  print(string.format("%d done.", j))
  ids[#ids + 1] = j
end
table.sort(ids)
print("identifiers: " .. table.concat(ids, " "))
