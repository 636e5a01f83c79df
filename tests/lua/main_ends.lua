-- synodic-limit: 20
-- The run ends when the main process ends, while others still run or wait:
-- one computes for ever, one waits for a message, one sleeps an hour. The
-- runner kills a run that outlives the limit above, so this script passes
-- only if the run ends with its main process.
local s = require "synodic"
local me = s.self()
local busy = s.spawn(function() s.send(me, "running") while true do end end)
local waiting = s.spawn(function() s.send(me, "waiting") s.receive() end)
local sleeping = s.spawn(function() s.send(me, "sleeping") s.sleep(3600) end)
local seen = {}
for _ = 1, 3 do seen[s.receive()] = true end
assert(seen.running and seen.waiting and seen.sleeping)
assert(s.is_alive(busy) and s.is_alive(waiting) and s.is_alive(sleeping))
print("main_ends ok")
