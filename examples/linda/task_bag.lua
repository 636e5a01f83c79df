-- Master and workers around a bag of tasks: the master puts tasks in the
-- space, workers take them and put results back, and a poison pill per
-- worker ends them. Work is balanced by whoever is free taking the next task.
-- usage: synodic run examples/linda/task_bag.lua [tasks] [workers]
local s = require "synodic"
local linda = require "synodic.linda"
local TASKS = math.tointeger(tonumber(arg[1])) or 200
local WORKERS = math.tointeger(tonumber(arg[2])) or 4
local bag = linda.new()

-- The task: the longest Collatz chain among the starts 1 .. 500 + n % 500
-- (stands for real work of about a millisecond).
local function work(n)
  local longest = 0
  for start = 1, 500 + n % 500 do
    local x, steps = start, 0
    while x ~= 1 do
      x = (x % 2 == 0) and x // 2 or 3 * x + 1
      steps = steps + 1
    end
    if steps > longest then longest = steps end
  end
  return longest
end

for id = 1, WORKERS do
  s.spawn(function(bag, id)
    local done = 0
    while true do
      local _, n = bag:take("task", linda.int)
      if n < 0 then break end
      bag:out("result", n, work(n))
      done = done + 1
    end
    bag:out("worker done", id, done)
  end, bag, id)
end

for n = 1, TASKS do bag:out("task", n) end
local total, expected = 0, 0
for _ = 1, TASKS do
  local _, _, r = bag:take("result", linda.int, linda.int)
  total = total + r
end
for n = 1, TASKS do expected = expected + work(n) end
for _ = 1, WORKERS do bag:out("task", -1) end
local shares = {}
for _ = 1, WORKERS do
  local _, id, done = bag:take("worker done", linda.int, linda.int)
  shares[id] = done
end
assert(total == expected, "results do not add up")
print(string.format("%d tasks, %d workers (%s tasks each), longest chains add up to %d", TASKS, WORKERS, table.concat(shares, "/"), total))
