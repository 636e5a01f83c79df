-- synodic-args: --workers 1
-- Preemption leaves a program's own debug hooks alone and costs the same
-- however deep the stack: arming it used to walk every frame (deep
-- recursions crawled), and disarming it deleted the program's hook after
-- one time slice.
local s = require "synodic"
local me = s.self()
s.spawn(function() while true do end end) -- so the main process is preempted

-- A line hook counting lines survives many slices of computation.
local lines = 0
local function counter(event) if event == "line" then lines = lines + 1 end end
debug.sethook(counter, "l")
local t0, x = s.clock(), 0
while s.clock() - t0 < 0.05 do x = x + 1 end -- 50 ms: about 25 slices
local hook, mask = debug.gethook()
debug.sethook()
assert(hook == counter and mask == "l", "the program's hook was replaced: " .. tostring(hook))
assert(lines >= x, "line events were lost: " .. lines .. " for " .. x .. " iterations")

-- A count hook too.
local counts = 0
debug.sethook(function() counts = counts + 1 end, "", 1000)
t0 = s.clock()
local y = 0
while s.clock() - t0 < 0.05 do y = y + 1 end
debug.sethook()
assert(counts > 0 and counts >= y * 4 // 1000 // 2, "count events were lost: " .. counts)

-- The same work at the bottom of a deep stack takes about as long as at the top.
local function work(n) local z = 0 for i = 1, n do z = z + i end return z end
local function timed_at(depth, n)
  if depth == 0 then
    local t = s.clock()
    work(n)
    return s.clock() - t
  end
  return (timed_at(depth - 1, n)) -- not a tail call: the frames stay
end
local N = 2e7
local shallow = timed_at(1, N)
local deep = timed_at(100000, N)
print(string.format("%.0f ms near the top, %.0f ms under 100,000 frames", shallow * 1e3, deep * 1e3))
assert(deep < shallow * 3 + 0.05, "a deep stack slows preempted code down")
print("preemption_hooks ok")
