-- The Armstrong ring spread over every node of the cluster: N processes,
-- dealt over the nodes in turn, pass a token around M times, so that most
-- hops cross from one node to the next.
-- usage: synodic run --nodes 3 examples/cluster/ring.lua [N] [M]
-- (on a node alone it runs too, every hop local).
local s = require "synodic"

local N = math.tointeger(tonumber(arg[1])) or 300
local M = math.tointeger(tonumber(arg[2])) or 20
local nodes = s.nodes()

-- A member learns its successor, then forwards tokens (hops left); the one
-- that receives 0 tells the main process.
local function member(main)
  local s = require "synodic"
  local next = s.receive()
  while true do
    local hops = s.receive()
    if hops == 0 then s.send(main, "done") else s.send(next, hops - 1) end
  end
end

local main = s.self()
local t0 = s.clock()
local first = s.spawn_on(nodes[1], member, main)
local prev, placed = first, {[nodes[1]] = 1}
for i = 2, N do
  local node = nodes[(i - 1) % #nodes + 1]
  local p = s.spawn_on(node, member, main)
  placed[node] = (placed[node] or 0) + 1
  s.send(prev, p)
  prev = p
end
s.send(prev, first)
s.send(first, N - 1) -- once round: the ring is complete
assert(s.receive(30) == "done", "the token came back")
local t1 = s.clock()
s.send(first, N * M - 1)
assert(s.receive(60) == "done", "the token came back")
local t2 = s.clock()

local spread = {}
for _, node in ipairs(nodes) do spread[#spread + 1] = ("%s:%d"):format(node, placed[node] or 0) end
print(("ring of %d processes over %d node(s) [%s], token %d times round"):format(N, #nodes, table.concat(spread, " "), M))
print(("build %.3f s, %.1f us per hop"):format(t1 - t0, (t2 - t1) * 1e6 / (N * M)))
