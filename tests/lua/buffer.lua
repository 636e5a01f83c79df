-- synodic.buffer: typed views, bounds, payloads shared across processes
-- without copying, copy on write, buffers as tuple fields.
local s = require "synodic"
local buffer = require "synodic.buffer"
local linda = require "synodic.linda"
local me = s.self()

local b = buffer.new(4)
assert(#b == 4 and b:kind() == "f64" and b:size() == 32 and b[1] == 0.0)
b[2] = 2.5
b:set(3, 7)
assert(b[2] == 2.5 and b:get(3) == 7.0 and math.type(b[3]) == "float")
local ints = buffer.new(3, "i64")
ints:fill(-5)
assert(ints[1] == -5 and math.type(ints[1]) == "integer" and #ints:totable() == 3)
local bytes = buffer.from("AB\0")
assert(bytes:kind() == "u8" and #bytes == 3 and bytes[1] == 65 and bytes:bytes() == "AB\0")
local view = b:view("u8")
assert(#view == 32 and buffer.shares(view, b), "a view shares the payload")
assert(tostring(b):find("buffer: 4 f64"))

local ok, err = pcall(function() return b[5] end)
assert(not ok and err:find("out of range %(1..4%)"), err)
ok, err = pcall(function() bytes[1] = 300 end)
assert(not ok and err:find("0..255"), err)
ok, err = pcall(buffer.new, 3, "f32")
assert(not ok and err:find("u8"), err)
ok, err = pcall(buffer.new, "many")
assert(not ok and err:find("element count expected"), err)

-- A message carries the payload itself: what comes back is the same memory.
local big = buffer.new(1000000)
big[1000000] = 42
local echo = s.spawn(function() while true do local from, x = s.receive() s.send(from, x) end end)
s.send(echo, me, big)
local back = s.receive()
assert(buffer.shares(back, big) and back[1000000] == 42, "1M doubles crossed twice without a copy")

-- Copy on write: a process that writes gets its own copy; others see no change.
s.spawn(function(x) x[1] = 99 s.send(me, x[1], buffer.shares(x, x)) end, big)
local seen = s.receive()
assert(seen == 99 and big[1] == 0.0, "the writer's change stays in the writer")

-- As a tuple field: several readers, one payload.
local ts = linda.new()
ts:out("matrix", big)
for _ = 1, 3 do
  s.spawn(function(ts) local _, m = ts:rd("matrix", linda.buffer) s.send(me, m) end, ts)
end
for _ = 1, 3 do assert(buffer.shares(s.receive(), big)) end
assert(ts:count("matrix", linda.buffer) == 1 and ts:count("matrix", linda.table) == 0)
local _, taken = ts:take("matrix", linda.buffer)
assert(buffer.shares(taken, big))
print("buffer ok")
