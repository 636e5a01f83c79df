-- send_after / cancel_timer: a message sent later (to a pid or to whoever
-- holds a name then), in deadline order; a cancelled one never comes;
-- cancel says whether it was in time.
local s = require "synodic"

local t = s.clock()
local late = s.send_after(0.06, s.self(), "tick", 3)
s.send_after(0.02, s.self(), "tick", 1)
s.send_after(0.04, s.self(), "tick", 2)
local never = s.send_after(0.03, s.self(), "tick", "cancelled")
assert(math.type(late) == "integer")
assert(s.cancel_timer(never) == true)
assert(s.cancel_timer(never) == false, "only once")
for i = 1, 3 do
  local tag, n = s.receive_match("tick", 2)
  assert(n == i, tostring(n))
end
assert(s.clock() - t >= 0.06)
assert(select("#", s.receive_match("tick", 0.05)) == 0, "the cancelled one never comes")
assert(s.cancel_timer(late) == false, "already sent")

-- A name is looked up when the message is due.
s.send_after(0.02, "later_holder", "for whoever holds it")
s.register("later_holder", s.self())
assert(select(1, s.receive(2)) == "for whoever holds it")
-- No holder then: dropped, nothing raised.
s.send_after(0, "nobody_has_this", "lost")
assert(select("#", s.receive(0.05)) == 0)

-- To another process, with any sendable values.
local echo = s.spawn(function(me) local s = require "synodic"; s.send(me, "echo", s.receive()) end, s.self())
s.send_after(0.01, echo, {n = 5})
local _, v = s.receive_match("echo", 2)
assert(v.n == 5)

-- Many pending timers cost no wake-ups: 100,000 armed far ahead, then cancelled.
local refs = {}
for i = 1, 100000 do refs[i] = s.send_after(3600, s.self(), i) end
for i = 1, 100000 do assert(s.cancel_timer(refs[i])) end

-- Bad arguments.
local ok, err = pcall(s.send_after, "soon", s.self(), 1)
assert(not ok and err:find("bad argument #1 to 'send_after'"), err)
ok, err = pcall(s.send_after, 1, s.self())
assert(not ok and err:find("nothing to send"), err)
ok, err = pcall(s.send_after, 1, s.self(), coroutine.create(print))
assert(not ok and err:find("send_after"), err)
ok, err = pcall(s.cancel_timer, "x")
assert(not ok and err:find("timer reference expected"), err)
print("timers ok")
