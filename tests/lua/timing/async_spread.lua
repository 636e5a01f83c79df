-- synodic-args: --nodes 3
-- A burst of equal tasks spreads over the nodes: s.async and
-- async_on("any") count the tasks already sent to each node until it
-- reports its load again, so 30 tasks on 3 nodes give each 8 to 12.
-- A timing script: a report that lands in the middle of a burst (every
-- 500 ms, sooner when other tests slow the burst down) resets the count
-- of a node whose tasks are still on their way, and it gets more (a run
-- beside the other cluster scripts gave 10/13/7).
local s = require "synodic"

local function spin(ms)
  local s = require "synodic"
  local t = s.clock()
  while s.clock() - t < ms / 1000 do end
  return s.node()
end

for _, how in ipairs{"async", "async_on any"} do
  local futures = {}
  for i = 1, 30 do
    futures[i] = how == "async" and s.async(spin, 20) or s.async_on("any", spin, 20)
  end
  local count = {}
  for _, f in ipairs(futures) do
    local node = f:get()
    count[node] = (count[node] or 0) + 1
  end
  local shown = {}
  for _, node in ipairs(s.nodes()) do
    shown[#shown + 1] = tostring(count[node] or 0)
  end
  print(how .. ": " .. table.concat(shown, "/"))
  for _, node in ipairs(s.nodes()) do
    local n = count[node] or 0
    assert(n >= 8 and n <= 12, how .. " gave " .. node .. " " .. n .. " of 30 tasks: " .. table.concat(shown, "/"))
  end
  -- The next burst starts from settled loads.
  s.sleep(1.1)
end
print("async_spread ok")
