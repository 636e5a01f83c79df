-- synodic-args: --nodes 2
-- Long messages and buffers across nodes: buffers cross as their bytes
-- (every element kind, views, several in one message, inside tables);
-- messages longer than a frame arrive whole and in order with the short
-- ones around them; a small round trip is not stuck behind a 64 MB buffer;
-- what cannot cross is an error at the sender.
local s = require "synodic"
local buffer = require "synodic.buffer"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local echo = testkit.echo_on(other)

-- Buffers of each kind, several in one message, one of them twice.
local bytes = buffer.new(100000)
for i = 1, #bytes do bytes[i] = i % 251 end
local floats = buffer.new(1000, "f64")
for i = 1, #floats do floats[i] = i / 4 end
local ints = floats:view("i64")
s.send(echo, me, bytes, {inner = floats, again = bytes}, ints, "tail")
local b, t, v, tail = s.receive(10)
assert(tail == "tail")
assert(#b == 100000 and b[1] == 1 and b[100000] == 100000 % 251)
for i = 1, #b, 997 do assert(b[i] == i % 251) end
assert(t.inner[1000] == 250.0 and t.inner[3] == 0.75)
assert(t.again[5] == 5, "the same buffer twice arrives as its bytes each time")
assert(#v == 1000 and v[1] == ints[1], "a view keeps its element kind")
-- What arrived is the receiver's own: writing it changes nothing here.
b[1] = 200
assert(bytes[1] == 1)

-- A buffer given to spawn_on crosses with the function.
local sum = s.spawn_on(other, function(parent, buf)
  local s = require "synodic"
  local total = 0
  for i = 1, #buf do total = total + buf[i] end
  s.send(parent, "sum", total)
end, me, floats)
local _, total = s.receive_match("sum", 10)
assert(total == 1000 * 1001 / 8, total)

-- Long strings and tables, between short messages: all whole, in order.
local long = string.rep("0123456789", 300000) -- 3 MB
local big = {}
for i = 1, 200000 do big[i] = i end
s.send(echo, me, 1)
s.send(echo, me, long)
s.send(echo, me, 2)
s.send(echo, me, big)
s.send(echo, me, 3)
assert(s.receive(10) == 1)
assert(s.receive(10) == long)
assert(s.receive(10) == 2)
local got = s.receive(10)
assert(#got == 200000 and got[123456] == 123456)
assert(s.receive(10) == 3)

-- A 64 MB buffer in flight does not hold up a small round trip between
-- the same nodes: the reply comes back before the buffer has arrived (its
-- sender is slowed until most of it has gone; this process is not).
local sink = s.spawn_on(other, function(parent)
  local s = require "synodic"
  local buf = s.receive()
  s.send(parent, "arrived", #buf, buf[#buf])
end, me)
s.spawn(function(parent, sink)
  local s = require "synodic"
  local huge = require("synodic.buffer").new(64 << 20)
  huge[#huge] = 77
  s.send(parent, "sending")
  s.send(sink, huge)
end, me, sink)
assert(s.receive_match("sending", 10))
s.send(echo, me, "ping")
local first = table.pack(s.receive_match(function(m) return m == "ping" or m == "arrived" end, 30))
assert(first[1] == "ping", "the small message waited behind the 64 MB buffer")
local _, n, last = s.receive_match("arrived", 30)
assert(n == 64 << 20 and last == 77)

-- A tuple-space handle crosses, and comes back as the same space.
local space = require("synodic.linda").new()
s.send(echo, me, "space", space)
local _, back = s.receive_match("space", 10)
assert(back == space and rawequal(getmetatable(back), getmetatable(space)))

s.send(echo, me, "stop")
print("long_messages ok")
