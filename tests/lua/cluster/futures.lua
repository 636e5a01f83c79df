-- synodic-args: --nodes 3 --workers 2
-- Futures across nodes (SPEC §6): async_on runs f in another node's pool
-- and its result stays there; get brings it; errors come back as raised;
-- a future given to a task on a third node goes from its node straight to
-- that one, never through the caller, and once per node; a task on the
-- result's own node reads it where it is; futures cross in messages; a
-- result whose node is lost makes get fail with "node lost".
local s = require "synodic"
local testkit = require "testkit"
local me = s.self()
local nodes = s.nodes()
assert(#nodes == 3)
local b, c = table.unpack(testkit.other_nodes())

-- Each node computes its tasks; "any" picks one of them.
for _, n in ipairs(nodes) do
  local f = s.async_on(n, function(x) return require("synodic").node(), x * 2 end, 21)
  assert(f:node() == n)
  local where, value = f:get()
  assert(where == n and value == 42)
end
local anywhere = s.async_on("any", function() return require("synodic").node() end)
assert(anywhere:get() == anywhere:node())

-- Errors come back as they were raised.
local bad = s.async_on(b, function() error("far boom") end)
local ok, err = pcall(bad.get, bad)
assert(not ok and err:find("far boom", 1, true), err)

-- Data moves from its node to where it is used, not through the caller,
-- and once per node however many use it there while the node holds a
-- handle to it. (A holder keeps one there: the tasks alone may run one
-- after the other on a loaded machine, the first one's handle gone before
-- the second comes.)
local MB = 1 << 20
s._fetched()
local produced = s.async_on(b, function() return require("synodic.buffer").new(MB, "u8") end)
local holder = s.spawn_on(c, function(boss)
  local s = require "synodic"
  local held = s.receive()
  s.send(boss, "holding")
  s.receive()
end, me)
s.send(holder, produced)
assert(s.receive_match("holding", 5))
local consumers = {}
for i = 1, 2 do
  consumers[i] = s.async_on(c, function(x) local s = require "synodic" return #x, s._fetched(), s.node() end, produced)
end
local moved = 0
for i = 1, 2 do
  local size, bytes, where = consumers[i]:get()
  assert(size == MB and where == c)
  moved = moved + bytes
end
assert(moved >= MB and moved < 2 * MB, "the consumers' node fetched the bytes once: " .. moved)
s.send(holder, "done")
local in_place = s.async_on(b, function(x) return #x, require("synodic")._fetched() end, produced)
local size, bytes = in_place:get()
assert(size == MB and bytes == 0, "a task on the result's node reads it in place")
local through = s._fetched()
assert(through < 1000, "only small results came to the caller: " .. through)

-- A future in a message to a process of another node.
local mine = s.async_on(s.node(), function() return "from " .. require("synodic").node() end)
local reader = s.spawn_on(c, function(boss)
  local s = require "synodic"
  local fut = s.receive()
  s.send(boss, "read", fut:get(), fut:node())
end, me)
s.send(reader, mine)
local tag, value, home = s.receive_match("read", 5)
assert(value == "from " .. s.node() and home == s.node())

-- Results are freed once no node holds a handle to them: handles fetched
-- here and handles sent to a process on a third node, all dropped. (A
-- node's releases reach the home node before anything it sends there
-- later: links keep order.)
local function held_on(node)
  return s.async_on(node, function() return require("synodic")._futures_held() end):get()
end
collectgarbage()
local before = held_on(b)
local spread = {}
for i = 1, 20 do spread[i] = s.async_on(b, function() return require("synodic.buffer").new(65536, "u8") end) end
for i = 1, 10 do assert(#spread[i]:get() == 65536) end
local keeper = s.spawn_on(c, function(boss, b)
  local s = require "synodic"
  local got = s.receive()
  for _, f in ipairs(got) do assert(#f:get() == 65536) end
  s.send(boss, "got")
  s.receive()
  got = nil
  collectgarbage()
  s.send(boss, "left", s.async_on(b, function() return require("synodic")._futures_held() end):get())
end, me, b)
s.send(keeper, {table.unpack(spread, 11, 20)})
assert(s.receive_match("got", 5))
assert(held_on(b) >= before + 20, "the results live on their node")
spread = nil
collectgarbage()
-- A round trip to that node: this node's releases are there.
local echo = testkit.echo_on(b)
s.send(echo, me, "synced")
assert(s.receive_match("synced", 5))
s.send(keeper, "drop")
local _, left = s.receive_match("left", 5)
assert(left <= before, (left - before) .. " results still held on their node")

-- A lost node: its results fail with "node lost".
local killer = s.spawn_on(c, function() require("synodic").receive() os.exit(3) end)
local doomed = s.async_on(c, function() require("synodic").sleep(0.2) return "never" end)
s.send(killer, "die")
ok, err = pcall(doomed.get, doomed, 10)
assert(not ok and err:find("node lost: " .. c, 1, true), tostring(err))
local fine = s.async_on(b, function() return "still here" end)
assert(fine:get(5) == "still here")
print("futures ok")
