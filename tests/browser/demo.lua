-- The program the dashboard's browser test watches (crates/cli/tests/dashboard.rs,
-- tests/browser/dashboard.mjs), run with --nodes 3: a registered process on
-- another node waiting in a `take` on the space "jobs", a ticker (on
-- another node than the page's too) putting ("tick", i) there every 20 ms
-- (the tuple scope stops and steps it), and a monitor on the registered
-- one: once the page kills it, the program ends.
-- Also an entity ("clock", 20 frames a second) and a skeleton run (a farm
-- of slow tasks over every node), for the pages that show them.
local s = require "synodic"
local linda = require "synodic.linda"

local nodes = s.nodes()
local far = nodes[#nodes] == s.node() and nodes[1] or nodes[#nodes]
local worker = s.spawn_on(far, function(boss)
  local s, l = require "synodic", require "synodic.linda"
  s.register("worker", s.self())
  s.send(boss, "registered")
  l.open("jobs"):take("answer", l.int)
end, s.self())
s.monitor(worker)
s.receive_match("registered")
linda.open("jobs"):out("job", 1)
-- The ticker runs on another node than the page's: stepping it from the
-- page names a process of another node.
local near = nodes[1] == s.node() and nodes[2] or nodes[1]
s.spawn_on(near, function()
  local s, l = require "synodic", require "synodic.linda"
  local jobs = l.open("jobs")
  for i = 1, math.huge do
    jobs:out("tick", i)
    s.sleep(0.02)
  end
end)
local entity = require "synodic.entity"
entity.spawn { name = "clock", frame_rate = 20, persist = { tick = function() end } }
s.spawn(function()
  local skel = require "synodic.skel"
  local tasks = {}
  for i = 1, 2000 do tasks[i] = i end
  skel.run(skel.farm(function(x) require("synodic").sleep(0.05) return x end), tasks)
end)
local _, pid, reason = s.receive_match("DOWN")
print(string.format("the monitor saw %s end: %s", tostring(pid), tostring(reason)))
