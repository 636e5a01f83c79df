-- synodic-args: --nodes 2 --max-space-memory 1M
-- A space's node bounds what its spaces hold (`--max-space-memory`, given
-- to every node of the run): an `out` from another node past it raises
-- `space full: NAME` there and adds nothing.
local s = require "synodic"
local linda = require "synodic.linda"
local testkit = require "testkit"

local me = s.self()
local jobs = linda.open("jobs") -- first used here: its home is this node
jobs:out("first", 1)
s.spawn_on(testkit.other_node(), function(me)
  local s = require "synodic"
  local jobs = require("synodic.linda").open("jobs")
  local n = 0
  while true do
    local ok, err = pcall(jobs.out, jobs, "row", n, string.rep("r", 10000))
    if not ok then s.send(me, "full", n, err) return end
    n = n + 1
  end
end, me)
local _, n, err = s.receive_match("full", 30)
assert(err:match("out: space full: jobs"), err)
assert(n > 50 and n < 110, n)
assert(jobs:count("row", linda.int, linda.string) == n, "nothing of the refused tuple")
print("linda_full ok")
