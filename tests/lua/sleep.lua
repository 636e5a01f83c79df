-- sleep blocks only the calling process.
local s = require "synodic"
local me = s.self()
s.spawn(function() s.sleep(0.2) s.send(me, "sleeper") end)
s.spawn(function() s.send(me, "quick") end)
assert(s.receive() == "quick", "a sleeping process does not hold up others")
local t0 = s.clock()
s.sleep(0.05)
assert(s.clock() - t0 >= 0.045)
assert(s.receive() == "sleeper")
s.sleep(0) -- yields and comes back
-- sleep(0) does not inherit the deadline of an earlier receive.
s.spawn(function() s.send(me, "early") end)
assert(s.receive(30) == "early")
local t1 = s.clock()
s.sleep(0)
assert(s.clock() - t1 < 5, "sleep(0) waited for an old deadline")
local ok, err = pcall(s.sleep, "soon")
assert(not ok and err:find("number of seconds expected, got string"), err)
ok, err = pcall(s.receive, 0/0)
assert(not ok and err:find("number of seconds expected, got NaN"), err)
-- The clock counts from the node's start, the same in every process.
local mine = s.clock()
s.spawn(function() s.send(me, s.clock()) end)
local theirs = s.receive()
assert(theirs >= mine and theirs - mine < 5, "one clock for the node")
print("sleep ok")
