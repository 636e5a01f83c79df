-- Chaos workload: tuple spaces (driven by crates/cli/tests/chaos.rs). On
-- every node a producer puts numbered tuples in the named space "jobs" and
-- keeps those whose `out` returned (acknowledged), and a consumer takes
-- tuples and keeps what it got. Faults may make an operation fail with
-- `space lost` (its home is cut off): the worker opens the space again
-- (a new home on its side of the cut; the two are merged when the cut
-- heals) and counts how many takes failed so. At the end the tuples left
-- are taken too, and every record is printed for the checker:
--   acked NAME n1 n2 ...     taken NAME1 n1 NAME2 n2 ...
--   left NAME1 n1 ...        failed_takes K
-- Every acknowledged tuple must be taken at most once, and exactly once
-- unless a take that failed may have removed it (its answer lost on a cut link).
-- usage: synodic run --join ADDR tuples.lua SECONDS NODES
local s = require "synodic"
local linda = require "synodic.linda"
local seconds, expected = tonumber(arg[1]), tonumber(arg[2])

local testkit = require "testkit"
testkit.wait_until("cluster", 30, function() return #s.nodes() == expected end)
linda.open("jobs"):out("start") -- claimed before the faults begin

local me = s.self()
local function producer(boss, name, seconds)
  local s = require "synodic"
  local linda = require "synodic.linda"
  local jobs = linda.open("jobs")
  s.send(boss, "ready")
  local acked, i, stop = {}, 0, s.clock() + seconds
  while s.clock() < stop do
    i = i + 1
    local ok, err = pcall(jobs.out, jobs, "job", name, i)
    if ok then
      acked[#acked + 1] = i
    elseif tostring(err):match("space lost") then
      jobs = linda.open("jobs")
      s.sleep(0.01)
    else
      error(err)
    end
    s.sleep(0.005)
  end
  s.receive_match("report")
  s.send(boss, "acked", name, acked)
end

local function consumer(boss, name, seconds)
  local s = require "synodic"
  local linda = require "synodic.linda"
  local jobs = linda.open("jobs")
  s.send(boss, "ready")
  local taken, failed, stop = {}, 0, s.clock() + seconds
  while s.clock() < stop do
    local ok, tag, who, n = pcall(jobs.take_within, jobs, 0.2, "job", linda.string, linda.int)
    if ok and tag then
      taken[#taken + 1] = who .. " " .. n
    elseif not ok and tostring(tag):match("space lost") then
      failed = failed + 1
      jobs = linda.open("jobs")
      s.sleep(0.01)
    elseif not ok then
      error(tag)
    end
  end
  s.receive_match("report")
  s.send(boss, "taken", name, taken, failed)
end

local workers = {}
for _, node in ipairs(s.nodes()) do
  local name = node:match("^[^@]*")
  workers[#workers + 1] = s.spawn_on(node, producer, me, name, seconds)
  workers[#workers + 1] = s.spawn_on(node, consumer, me, name, seconds)
end
for _ = 1, #workers do assert(s.receive_match("ready", 30), "a worker is not ready") end
print("started") io.stdout:flush()
-- The harness says when every fault is over (after the workers stopped).
assert(io.read("l"):match("^faults over"))
testkit.wait_until("every node back", 60, function() return #s.nodes() == expected end)
for _, w in ipairs(workers) do s.send(w, "report") end
local failed_takes = 0
for _ = 1, #workers do
  local msg = table.pack(s.receive_match(function(t) return t == "acked" or t == "taken" end, 60))
  assert(msg.n > 0, "a worker's record did not come")
  if msg[1] == "acked" then
    print("acked " .. msg[2] .. " " .. table.concat(msg[3], " "))
  else
    print("taken " .. table.concat(msg[3], " "))
    failed_takes = failed_takes + msg[4]
  end
end
-- One space again: what is left in it.
local jobs = linda.open("jobs")
local left = {}
for _, t in ipairs(jobs:take_all("job", linda.string, linda.int)) do left[#left + 1] = t[2] .. " " .. t[3] end
print("left " .. table.concat(left, " "))
print("failed_takes " .. failed_takes)
print("tuples done")
