-- One side of a partition that heals (driven by crates/cli/tests/partition.rs,
-- which cuts and restores the link between two nodes, a and b, with fault
-- proxies): while cut, each side registers the name "svc" and puts 100
-- tuples in the space "jobs" (each side has its own, then); once healed,
-- both must agree on one holder of "svc" (the other gets "name_lost") and
-- one home for "jobs" holding all 200 tuples, none lost, none doubled; a
-- handle that raised `space lost` while cut keeps raising it.
-- usage: synodic run ... side.lua a|b
local s = require "synodic"
local linda = require "synodic.linda"
local side = arg[1]
local other = side == "a" and "b" or "a"

local function say(...)
  print(...)
  io.stdout:flush()
end

local testkit = require "testkit"

local setup = linda.open("setup")
testkit.wait_until("cluster", 30, function() return #s.nodes() == 2 end)
-- Before the cut: a gives b a private space of its own.
if side == "a" then
  local mine = linda.new()
  mine:out("kept", 1)
  setup:out("private", mine)
  setup:take("private taken")
else
  local _, theirs = setup:take("private", linda.any)
  PRIVATE = theirs
  setup:out("private taken")
end
say("linked")

testkit.wait_until("partition", 30, function() return #s.nodes() == 1 end)
local me = s.self()
local svc = s.spawn(function(me)
  local s = require "synodic"
  while true do s.send(me, "svc", s.receive()) end
end, me)
s.register("svc", svc)
local jobs = linda.open("jobs")
for i = 1, 100 do jobs:out(side, i) end
if side == "b" then
  local ok, err = pcall(PRIVATE.rdp, PRIVATE, "kept", linda.int)
  assert(not ok and err:match("space lost"), tostring(err))
end
say("used")

testkit.wait_until("heal", 30, function() return #s.nodes() == 2 end)
local healed = s.clock()
testkit.wait_until("one space", 10, function() return jobs:count(linda.string, linda.int) == 200 end)
local holder = s.whereis("svc")
say(("converged %.2f s after the link was back: svc on %s, jobs at %s"):format(s.clock() - healed, s.node(holder):match("^[^@]*"), s.node(s.whereis("$linda:jobs")):match("^[^@]*")))
if side == "b" then
  local ok, err = pcall(PRIVATE.rdp, PRIVATE, "kept", linda.int)
  assert(not ok and err:match("space lost"), "the lost handle works again: " .. tostring(err))
end

-- The other holder of "svc" heard it lost the name, and goes on.
if holder ~= svc then
  local _, what, name = s.receive_match("svc", 10)
  say("svc lost", what, name)
end
s.send("svc", "hello", side)
jobs:out("checked", side)
if holder == svc then
  -- Both sides' hellos reach the one holder.
  local heard = {}
  for _ = 1, 2 do
    local _, hello, from = s.receive_match(function(t, h) return t == "svc" and h == "hello" end, 10)
    heard[#heard + 1] = from
  end
  table.sort(heard)
  say("svc heard " .. table.concat(heard, " "))
  -- Once the other side has counted, every tuple is taken, once.
  jobs:take("checked", other)
  jobs:take("checked", side)
  local all = jobs:take_all(linda.string, linda.int)
  local seen = {a = {}, b = {}}
  for _, t in ipairs(all) do
    assert(not seen[t[1]][t[2]], "a tuple came twice")
    seen[t[1]][t[2]] = true
  end
  say(("taken %d"):format(#all))
end
say("done")
-- The test ends both sides (one that ended would leave the cluster while
-- the other may still be asking it something).
s.receive()
