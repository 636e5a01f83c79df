-- synodic-args: --nodes 3
-- register / whereis across nodes: a name is the cluster's; two nodes
-- registering one name at once: exactly one wins, the other gets the error;
-- a name goes with its process, everywhere.
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local others = testkit.other_nodes()
assert(#others == 2)

-- A name registered here is seen there, and a send by name reaches it.
local server = s.spawn(function()
  while true do
    local from, x = s.receive()
    s.send(from, x * 2)
  end
end)
assert(s.register("doubler", server) == true)
assert(s.whereis("doubler") == server)
local asker = s.spawn_on(others[1], function(parent)
  local s = require "synodic"
  local found = s.whereis("doubler")
  s.send("doubler", s.self(), 21)
  s.send(parent, found, s.receive(5))
end, me)
local found, answer = s.receive(5)
assert(found == server and answer == 42, tostring(answer))

-- A remote process's name, registered on its node, is seen here.
local remote = s.spawn_on(others[1], function(parent)
  local s = require "synodic"
  assert(s.register("far", s.self()) == true)
  local ok, err = pcall(s.register, "doubler", s.self())
  s.send(parent, "registered", ok, err)
  s.receive()
end, me)
local _, ok, err = s.receive_match("registered", 5)
assert(not ok and err:find("already registered"), tostring(err))
assert(s.whereis("far") == remote)
local ok2, err2 = pcall(s.register, "mine", remote)
assert(not ok2 and err2:find("another node"), err2)

-- The name goes with its process, on every node.
s.monitor(remote)
s.send(remote, "end")
assert(s.receive_match("DOWN", 5))
assert(s.whereis("far") == nil, "released here once its DOWN arrived")

-- Contested names: one process on each other node claims the same name at
-- the same moment.
local function contender(parent, name)
  local s = require "synodic"
  s.receive() -- "go"
  local ok, err = pcall(s.register, name, s.self())
  s.send(parent, "claimed", name, s.self(), ok, err, s.whereis(name))
  s.receive()
end
for round = 1, 20 do
  local name = "contested-" .. round
  local a = s.spawn_on(others[1], contender, me, name)
  local b = s.spawn_on(others[2], contender, me, name)
  s.send(a, "go")
  s.send(b, "go")
  local winners, holder = 0, {}
  local seen = {}
  for _ = 1, 2 do
    local _, n, pid, ok, err, where = s.receive_match(function(t, n) return t == "claimed" and n == name end, 5)
    assert(n == name, "both answered")
    if ok then winners = winners + 1 else assert(err:find("already registered"), err) end
    seen[#seen + 1] = {pid = pid, ok = ok, where = where}
  end
  assert(winners == 1, ("round %d: %d winners"):format(round, winners))
  local winner = seen[1].ok and seen[1].pid or seen[2].pid
  for _, c in ipairs(seen) do
    -- The winner's node knows at once; the loser's as soon as the
    -- winner's node tells it, and never names the loser.
    if c.ok then assert(c.where == winner) else assert(c.where == nil or c.where == winner) end
  end
  s.send(a, "done")
  s.send(b, "done")
end

print("names ok")
