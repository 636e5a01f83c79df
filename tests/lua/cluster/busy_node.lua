-- synodic-args: --nodes 2 --workers 2
-- A node whose every worker runs a process that computes still reads its
-- links (its monitor does, once per tick: see synodic_core::netpoll), so
-- a process there answers messages from other nodes, and a spawn there
-- starts, while the computing goes on.
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local echo = testkit.echo_on(other)
s.send(echo, me, "ready")
assert(s.receive(5) == "ready")

-- As many busy processes as the other node has workers (--workers 2).
local busy = {}
for i = 1, 2 do
  busy[i] = s.spawn_on(other, function(boss)
    local s = require "synodic"
    s.send(boss, "computing")
    local x = 0
    while true do x = x + 1 end
  end, me)
end
for _ = 1, 2 do assert(s.receive(5) == "computing") end

-- Round trips and a spawn still get through.
for i = 1, 50 do
  s.send(echo, me, i)
  assert(s.receive(5) == i, "round trip " .. i .. " got no answer from a busy node")
end
local hello = s.spawn_on(other, function(boss) require("synodic").send(boss, "hello") end, me)
assert(hello and s.receive(5) == "hello")
s.send(echo, me, "stop")
print("busy_node ok")
