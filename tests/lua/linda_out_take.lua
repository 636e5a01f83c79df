-- synodic-args: --workers 1
-- out / take (in): oldest match first, blocking until an out, takers served
-- in arrival order, each tuple taken exactly once, nil refused. (On one
-- worker a taker's "ready" reaches the main process once the taker blocks.)
local s = require "synodic"
local linda = require "synodic.linda"
local ts = linda.new()
local me = s.self()

ts:out("job", 1)
ts:out("job", 2)
ts:out("job", 3.5)
local tag, n = ts:take("job", linda.any)
assert(tag == "job" and n == 1, "the oldest matching tuple comes first")
assert(select(2, ts["in"](ts, "job", linda.int)) == 2, "in is take")
assert(math.type(select(2, ts:take("job", linda.number))) == "float", "fields keep their type")

-- A blocked take is woken by a later out from another process.
s.spawn(function() s.send(me, "ready") s.send(me, "taken", ts:take("later", linda.string)) end)
assert(s.receive() == "ready")
ts:out("later", "hello")
local what, _, v = s.receive()
assert(what == "taken" and v == "hello")

-- Blocked takers are served in the order they arrived.
for i = 1, 3 do
  s.spawn(function() s.send(me, "ready") s.send(me, i, select(2, ts:take("turn", linda.int))) end)
  assert(s.receive() == "ready")
end
for k = 1, 3 do ts:out("turn", k * 10) end
local got = {}
for _ = 1, 3 do local who, val = s.receive() got[who] = val end
assert(got[1] == 10 and got[2] == 20 and got[3] == 30, "first come, first served")

-- Many producers and consumers: nothing lost, nothing taken twice.
local P, C, EACH = 4, 4, 500
for p = 1, P do
  s.spawn(function() for i = 1, EACH do ts:out("item", p * 100000 + i) end end)
end
for _ = 1, C do
  s.spawn(function()
    local mine = {}
    for _ = 1, P * EACH / C do mine[#mine + 1] = select(2, ts:take("item", linda.int)) end
    s.send(me, "consumed", mine)
  end)
end
local seen, total = {}, 0
for _ = 1, C do
  local _, mine = s.receive()
  for _, x in ipairs(mine) do
    assert(not seen[x], "taken twice: " .. x)
    seen[x] = true
    total = total + 1
  end
end
assert(total == P * EACH and ts:count("item", linda.any) == 0)

-- nil fields are refused, the space is untouched.
local ok, err = pcall(ts.out, ts, "bad", nil, 3)
assert(not ok and err:find("field 2 is nil"), err)
ok, err = pcall(ts.take, ts)
assert(not ok and err:find("at least one field"), err)
ok, err = pcall(ts.out, ts, coroutine.create(print))
assert(not ok and err:find("cannot send value of type thread"), err)
assert(ts:count(linda.any) == 0 and ts:count(linda.any, linda.any, linda.any) == 0)
-- A take that cannot block (inside a C call that cannot yield) fails, and
-- leaves no waiter behind to swallow a later tuple; with a tuple there, it works.
ok, err = pcall(table.sort, {1, 2}, function() ts:take("unyieldable") return false end)
assert(not ok and err:find("cannot block here"), err)
ts:out("unyieldable", 1)
assert(select(2, ts:inp("unyieldable", linda.int)) == 1, "the refused take left no waiter")
ts:out("ready", 5)
local got_inside
table.sort({1, 2}, function() got_inside = got_inside or select(2, ts:take("ready", linda.int)) return false end)
assert(got_inside == 5)
print("linda_out_take ok")
