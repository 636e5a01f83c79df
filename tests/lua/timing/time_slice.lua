-- synodic-args: --workers 1
-- The time slice is 2 ms: a process that computes is preempted 1.5 to 2 ms
-- into its run (docs/processes.md). Busy processes share one worker; two of
-- them watch the clock, and a jump in it is a time they were not running (a
-- third spins for ever, so that a watcher never runs alone). A jump while
-- the node used the processor (its processor time, control.node_cpu, moved
-- too) is another process's turn; one while it did not is the machine
-- running something else, and is not counted. The median run between turns
-- is the slice.
local s = require "synodic"
local node_cpu = require("synodic.control").node_cpu
local me = s.self()

local function busy()
  local runs, start, last, last_cpu = {}, s.clock(), s.clock(), node_cpu()
  while #runs < 60 do
    local now, cpu = s.clock(), node_cpu()
    local gap = now - last
    if gap > 0.0005 and cpu - last_cpu > 0.3 * gap then -- another process's turn
      runs[#runs + 1] = last - start
      start = now
    end
    last, last_cpu = now, cpu
  end
  s.send(me, runs)
end
s.spawn(function() while true do end end)
s.spawn(busy)
s.spawn(busy)
local all = {}
for _ = 1, 2 do
  for _, r in ipairs(s.receive()) do all[#all + 1] = r end
end
table.sort(all)
local median = all[#all // 2]
print(string.format("median run %.2f ms over %d runs", median * 1e3, #all))
assert(median > 0.0012 and median < 0.0035, "the slice is not 2 ms: " .. median)
print("time_slice ok")
