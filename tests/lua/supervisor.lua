-- synodic.supervisor: restart types, the three strategies, intensity and
-- period, which_children, start_child and terminate_child, and argument
-- errors named.
local s = require "synodic"
local supervisor = require "synodic.supervisor"

local me = s.self()

-- A child that tells `me` it started, then waits; "crash" makes it fail.
local function worker(name, boss)
  local s = require "synodic"
  s.send(boss, "started", name, s.self())
  while true do
    local what = s.receive()
    if what == "crash" then error(name .. " crashed") end
    if what == "stop" then return end
  end
end

local function spec(id, restart)
  return {id = id, start = worker, args = {id, me}, restart = restart}
end

local function started(n)
  local got = {}
  for _ = 1, n do
    local _, name, pid = s.receive_match("started", 5)
    assert(name, "a child did not start")
    got[name] = pid
  end
  return got
end

local function pids(sup)
  local by = {}
  for _, c in ipairs(supervisor.which_children(sup)) do by[c.id] = c.pid end
  return by
end

-- one_for_one: only the crashed child restarts.
local sup = supervisor.start{strategy = "one_for_one", children = {spec("a"), spec("b"), spec("c")}}
local first = started(3)
local list = supervisor.which_children(sup)
assert(#list == 3 and list[1].id == "a" and list[2].pid == first.b and list[3].node == s.node())
s.send(first.b, "crash")
local again = started(1)
assert(again.b and again.b ~= first.b)
local now = pids(sup)
assert(now.a == first.a and now.c == first.c and now.b == again.b)

-- one_for_all: every child restarts.
local all = supervisor.start{strategy = "one_for_all", children = {spec("x"), spec("y"), spec("z")}}
first = started(3)
s.send(first.y, "crash")
again = started(3)
for _, id in ipairs{"x", "y", "z"} do assert(again[id] and again[id] ~= first[id], id) end

-- rest_for_one: the crashed child and those started after it.
local rest = supervisor.start{strategy = "rest_for_one", children = {spec("p"), spec("q"), spec("r")}}
first = started(3)
s.send(first.q, "crash")
again = started(2)
assert(again.q and again.r and not again.p)
assert(pids(rest).p == first.p)

-- Restart types: transient restarts only after an abnormal end, temporary never.
local types = supervisor.start{children = {spec("t1", "transient"), spec("t2", "temporary"), spec("t3", "transient")}}
first = started(3)
s.send(first.t1, "stop")   -- a normal end: gone for good
s.send(first.t2, "crash")  -- temporary: gone for good
s.send(first.t3, "crash")  -- transient, abnormal: restarted
again = started(1)
assert(again.t3)
-- The three ends reach the supervisor in any order: wait until it has
-- handled them all.
local listed
local t0 = s.clock()
repeat
  local ids = {}
  for _, c in ipairs(supervisor.which_children(types)) do ids[#ids + 1] = c.id end
  listed = table.concat(ids, ",")
until listed == "t3" or s.clock() - t0 > 5
assert(listed == "t3", listed)

-- start_child / terminate_child.
local pid = supervisor.start_child(sup, spec("d"))
assert(started(1).d == pid)
s.monitor(pid)
assert(supervisor.terminate_child(sup, "d") == true)
local _, who, why = s.receive_match("DOWN", 5)
assert(who == pid and why == "shutdown", tostring(why))
assert(pids(sup).d == nil)
local ok, err = pcall(supervisor.terminate_child, sup, "nobody")
assert(not ok and err:find("no child 'nobody'"), err)
ok, err = pcall(supervisor.start_child, sup, spec("a"))
assert(not ok and err:find("exists"), err)

-- Intensity: more than 2 restarts within 10 s end the supervisor with
-- "shutdown", and its children first.
local fragile = supervisor.start{intensity = 2, period = 10, children = {spec("f"), spec("g")}}
first = started(2)
s.monitor(fragile)
s.monitor(first.g)
local f = first.f
for i = 1, 3 do
  s.send(f, "crash")
  if i < 3 then f = started(1).f end
end
_, who, why = s.receive_match(function(t, w) return t == "DOWN" and w == fragile end, 5)
assert(why == "shutdown", tostring(why))
_, who, why = s.receive_match(function(t, w) return t == "DOWN" and w == first.g end, 5)
assert(why == "shutdown", tostring(why))
ok, err = pcall(supervisor.which_children, fragile)
assert(not ok and err:find("not running"), err)

-- Killing a supervisor ends its children (they are linked to it).
s.monitor(now.a)
s.kill(sup)
_, who, why = s.receive_match(function(t, w) return t == "DOWN" and w == now.a end, 5)
assert(why == "killed", tostring(why))

-- Bad specs are named.
for _, case in ipairs{
  {{strategy = "all_at_once"}, "strategy must be"},
  {{children = {{id = "n"}}}, "child 'n' needs a start function"},
  {{children = {{start = worker}}}, "needs an id"},
  {{children = {spec("a"), spec("a")}}, "two children with id 'a'"},
  {{children = {{id = "r", start = worker, restart = "sometimes"}}}, "restart must be"},
  {{intensity = -1}, "intensity must be"},
} do
  ok, err = pcall(supervisor.start, case[1])
  assert(not ok and err:find(case[2], 1, true), tostring(err))
end
-- A child that cannot start fails the start.
ok, err = pcall(supervisor.start, {children = {{id = "far", start = worker, node = 42}}})
assert(not ok and err:find("node must be"), err)
print("supervisor ok")
