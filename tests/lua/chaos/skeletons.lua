-- Chaos workload: skeletons and names (driven by crates/cli/tests/chaos.rs,
-- which pauses, delays, slows and cuts links and stops and kills nodes
-- meanwhile). A farm over every node keeps about twenty tasks in flight
-- for `seconds`; each result is printed as it comes: `result I X Y` for
-- task I, whose input was X and whose result must be X * X. Meanwhile one
-- claimer per node registers the name "leader" whenever it sees nobody
-- holding it, so that both sides of a cut claim it. Once the faults are
-- over, every live claimer is asked who holds "leader" until they agree,
-- and the answers are printed: `leaders P1 P2 ...`. The checker wants
-- every task's result exactly once and right (SPEC §6), and one holder.
-- usage: synodic run --join ADDR skeletons.lua SECONDS NODES
local s = require "synodic"
local skel = require "synodic.skel"
local seconds, expected = tonumber(arg[1]), tonumber(arg[2])

local testkit = require "testkit"
testkit.wait_until("cluster", 30, function() return #s.nodes() == expected end)

local function claimer(boss)
  local s = require "synodic"
  s.send(boss, "ready")
  while true do
    if s.whereis("leader") == nil then pcall(s.register, "leader", s.self()) end
    local tag, from = s.receive(0.05)
    if tag == "who" then s.send(from, "leader", s.self(), s.whereis("leader") or false) end
  end
end

local me = s.self()
local claimers = {}
for _, node in ipairs(s.nodes()) do claimers[#claimers + 1] = s.spawn_on(node, claimer, me) end
for _ = 1, #claimers do assert(s.receive_match("ready", 30), "a claimer is not ready") end

local square = skel.seq(function(x)
  require("synodic").sleep(0.02)
  return {x, x * x}
end)
local ev = skel.evaluator(skel.farm(square))
local inputs, added = {}, 0
local function add()
  added = added + 1
  local x = added * 7 + 3
  inputs[ev:add_task(x)] = x
end
for _ = 1, 20 do add() end
print("started") io.stdout:flush()
local stop = s.clock() + seconds
for i, r in ev:results() do
  print(("result %d %d %d %d"):format(i, inputs[i], r[1], r[2]))
  if s.clock() < stop then add() end
end
print("tasks " .. added)

-- The harness says when every fault is over, and how many nodes are left.
local left = tonumber(io.read("l"):match("^faults over (%d+)$"))
testkit.wait_until("every node back", 60, function() return #s.nodes() == left end)
-- Healing settles the name within a few seconds: ask until every live
-- claimer names the same holder.
local deadline = s.clock() + 10
while true do
  local answers, seen = {}, {}
  for _, c in ipairs(claimers) do
    local alive = false
    for _, n in ipairs(s.nodes()) do alive = alive or n == s.node(c) end
    if alive then
      s.send(c, "who", me)
      local _, from, holder = s.receive_match(function(t, from) return t == "leader" and from == c end, 5)
      if from then
        holder = tostring(holder) -- a pid as this node names it
        answers[#answers + 1] = holder
        seen[holder] = true
      end
    end
  end
  local distinct = 0
  for _ in pairs(seen) do distinct = distinct + 1 end
  if (distinct == 1 and not seen["false"]) or s.clock() > deadline then
    print("leaders " .. table.concat(answers, " "))
    break
  end
  s.sleep(0.1)
end
print("skeletons done")
