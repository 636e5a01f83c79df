-- synodic-args: --workers 1
-- A node left idle rests its monitor (no ticks while every worker is
-- parked), and the first run after the rest is preempted on time all the
-- same: the worker that leaves its park wakes the monitor. Each round the
-- node is idle for 0.2 s or more (longer than the monitor's longest rest,
-- 100 ms; a little longer each round, so that the ends of the idle spells
-- fall all over the monitor's rests), then a process computes for ever on
-- the only worker while the main process waits 1 ms: the main process is
-- back within a few slices, not when the monitor's rest would have ended.
local s = require "synodic"
local late = {}
for round = 1, 8 do
  s.sleep(0.2 + round * 0.013)
  local spinner = s.spawn(function() while true do end end)
  local t = s.clock()
  s.sleep(0.001)
  late[round] = s.clock() - t
  s.kill(spinner)
end
table.sort(late)
local median = late[#late // 2]
print(string.format("back after %.2f ms (median of %d; %.2f .. %.2f)", median * 1e3, #late, late[1] * 1e3, late[#late] * 1e3))
assert(median < 0.008, "the first slice after an idle spell ran on: " .. median)
print("slice_after_idle ok")
