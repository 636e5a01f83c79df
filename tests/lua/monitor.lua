-- monitor: DOWN with "normal", the exit value, or the error text; at once for a dead pid.
local s = require "synodic"

local function down_of(f)
  local p = s.spawn(function() s.receive() f() end)
  s.monitor(p)
  s.send(p, "go")
  local tag, who, reason = s.receive()
  assert(tag == "DOWN" and who == p, tostring(tag))
  return reason
end

assert(down_of(function() end) == "normal")
assert(down_of(function() s.exit() end) == "normal")
assert(down_of(function() s.exit("tired") end) == "tired")
local r = down_of(function() s.exit({code = 7}) end)
assert(type(r) == "table" and r.code == 7, "any sendable value can be a reason")
local e = down_of(function() error("kaboom") end)
assert(type(e) == "string" and e:find("kaboom"), e)
local e2 = down_of(function() local x = nil; return x.field end)
assert(e2:find("attempt to index"), e2)

-- error(nil): the reason says so (a DOWN reason is never nil).
assert(down_of(function() error(nil) end) == "(error object is a nil value)")
local t = down_of(function() error({code = 3}) end)
assert(type(t) == "table" and t.code == 3, "an error object that is a table is the reason")

-- Code after exit does not run.
local me = s.self()
local p = s.spawn(function() s.exit("early") s.send(me, "after exit") end)
s.monitor(p)
local _, _, why = s.receive()
assert(why == "early")
assert(select("#", s.receive(0.05)) == 0, "nothing was sent after exit")

-- A pid that has already ended gives its DOWN at once, with its reason
-- while the runtime still remembers it.
local gone = s.spawn(function() s.exit("finished early") end)
s.monitor(gone)
assert(select(3, s.receive()) == "finished early")
s.monitor(gone) -- it has ended now
local tag, who, why_gone = s.receive(0)
assert(tag == "DOWN" and who == gone, "a dead pid's DOWN comes at once")
assert(why_gone == "finished early", tostring(why_gone))
-- A pid nobody remembers any more.
s.monitor(s.spawn(function() end))
s.receive()

-- Several monitors of one process all hear of its end.
local target = s.spawn(function() s.receive() end)
local watchers = {}
for i = 1, 3 do
  watchers[i] = s.spawn(function(t, parent) s.monitor(t) s.send(parent, "watching") s.send(parent, s.receive()) end, target, me)
end
for _ = 1, 3 do assert(s.receive() == "watching") end
s.send(target, "stop")
for _ = 1, 3 do assert(s.receive() == "DOWN") end
-- demonitor removes one monitor: of two, one DOWN comes; with none in
-- place it says false (the DOWN is then in the mailbox, or no monitor was set).
local watched = s.spawn(function() s.receive() end)
s.monitor(watched)
s.monitor(watched)
assert(s.demonitor(watched) == true, "one of two removed")
s.send(watched, "stop")
assert(select(2, s.receive_match("DOWN", 5)) == watched)
assert(s.demonitor(watched) == false, "it has ended: nothing to remove")
assert(s.receive_match("DOWN", 0) == nil, "one DOWN for the one monitor left")
assert(s.demonitor(me) == false, "no monitor of it was set")
local ok, err = pcall(s.demonitor, "nobody")
assert(not ok and err:find("bad argument #1 to 'demonitor' %(pid expected, got string%)"), err)
-- A node that is not connected: "nodedown" at once; this node: never.
s.monitor_node(s.node())
s.monitor_node("elsewhere@nowhere")
local tag2, node = s.receive(1)
assert(tag2 == "nodedown" and node == "elsewhere@nowhere")
assert(select("#", s.receive(0)) == 0, "this node is not lost")
print("monitor ok")
