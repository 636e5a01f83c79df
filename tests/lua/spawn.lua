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
assert(not ok and err:find("no such node: nowhere", 1, true), err)

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
-- So do the to-be-closed variables a failing process left open.
s.spawn(function(p)
  local guard <close> = setmetatable({}, {__close = function() s.send(p, "closed") end})
  error("fails holding a to-be-closed variable")
end, me)
assert(s.receive(5) == "closed", "the pending <close> ran when the process ended")

-- A process sending the same code again and again sends its bytecode from a
-- cache (keyed by prototype): each closure still brings its own upvalues,
-- and more distinct functions than the cache holds still go through.
for i = 1, 5 do
  local tag = "closure" .. i
  s.spawn(function(p) s.send(p, tag) end, me)
  assert(s.receive(5) == tag, "each closure's own upvalue")
end
for i = 1, 80 do
  local f = load("local s, p, i = ... ; s.send(p, i * 2)")
  s.spawn(f, s, me, i)
  assert(s.receive(5) == i * 2, "distinct prototype " .. i)
end
collectgarbage()
for i = 1, 3 do
  local f = load("local s, p = ... ; s.send(p, 'fresh')")
  s.spawn(f, s, me)
  assert(s.receive(5) == "fresh", "code loaded after a collection")
end

-- A new process's collector waits for its first kilobytes, then runs as
-- usual: garbage made in a loop is collected without being asked for.
s.spawn(function(p)
  local peak = 0
  for i = 1, 20000 do
    local t = {i, tostring(i)}
    if i % 1000 == 0 then peak = math.max(peak, collectgarbage("count")) end
  end
  s.send(p, peak)
end, me)
local peak = s.receive(10)
assert(peak and peak < 1024, "garbage is collected: peak " .. tostring(peak) .. " KB")
-- Spawns that start alike (the same function and first argument, from the
-- second time on a copy of a state that decoded them): each process still
-- gets values of its own, the later arguments come decoded anew, and
-- references from them into the first argument hold.
local counter = 0
local function bump() counter = counter + 1 return counter end
local shared = {n = 0}
local config = {bump = bump, again = bump, shared = shared, list = {1, 2, 3}}
local function alike(cfg, parent, i, same)
  cfg.shared.n = cfg.shared.n + i
  cfg.list[#cfg.list + 1] = i
  s.send(parent, i, cfg.bump(), cfg.again(), cfg.shared.n, #cfg.list, same == cfg.shared, rawequal(cfg.bump, cfg.again))
end
-- (A later argument that is one of the first argument's tables has the
-- message decoded whole, one that is not only the rest: both are run.)
for _, later in ipairs{shared, false} do
  for i = 1, 6 do
    s.spawn(alike, config, me, i, later)
    local got, c1, c2, n, len, same, joined = s.receive(5)
    assert(got == i, "spawn " .. i .. " replied")
    assert(c1 == 1 and c2 == 2, "a fresh upvalue each time, shared by both functions: " .. c1 .. " " .. c2)
    assert(n == i and len == 4, "a fresh first argument each time: " .. n .. " " .. len)
    assert(same == (later == shared) and joined, "a later argument is the first argument's table; one function in two fields")
  end
end
assert(counter == 0 and shared.n == 0 and #config.list == 3, "the spawner's values are untouched")
-- A spawn whose first argument differs starts from it, not from the other's.
s.spawn(alike, {bump = bump, again = bump, shared = {n = 100}, list = {}}, me, 1, shared)
local _, _, _, n, len, same = s.receive(5)
assert(n == 101 and len == 1 and same == false)
print("spawn ok")
