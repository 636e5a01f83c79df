-- kill: ends a process whatever it does (computing, waiting, trapping
-- exits, inside pcall, inside a C call once it returns) with "killed" or
-- the reason given; its monitors
-- and links see that reason; it ends quickly even when it computes.
local s = require "synodic"

local function down(pid)
  local _, who, why = s.receive_match(function(tag, who) return tag == "DOWN" and who == pid end, 5)
  assert(who == pid, "no DOWN for " .. tostring(pid))
  return why
end

-- Computing, inside pcall, trapping exits: killed all the same, soon.
local busy = s.spawn(function(me)
  local s = require "synodic"
  s.trap_exit(true)
  s.send(me, "computing")
  pcall(function() local x = 0 while true do x = x + 1 end end)
  s.send(me, "escaped")
end, s.self())
s.receive_match("computing", 5)
-- A listing shows it computing: processor time (in whole slices) and memory.
local control = require "synodic.control"
local seen
local t0 = s.clock()
repeat
  s.sleep(0.01)
  for _, p in ipairs(control.processes()) do
    if p.pid == busy and p.cpu > 0 and p.memory > 0 then seen = p end
  end
until seen or s.clock() - t0 > 5
assert(seen, "the computing process shows processor time and memory")
s.monitor(busy)
local t = s.clock()
assert(s.kill(busy) == true)
assert(down(busy) == "killed")
local took = s.clock() - t
print(("a computing process ended %.1f ms after kill"):format(took * 1000))
assert(took < 0.5, took)
assert(select("#", s.receive_match("escaped", 0.05)) == 0)

-- Waiting: killed with the reason given, which any value can be.
local waiting = s.spawn(function() s.receive() end)
s.monitor(waiting)
s.kill(waiting, {why = "enough"})
local r = down(waiting)
assert(type(r) == "table" and r.why == "enough")

-- Inside a C call (here one that blocks its thread): it ends when the call
-- returns, before any more of its Lua code runs.
local sleeper = s.spawn(function(me)
  local s = require "synodic"
  s.send(me, "sleeping")
  os.execute("sleep 0.3")
  s.send(me, "after the call")
end, s.self())
s.receive_match("sleeping", 5)
s.sleep(0.05)
s.monitor(sleeper)
t = s.clock()
s.kill(sleeper)
assert(down(sleeper) == "killed")
assert(s.clock() - t > 0.1, "not before the call returned")
assert(select("#", s.receive_match("after the call", 0.2)) == 0, "no Lua code ran after the call")

-- A pid that has ended: false.
assert(s.kill(waiting) == false)
-- kill(self) ends the caller like exit.
local selfish = s.spawn(function() local s = require "synodic"; s.kill(s.self(), "myself"); error("not reached") end)
s.monitor(selfish)
assert(down(selfish) == "myself")

-- Killing one process takes no other down.
local bystander = s.spawn(function(me) local s = require "synodic"; s.receive(); s.send(me, "still here") end, s.self())
for _ = 1, 50 do s.kill(s.spawn(function() s.receive() end)) end
s.send(bystander, "go")
assert(s.receive_match("still here", 5))
print("kill ok")
