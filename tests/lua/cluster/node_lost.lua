-- synodic-args: --nodes 3
-- A node that dies (its OS process ends): monitors of its processes get
-- DOWN "noconnection", node monitors "nodedown", it leaves s.nodes(), its
-- names are released, and spawn_on it is "no such node"; the other nodes
-- go on.
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local nodes = s.nodes()
assert(#nodes == 3)
local doomed, survivor = table.unpack(testkit.other_nodes())

local resident = s.spawn_on(doomed, function(parent)
  local s = require "synodic"
  s.register("resident", s.self())
  s.send(parent, "named")
  s.receive()
end, me)
assert(s.receive_match("named", 5))
assert(s.whereis("resident") == resident)
local killer = s.spawn_on(doomed, function() require("synodic").receive() os.exit(3) end)
local safe = s.spawn_on(survivor, function() require("synodic").receive() end)
s.monitor(resident)
s.monitor(safe)
s.monitor_node(doomed)
s.monitor_node(survivor)

s.send(killer, "die")
local got = {}
for _ = 1, 2 do
  local msg = table.pack(s.receive_match(function(tag) return tag == "DOWN" or tag == "nodedown" end, 10))
  assert(msg.n > 0, "told of the loss within 10 s")
  got[msg[1]] = msg
end
assert(got.DOWN[2] == resident and got.DOWN[3] == "noconnection", tostring(got.DOWN[3]))
assert(got.nodedown[2] == doomed)

assert(s.whereis("resident") == nil, "names held on a lost node are released")
local listed = table.concat(s.nodes(), " ")
assert(#s.nodes() == 2 and not listed:find(doomed, 1, true), listed)
local ok, err = pcall(s.spawn_on, doomed, function() end)
assert(not ok and err:find("no such node"), err)
local ok2, err2 = pcall(s.monitor_node, doomed)
assert(ok2)
assert(s.receive_match("nodedown", 1) == "nodedown", "a lost node: nodedown at once")

-- The survivor is untouched.
assert(select("#", s.receive_match("DOWN", 0.1)) == 0, "no DOWN for the survivor's process")
s.send(safe, "bye")
local tag, pid, reason = s.receive_match("DOWN", 5)
assert(pid == safe and reason == "normal")

print("node_lost ok")
