-- synodic-args: --workers 1
-- Templates: actuals, typed formals, where(pred); arity must match; tables
-- never match as actuals; a template that can never match blocks nothing else.
-- (On one worker a taker's "ready" reaches the main process once it blocks.)
local s = require "synodic"
local linda = require "synodic.linda"
local ts = linda.new()
local me = s.self()

ts:out("v", 1)
ts:out("v", 2.5)
ts:out("v", "str")
ts:out("v", true)
ts:out("v", {1, 2})
assert(select(2, ts:rdp("v", linda.int)) == 1)
assert(select(2, ts:rdp("v", linda.float)) == 2.5)
assert(ts:count("v", linda.number) == 2)
assert(select(2, ts:rdp("v", linda.string)) == "str")
assert(select(2, ts:rdp("v", linda.boolean)) == true)
assert(type(select(2, ts:rdp("v", linda.table))) == "table")
assert(ts:count("v", linda.any) == 5)
assert(ts:count("v", linda.buffer) == 0)
assert(ts:count("v", {1, 2}) == 0, "tables never match as actuals")
assert(ts:count("v", 1.0) == 1, "1.0 == 1 as in Lua")
assert(ts:count(linda.any) == 0 and ts:count("v", linda.any, linda.any) == 0, "arity must match")

-- where(pred): the predicate decides.
for i = 1, 10 do ts:out("n", i) end
local even = linda.where(function(x) return x % 2 == 0 end)
assert(ts:count("n", even) == 5)
assert(select(2, ts:take("n", even)) == 2, "oldest passing tuple")
assert(select(2, ts:take("n", linda.where(function(x) return x > 8 end))) == 9)
local all = ts:take_all("n", even)
assert(#all == 4 and all[1][2] == 4 and all[4][2] == 10)
-- A blocked where-taker wakes when a passing tuple comes.
s.spawn(function() s.send(me, "ready") s.send(me, select(2, ts:take("big", linda.where(function(x) return x > 100 end)))) end)
assert(s.receive() == "ready")
ts:out("big", 5)
ts:out("big", 500)
assert(s.receive() == 500)
assert(ts:count("big", linda.any) == 1, "the small one stays")
local ok, err = pcall(ts.take, ts, "big", linda.where(function() error("pred fails") end))
assert(not ok and err:find("pred fails"), err)

-- A template that can never match does not hold up other operations.
local stuck = s.spawn(function() ts:take("x", "y", "z", "w", "never") end)
ts:out("free", 1)
assert(select(2, ts:inp("free", linda.int)) == 1)
assert(s.is_alive(stuck))
print("linda_formals ok")
