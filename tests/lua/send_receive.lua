-- send / receive: FIFO per sender, several values, timeouts, dead pids, names.
local s = require "synodic"
local me = s.self()

-- FIFO order from one sender.
s.spawn(function(p) for i = 1, 1000 do s.send(p, "n", i) end end, me)
for i = 1, 1000 do
  local tag, n = s.receive()
  assert(tag == "n" and n == i, "message " .. i .. " arrived as " .. tostring(n))
end

-- Several values, nil among them, in order.
s.send(me, 1, nil, "three", false)
local n = select("#", s.receive())
s.send(me, 1, nil, "three", false)
local a, b, c, d = s.receive()
assert(n == 4 and a == 1 and b == nil and c == "three" and d == false)

-- A timed-out receive returns no values at all.
local t0 = s.clock()
assert(select("#", s.receive(0.05)) == 0)
assert(s.clock() - t0 >= 0.04, "receive waited for its timeout")
assert(select("#", s.receive(0)) == 0, "receive(0) polls")

-- A message arriving before the timeout is returned.
s.spawn(function(p) s.sleep(0.01) s.send(p, "late") end, me)
assert(s.receive(5) == "late")

-- Sending to a dead process drops the message silently.
local dead = s.spawn(function() end)
s.monitor(dead)
assert(s.receive() == "DOWN")
s.send(dead, "lost")
assert(not s.is_alive(dead))

-- At least one value.
local ok, err = pcall(s.send, me)
assert(not ok and err:find("at least one value"), err)
local ok2, err2 = pcall(s.send, 42, "x")
assert(not ok2 and err2:find("pid or name expected"), err2)

-- A message to a name that nobody holds is an error (SPEC §2), not a loss.
local ok3, err3 = pcall(s.send, "nobody-by-this-name", 1)
assert(not ok3 and err3:find("no such name: nobody%-by%-this%-name"), err3)
print("send_receive ok")
