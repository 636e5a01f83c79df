-- synodic-args: --max-space-memory 1M
-- `--max-space-memory` bounds what the node's tuple spaces hold in all: an
-- `out` past it raises `space full: NAME` and adds nothing; taking,
-- clearing and dropping spaces give the room back; named and private
-- spaces share the one budget.
local linda = require "synodic.linda"

local ts = linda.new()
local n = 0
while true do
  local ok, err = pcall(ts.out, ts, "x", n, string.rep("y", 1000))
  if not ok then
    assert(err:match("out: space full: private space"), err)
    break
  end
  n = n + 1
end
assert(n > 500 and n < 1100, n)
assert(ts:count("x", linda.int, linda.string) == n, "the refused tuple was not added")

-- Taking gives room back.
ts:take("x", 0, linda.string)
ts:out("x", n, string.rep("y", 1000))

-- A named space shares the budget.
local jobs = linda.open("jobs")
local ok, err = pcall(jobs.out, jobs, "big", string.rep("z", 100000))
assert(not ok and err:match("space full: jobs"), err)
ts:clear()
jobs:out("big", string.rep("z", 100000))

-- A dropped space gives its room back.
do
  local filler = linda.new()
  while pcall(filler.out, filler, "f", string.rep("w", 10000)) do end
end
collectgarbage() collectgarbage()
ts:out("after", string.rep("y", 100000))

-- A tuple handed straight to a waiting taker takes no room.
local s = require "synodic"
local me = s.self()
s.spawn(function() local _, v = ts:take("handed", linda.string) s.send(me, #v) end)
s.sleep(0.05)
ts:out("handed", string.rep("h", 600000))
assert(s.receive(5) == 600000)
ts:out("stored", string.rep("s", 600000))
print("linda_space_full ok")
