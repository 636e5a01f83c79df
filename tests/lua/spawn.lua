-- spawn, self, pids: returned at once, equal, usable as keys, printable.
local s = require "synodic"

local me = s.self()
assert(type(me) == "userdata")
assert(tostring(me):match("^<%d+%.%d+%.%d+>$"), tostring(me))
assert(me == s.self())

local child = s.spawn(function(parent, a, b) s.send(parent, s.self(), a + b) end, me, 20, 22)
assert(child ~= me)
local reported, sum = s.receive()
assert(reported == child, "the child's self() equals the pid spawn returned")
assert(sum == 42)

-- Pids as table keys, also after crossing a process boundary.
local seen = {[child] = "child", [me] = "me"}
local echo = s.spawn(function(parent) local p = s.receive() s.send(parent, p, {[p] = true}) end, me)
s.send(echo, child)
local back, keyed = s.receive()
assert(back == child and seen[back] == "child")
assert(keyed[child] == true, "a pid key survives the copy")

-- spawn_on the local node and on "any".
local here = s.spawn_on(s.node(), function(p) s.send(p, "here") end, me)
assert(s.receive() == "here")
s.spawn_on("any", function(p) s.send(p, "any") end, me)
assert(s.receive() == "any")
local ok, err = pcall(s.spawn_on, "nowhere", function() end)
assert(not ok and err:find("no such node 'nowhere'"), err)

assert(s.node() == s.nodes()[1])
local ok2, err2 = pcall(s.spawn, 42)
assert(not ok2 and err2:find("function expected"), err2)
-- When a process ends its state is closed: finalizers run then, and may
-- still allocate and send.
s.spawn(function(p)
  local guard = setmetatable({}, {__gc = function()
    local parts = {}
    for i = 1, 100 do parts[i] = tostring(i) end
    s.send(p, "finalized", table.concat(parts, ","):sub(1, 9))
  end})
  return guard ~= nil
end, me)
local what, text = s.receive(5)
assert(what == "finalized" and text == "1,2,3,4,5", tostring(what))
print("spawn ok")
