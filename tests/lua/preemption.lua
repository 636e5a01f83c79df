-- synodic-args: --workers 1
-- Busy processes are preempted: with a single worker, a ping-pong pair keeps
-- going while two processes spin forever.
local s = require "synodic"
local me = s.self()
for _ = 1, 2 do
  s.spawn(function() local x = 0 while true do x = x + 1 end end)
end
local ponger = s.spawn(function()
  while true do
    local from, n = s.receive()
    s.send(from, n + 1)
  end
end)
local n = 0
for _ = 1, 200 do
  s.send(ponger, me, n)
  n = s.receive()
end
assert(n == 200)
-- The main process itself is preempted too, without losing its place.
local x = 0
for i = 1, 3e6 do x = x + i end
assert(x == 3e6 * (3e6 + 1) / 2)
print("preemption ok")
