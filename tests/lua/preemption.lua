-- synodic-args: --workers 1
-- Busy processes are preempted: with a single worker, a ping-pong pair keeps
-- going while two processes spin forever.
local s = require "synodic"
local testkit = require "testkit"
local me = s.self()
for _ = 1, 2 do
  s.spawn(function() local x = 0 while true do x = x + 1 end end)
end
testkit.ping_pong(200)
-- The main process itself is preempted too, without losing its place.
local x = 0
for i = 1, 3e6 do x = x + i end
assert(x == 3e6 * (3e6 + 1) / 2)
print("preemption ok")
