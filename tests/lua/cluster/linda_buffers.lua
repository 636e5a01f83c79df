-- synodic-args: --nodes 3
-- Large tuples stay home (SPEC §5): a buffer of 64 KiB or more in an out
-- to another node's space stays on the producer's node, the space holds a
-- reference, and a taker's node pulls the bytes straight from the
-- producer, once for all its readers at the same time; small buffers
-- travel with the tuple. A tuple whose producer is lost fails to be taken
-- with a clear error.
local s = require "synodic"
local linda = require "synodic.linda"
local testkit = require "testkit"

local me = s.self()
local producer, readers = table.unpack(testkit.other_nodes())
local MB = 1 << 20
local ts = linda.open("big")
ts:count("claim")

-- Three readers on one node, blocked in rd before the tuple comes.
for i = 1, 3 do
  s.spawn_on(readers, function(boss)
    local s, linda = require "synodic", require "synodic.linda"
    s._fetched()
    local _, b = linda.open("big"):rd("blob", linda.buffer)
    s.send(boss, "read", #b, b[1], b[#b], s._fetched())
  end, me)
end
testkit.await_waiting("big", 3)
local killer = s.spawn_on(producer, function(boss)
  local s, buffer = require "synodic", require "synodic.buffer"
  local ts = require("synodic.linda").open("big")
  local b = buffer.new(MB, "u8")
  b[1], b[MB] = 7, 9
  ts:out("blob", b)
  local small = buffer.new(1000, "u8")
  small[1000] = 5
  ts:out("small", small)
  s.send(boss, "produced")
  s.receive()
  os.exit(3)
end, me)
assert(s.receive_match("produced", 30))

local moved = 0
for _ = 1, 3 do
  local _, n, first, last, fetched = s.receive_match("read", 30)
  assert(n == MB and first == 7 and last == 9, "the bytes as produced")
  moved = moved + fetched
end
assert(moved >= MB and moved < 2 * MB, "the readers' node fetched the bytes once: " .. moved)

-- The space holds a reference: a reader on its node fetches the bytes from the producer.
s._fetched()
local _, b = ts:rd("blob", linda.buffer)
assert(#b == MB and b[MB] == 9)
assert(s._fetched() >= MB, "the bytes were not in the space's node")
local _, small = ts:take("small", linda.buffer)
assert(#small == 1000 and small[1000] == 5)
assert(s._fetched() < MB + 100, "a small buffer travels with its tuple")

-- Taken on another node, the bytes come from the producer too.
s.spawn_on(readers, function(boss)
  local s, linda = require "synodic", require "synodic.linda"
  local _, b = linda.open("big"):take("blob", linda.buffer)
  s.send(boss, "taken", #b, b[1])
end, me)
local _, n, first = s.receive_match("taken", 30)
assert(n == MB and first == 7)

-- Two large buffers in one tuple: the taker fetches one, then the other
-- (its wait for the second begins where the first ended).
s.spawn_on(producer, function(boss)
  local buffer = require "synodic.buffer"
  local x, y = buffer.new(MB, "u8"), buffer.new(MB // 2, "u8")
  x[MB], y[MB // 2] = 1, 2
  require("synodic.linda").open("big"):out("pair", x, y)
  require("synodic").send(boss, "paired")
end, me)
assert(s.receive_match("paired", 30))
s.spawn_on(readers, function(boss)
  local s, linda = require "synodic", require "synodic.linda"
  local _, x, y = linda.open("big"):take("pair", linda.buffer, linda.buffer)
  s.send(boss, "pair", #x, x[#x], #y, y[#y])
end, me)
local _, nx, lx, ny, ly = s.receive_match("pair", 30)
assert(nx == MB and lx == 1 and ny == MB // 2 and ly == 2, "both buffers, as produced")

-- A tuple whose producer is lost: taking it says why.
s.spawn_on(producer, function(boss)
  local b = require("synodic.buffer").new(MB, "u8")
  require("synodic.linda").open("big"):out("orphan", b)
  require("synodic").send(boss, "orphaned")
end, me)
assert(s.receive_match("orphaned", 30))
s.monitor_node(producer)
s.send(killer, "die")
assert(s.receive_match("nodedown", 30))
local ok, err = pcall(ts.take, ts, "orphan", linda.buffer)
assert(not ok and err:find("take: a buffer of this tuple was on a node that is lost", 1, true), err)
print("linda_buffers ok")
