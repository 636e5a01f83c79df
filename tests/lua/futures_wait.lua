-- s.wait: the first n ready futures and the rest, as ray.wait; a timeout
-- ends the wait; no polling (the waiting process sleeps meanwhile).
local s = require "synodic"

local function task(secs, v) require("synodic").sleep(secs) return v end

local control = require "synodic.control"
local slow = s.async(task, 0.5, "slow")
local fast = s.async(task, 0.02, "fast")
local mid = s.async(task, 0.1, "mid")
local ready, rest = s.wait({slow, fast, mid})
assert(#ready == 1 and ready[1] == fast and ready[1]:get() == "fast")
assert(#rest == 2 and rest[1] == slow and rest[2] == mid, "the rest, in the order given")
ready, rest = s.wait({slow, fast, mid}, 2)
assert(#ready == 2 and ready[1] == fast and ready[2] == mid, "ready ones first, then in the order they became ready")
assert(#rest == 1 and rest[1] == slow)
-- A timeout: what is ready then.
local t = s.clock()
ready, rest = s.wait({slow}, 1, 0.05)
assert(#ready == 0 and #rest == 1 and s.clock() - t < 0.4)
ready, rest = s.wait({slow, fast, mid}, 3)
assert(#ready == 3 and #rest == 0 and ready[3] == slow)
-- n larger than the list: all of them.
ready = s.wait({fast, mid}, 10)
assert(#ready == 2)
-- A failed task is ready too (its get raises).
local bad = s.async(function() error("task failed") end)
ready = s.wait({bad})
assert(ready[1] == bad and not pcall(bad.get, bad))
-- Bad arguments.
local ok, err = pcall(s.wait, {fast, 3})
assert(not ok and err:find("item 2 is not a future"), err)
ok, err = pcall(s.wait, fast)
assert(not ok and err:find("list of futures expected"), err)
ok, err = pcall(s.wait, {fast}, -1)
assert(not ok and err:find("a count of futures"), err)
-- No watcher left behind: after a wait that timed out, only the two
-- tasks' pool workers are new.
local before = #control.processes()
ready, rest = s.wait({s.async(task, 60, "never"), s.async(task, 60, "never")}, 1, 0.05)
assert(#ready == 0 and #rest == 2)
local t0 = s.clock()
while #control.processes() > before + 2 and s.clock() - t0 < 2 do s.sleep(0.01) end
assert(#control.processes() <= before + 2, #control.processes() - before)
print("futures_wait ok")
