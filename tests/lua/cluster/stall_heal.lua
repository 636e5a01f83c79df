-- synodic-args: --nodes 3
-- A node stopped (SIGSTOP) long enough to be declared down comes back
-- (SIGCONT) into one cluster within 5 s: the others and it agree on the
-- members, on the holder of a name that both sides gave meanwhile (the
-- other holder gets "name_lost" and goes on) and on the home of a space
-- both sides used, which holds the tuples of both, none lost, none doubled.
local s = require "synodic"
local linda = require "synodic.linda"
local testkit = require "testkit"

local me = s.self()
local stalled = testkit.other_nodes()[1]

-- On the node that will stall: a holder of "svc" and the home of "jobs".
local holder = s.spawn_on(stalled, function(boss)
  local s = require "synodic"
  local f = assert(io.open("/proc/self/stat"))
  local os_pid = f:read("n")
  f:close()
  s.register("svc", s.self())
  local jobs = require("synodic.linda").open("jobs")
  for i = 1, 50 do jobs:out("stalled", i) end
  s.send(boss, "ready", os_pid)
  while true do s.send(boss, "holder got", s.receive()) end
end, me)
local _, os_pid = s.receive_match("ready", 10)
assert(s.node(s.whereis("svc")) == stalled)

assert(os.execute("kill -STOP " .. os_pid))
testkit.wait_until("nodedown", 10, function() return #s.nodes() == 2 end)
-- Meanwhile, this side gives "svc" to a process of its own and uses "jobs",
-- whose home it has lost: a new one.
local here = s.spawn(function(boss)
  local s = require "synodic"
  while true do s.send(boss, "here got", s.receive()) end
end, me)
s.register("svc", here)
local jobs = linda.open("jobs")
for i = 1, 50 do jobs:out("here", i) end

assert(os.execute("kill -CONT " .. os_pid))
local took = testkit.wait_until("heal", 5, function() return #s.nodes() == 3 and jobs:count(linda.string, linda.int) == 100 end)
print(("healed %.2f s after SIGCONT"):format(took))

-- Every node tells the same story.
local views = {}
for _, node in ipairs(s.nodes()) do
  s.spawn_on(node, function(boss)
    local s = require "synodic"
    local svc, home = s.whereis("svc"), s.whereis("$linda:jobs")
    s.send(boss, "view", s.node(), #s.nodes(), svc and s.node(svc), home and s.node(home))
  end, me)
end
for _ = 1, 3 do
  local _, node, count, svc_on, jobs_at = s.receive_match("view", 10)
  views[#views + 1] = ("%d %s %s"):format(count, svc_on, jobs_at)
end
assert(views[1] == views[2] and views[2] == views[3], table.concat(views, " | "))

-- One holder kept the name; the other heard it lost it, and goes on.
local winner = s.whereis("svc")
local loser_tag = winner == here and "holder got" or "here got"
local _, what, name = s.receive_match(loser_tag, 10)
assert(what == "name_lost" and name == "svc", tostring(what))
s.send("svc", "hello")
assert(select(2, s.receive_match(winner == here and "here got" or "holder got", 10)) == "hello")

-- All tuples, once.
local all = jobs:take_all(linda.string, linda.int)
local seen = {}
for _, t in ipairs(all) do
  local key = t[1] .. t[2]
  assert(not seen[key], "twice: " .. key)
  seen[key] = true
end
assert(#all == 100, #all)
print("stall_heal ok")
