-- bench/cluster/heal.lua: how long a cluster takes to become one again
-- after a node comes back from a stall. A node is stopped (SIGSTOP) for
-- STALL seconds, long enough to be declared down; meanwhile both sides
-- give the name "svc" to a process of theirs and put tuples in the space
-- "jobs". From SIGCONT on, every node is asked what it sees until all
-- agree on the members, on the holder of "svc" and on the home of "jobs",
-- and "jobs" holds both sides' tuples; prints that time in ms.
-- usage: synodic run --nodes 3 heal.lua [STALL]
local s = require "synodic"
local linda = require "synodic.linda"
local stall = tonumber(arg[1]) or 10

local me = s.self()
local stalled
for _, n in ipairs(s.nodes()) do if n ~= s.node() then stalled = n end end

-- A viewer per node says what that node sees when asked.
local function viewer(boss)
  local s = require "synodic"
  while true do
    local _, ask = s.receive_match("view")
    local svc, home = s.whereis("svc"), s.whereis("$linda:jobs")
    s.send(boss, "seen", ask, s.node(), #s.nodes(), svc and s.node(svc) or "-", home and s.node(home) or "-")
  end
end
local viewers = {}
for _, n in ipairs(s.nodes()) do viewers[n] = s.spawn_on(n, viewer, me) end

local holder = s.spawn_on(stalled, function(boss)
  local s = require "synodic"
  local f = assert(io.open("/proc/self/stat"))
  local os_pid = f:read("n")
  f:close()
  s.register("svc", s.self())
  local jobs = require("synodic.linda").open("jobs")
  for i = 1, 50 do jobs:out("stalled", i) end
  s.send(boss, "ready", os_pid)
  while true do s.receive() end
end, me)
local _, os_pid = s.receive_match("ready", 10)

assert(os.execute("kill -STOP " .. os_pid))
local t = s.clock()
while #s.nodes() == 3 do
  assert(s.clock() - t < 15, "the stopped node was not declared down")
  s.sleep(0.02)
end
s.register("svc", s.spawn(function() require("synodic").receive() end))
local jobs = linda.open("jobs")
for i = 1, 50 do jobs:out("here", i) end
s.sleep(math.max(0, stall - (s.clock() - t)))

assert(os.execute("kill -CONT " .. os_pid))
local start, ask = s.clock(), 0
while true do
  assert(s.clock() - start < 30, "no heal within 30 s")
  ask = ask + 1
  local views, answered = {}, 0
  for _, v in pairs(viewers) do s.send(v, "view", ask) end
  local deadline = s.clock() + 0.5
  while answered < 3 and s.clock() < deadline do
    local got = table.pack(s.receive_match(function(tag, a) return tag == "seen" and a == ask end, 0.5))
    if got.n > 0 then
      answered = answered + 1
      views[#views + 1] = table.concat({got[4], got[5], got[6]}, " ")
    end
  end
  local agree = answered == 3 and views[1] == views[2] and views[2] == views[3] and views[1]:match("^3 ") and not views[1]:match(" %-")
  if os.getenv("HEAL_DEBUG") then io.stderr:write(answered, " | ", table.concat(views, " | "), " | ", tostring(jobs:count(linda.string, linda.int)), "\n") end
  if agree and jobs:count(linda.string, linda.int) == 100 then break end
  s.sleep(0.01)
end
print(("%.0f"):format((s.clock() - start) * 1000))
