-- Lua coroutines inside a process: normal behaviour kept; blocking calls and
-- preemption inside a coroutine suspend the whole process, transparently.
local s = require "synodic"
local me = s.self()

local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
assert(gen() == 1 and gen() == 2 and gen() == 3)

local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
local ok, v = coroutine.resume(co, 1)
assert(ok and v == 2)
ok, v = coroutine.resume(co, 10)
assert(ok and v == 20 and coroutine.status(co) == "dead")
ok, v = coroutine.resume(co)
assert(not ok and v:find("dead"))
local bad = coroutine.create(function() error("inside") end)
ok, v = coroutine.resume(bad)
assert(not ok and v:find("inside"))
local okw, errw = pcall(coroutine.wrap(function() error("wrapped") end))
assert(not okw and errw:find("wrapped"))

-- receive inside a coroutine: the coroutine does not see a yield.
s.spawn(function() s.sleep(0.02) s.send(me, "x") s.send(me, "y") end)
local reader = coroutine.wrap(function()
  local first = s.receive()
  coroutine.yield(first)
  return s.receive()
end)
assert(reader() == "x")
assert(reader() == "y")

-- sleep inside nested coroutines.
local outer = coroutine.create(function()
  local inner = coroutine.create(function() s.sleep(0.01) coroutine.yield("inner") return "done" end)
  local _, a = coroutine.resume(inner)
  local _, b = coroutine.resume(inner)
  return a .. "+" .. b
end)
local okn, res = coroutine.resume(outer)
assert(okn and res == "inner+done", tostring(res))

-- A long loop inside a coroutine is preempted without the coroutine noticing.
local sum = coroutine.wrap(function() local x = 0 for i = 1, 1e6 do x = x + i end return x end)()
assert(sum == 1e6 * (1e6 + 1) / 2)
print("coroutines ok")
