-- synodic-args: --workers 1
-- rd (read without removing, blocking), inp / rdp (no values when nothing
-- matches), and the timed forms take_within / rd_within. (On one worker a
-- reader's "ready" reaches the main process once the reader blocks.)
local s = require "synodic"
local linda = require "synodic.linda"
local ts = linda.new()
local me = s.self()

assert(select("#", ts:inp("none")) == 0 and select("#", ts:rdp("none")) == 0)
ts:out("config", 42)
assert(select(2, ts:rd("config", linda.int)) == 42)
assert(select(2, ts:rdp("config", linda.int)) == 42)
assert(ts:count("config", linda.int) == 1, "rd leaves the tuple")
assert(select(2, ts:inp("config", linda.int)) == 42)
assert(select("#", ts:inp("config", linda.int)) == 0, "inp removed it")

-- Several blocked readers all see one tuple; it stays.
for i = 1, 3 do s.spawn(function() s.send(me, "ready") s.send(me, select(2, ts:rd("shared", linda.any))) end) end
for _ = 1, 3 do assert(s.receive() == "ready") end
ts:out("shared", "x")
for _ = 1, 3 do assert(s.receive() == "x") end
assert(ts:count("shared", "x") == 1)

-- Timed forms: no values when the time runs out, the tuple when it comes.
local t0 = s.clock()
assert(select("#", ts:take_within(0.05, "never")) == 0)
assert(s.clock() - t0 >= 0.045)
assert(select("#", ts:rd_within(0, "never")) == 0, "0 seconds polls")
s.spawn(function() s.sleep(0.02) ts:out("soon", 1) end)
assert(select(2, ts:take_within(5, "soon", linda.int)) == 1)
-- A timed-out taker does not swallow a later tuple.
assert(select("#", ts:take_within(0.01, "late")) == 0)
ts:out("late", 7)
assert(select(2, ts:inp("late", linda.int)) == 7)
print("linda_rd_probe ok")
