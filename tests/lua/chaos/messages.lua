-- Chaos workload: messages (driven by crates/cli/tests/chaos.rs, which
-- pauses, delays, slows and cuts the links between nodes and stops and
-- kills nodes meanwhile). One worker per node sends numbered messages to
-- every other worker for `seconds`; each keeps, per sender, the numbers it
-- got, in the order it got them. Once the faults are over (the harness
-- says so on standard input, with how many nodes are left), every live
-- worker's record is printed for the checker: `got RECEIVER SENDER n1 n2
-- ...` (SPEC §2: in order per pair, never twice; lost only across faults).
-- usage: synodic run --join ADDR messages.lua SECONDS NODES
local s = require "synodic"
local seconds, expected = tonumber(arg[1]), tonumber(arg[2])

local testkit = require "testkit"
testkit.wait_until("cluster", 30, function() return #s.nodes() == expected end)

local me = s.self()
local function worker(boss, name, seconds)
  local s = require "synodic"
  local _, peers, names = s.receive_match("peers")
  s.send(boss, "ready")
  local got = {}
  local function take(tag, from, n)
    if tag == "m" then
      got[from] = got[from] or {}
      table.insert(got[from], n)
    elseif tag == "report" then
      local lines = {}
      for sender, list in pairs(got) do lines[#lines + 1] = ("got %s %s %s"):format(name, sender, table.concat(list, " ")) end
      s.send(boss, "report", name, lines)
    end
    return tag
  end
  local seq, stop = 0, s.clock() + seconds
  while s.clock() < stop do
    seq = seq + 1
    for i, p in ipairs(peers) do
      if names[i] ~= name then pcall(s.send, p, "m", name, seq) end
    end
    while take(s.receive(0)) do end
    s.sleep(0.01)
  end
  while true do take(s.receive()) end
end

local workers, names = {}, {}
for _, node in ipairs(s.nodes()) do
  names[#names + 1] = node:match("^[^@]*")
  workers[#workers + 1] = s.spawn_on(node, worker, me, names[#names], seconds)
end
for _, w in ipairs(workers) do s.send(w, "peers", workers, names) end
for _ = 1, #workers do assert(s.receive_match("ready", 30), "a worker is not ready") end
print("started") io.stdout:flush()
-- The harness says when every fault is over (after the workers stopped),
-- and how many nodes are left (one may have been killed).
local left = tonumber(io.read("l"):match("^faults over (%d+)$"))
testkit.wait_until("every node back", 60, function() return #s.nodes() == left end)
-- Asked until each live worker answers: a node that was stopped can be
-- declared down just after it came back, and what was on its way to it
-- lost with its link.
local reports, asked = {}, 0
while true do
  local missing = 0
  for i, w in ipairs(workers) do
    if not reports[names[i]] then
      local alive = false
      for _, n in ipairs(s.nodes()) do alive = alive or n == s.node(w) end
      if alive then
        missing = missing + 1
        s.send(w, "report")
      end
    end
  end
  if missing == 0 then break end
  asked = asked + 1
  assert(asked < 30, "a worker does not report")
  local t = s.clock()
  while s.clock() - t < 1 do
    local _, name, lines = s.receive_match("report", 1)
    if name and not reports[name] then
      reports[name] = lines
      for _, l in ipairs(lines) do print(l) end
    end
  end
end
print("messages done")
