-- links: an abnormal end travels along links (the linked process ends with
-- the same reason), a normal end does not; trap_exit turns it into an
-- "EXIT" message; unlink stops it; a link to an ended process acts at once.
local s = require "synodic"

local function down(pid, limit)
  local _, who, why = s.receive_match(function(tag, who) return tag == "DOWN" and who == pid end, limit or 5)
  assert(who == pid, "no DOWN for " .. tostring(pid))
  return why
end

-- An abnormal end ends the linked partner with the same reason.
local a = s.spawn(function() s.receive() error("first fell") end)
local b = s.spawn(function(a) local s = require "synodic"; s.link(a); s.receive() end, a)
s.monitor(a); s.monitor(b)
s.sleep(0.02) -- b links (it has no way to say so but a message, which would also wake it)
s.send(a, "go")
assert(down(a):find("first fell"))
assert(down(b):find("first fell"), "the linked process ends with the same reason")

-- A normal end does not.
local c = s.spawn(function() s.receive() end)
local d = s.spawn(function(c, me) local s = require "synodic"; s.link(c); s.send(me, "linked"); s.receive() end, c, s.self())
s.receive_match("linked", 5)
s.monitor(d)
s.send(c, "go")
assert(select("#", s.receive_match("DOWN", 0.1)) == 0, "a normal end does not travel")
s.kill(d)
assert(down(d) == "killed")

-- trap_exit: the end arrives as a message, for normal ends too.
assert(s.trap_exit(true) == false)
local e = s.spawn_link(function() s.receive() s.exit("done here") end)
s.send(e, "go")
local tag, who, why = s.receive_match("EXIT", 5)
assert(who == e and why == "done here", tostring(why))
local f = s.spawn_link(function() end)
tag, who, why = s.receive_match("EXIT", 5)
assert(who == f and why == "normal", tostring(why))
local g = s.spawn_link(function() error({code = 7}) end)
tag, who, why = s.receive_match("EXIT", 5)
assert(who == g and type(why) == "table" and why.code == 7, "any sendable value is a reason")

-- unlink: no signal after it returns.
local h = s.spawn_link(function() s.receive() error("unseen") end)
s.unlink(h)
s.send(h, "go")
assert(select("#", s.receive_match("EXIT", 0.2)) == 0, "unlinked: no EXIT")

-- A link to a process that already ended: its reason, at once.
local i = s.spawn(function() s.exit("gone before") end)
s.monitor(i); down(i)
s.link(i)
tag, who, why = s.receive_match("EXIT", 5)
assert(who == i and why == "gone before", tostring(why))
assert(s.trap_exit(false) == true)
local ok, err = pcall(s.link, s.spawn(function() end) and nil)
assert(not ok and err:find("pid expected"), err)

-- Not trapping: a linked process ending abnormally ends the caller, even
-- one that was blocked; a supervisor-like chain ends whole.
local top = s.spawn(function(me)
  local s = require "synodic"
  local mid = s.spawn_link(function(me)
    local s = require "synodic"
    local leaf = s.spawn_link(function() s.receive() end)
    s.send(me, "leaf", leaf)
    s.receive()
  end, me)
  s.receive()
end, s.self())
local _, leaf = s.receive_match("leaf", 5)
s.monitor(top); s.monitor(leaf)
s.kill(leaf, "cut")
assert(down(leaf) == "cut")
assert(down(top) == "cut", "the reason travels up the chain")

-- Links and kill from the wrong arguments.
ok, err = pcall(s.kill, "nobody")
assert(not ok and err:find("bad argument #1 to 'kill'"), err)
ok, err = pcall(s.spawn_link, 42)
assert(not ok and err:find("function expected"), err)
print("links ok")
