-- The value codec (SPEC §1): what crosses a process boundary, and how.
local s = require "synodic"
local me = s.self()
local echo = s.spawn(function()
  while true do
    local from, v = s.receive()
    s.send(from, v)
  end
end)
local function roundtrip(v)
  s.send(echo, me, v)
  return s.receive()
end

-- Scalars; integer and float kept apart.
assert(roundtrip(nil) == nil and roundtrip(true) == true and roundtrip(false) == false)
assert(math.type(roundtrip(3)) == "integer" and math.type(roundtrip(3.0)) == "float")
assert(roundtrip(math.mininteger) == math.mininteger and roundtrip(math.maxinteger) == math.maxinteger)
assert(roundtrip(1/0) == 1/0 and roundtrip(-1/0) == -1/0)
local nan = roundtrip(0/0); assert(nan ~= nan)
assert(1/roundtrip(-0.0) == -1/0, "negative zero survives")
local bin = "a\0b\255\n" .. string.rep("x", 100000)
assert(roundtrip(bin) == bin, "strings are binary-safe")

-- Nested tables, shared references and cycles.
local shared = {"shared"}
local t = {1, 2.5, "three", {nested = {deep = true}}, a = shared, b = shared, [10] = "sparse", [2.5] = "float key", [true] = "bool key"}
t.self = t
local c = roundtrip(t)
assert(c ~= t and c[1] == 1 and math.type(c[2]) == "float" and c[3] == "three")
assert(c[4].nested.deep == true and c[10] == "sparse" and c[2.5] == "float key" and c[true] == "bool key")
assert(c.a == c.b and c.a[1] == "shared", "shared reference kept")
assert(c.self == c, "cycle kept")
assert(getmetatable(roundtrip(setmetatable({}, {}))) == nil, "metatables are not copied")

-- Functions with upvalues; globals resolve on the receiving side.
local base = 10
local function add(x) return x + base end
assert(roundtrip(add)(5) == 15)
local counter = 0
local function inc() counter = counter + 1 return counter end
local function get() return counter end
local pair = roundtrip({inc = inc, get = get})
pair.inc(); pair.inc()
assert(pair.get() == 2, "closures sharing an upvalue still share it")
local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
assert(roundtrip(fact)(10) == 3628800, "a recursive local function")
GLOBAL_IN_RECEIVER = nil
local reads_global = function() return string.format("%d", 7) end
assert(roundtrip(reads_global)() == "7", "globals are the receiver's")

-- Library values travel by name.
assert(roundtrip(string.format) == string.format)
assert(roundtrip(s) == s and roundtrip(math) == math)
-- A module loaded after tables were sent is known by name from then on
-- (the sender's record of which tables are modules is made anew).
assert(package.loaded["synodic.skel"] == nil, "not loaded yet")
local plain = {1}
assert(roundtrip(plain) ~= plain, "a plain table crosses as a copy")
local skel = require "synodic.skel"
assert(roundtrip(skel.seq) == skel.seq, "a module loaded since: its functions cross by name")
assert(roundtrip(skel) == skel, "and the module itself")
assert(roundtrip(plain) ~= plain, "and a plain table still as a copy")

-- Pids cross.
assert(roundtrip(me) == me and roundtrip({me})[1] == me)

-- Unsendable values: a clear error naming the type and where it sits.
local co = coroutine.create(function() end)
local ok, err = pcall(s.send, echo, me, {conn = co})
assert(not ok and err:find("cannot send value of type thread %(at %[2%]%.conn%)"), err)
ok, err = pcall(s.send, echo, io.stdout)
assert(not ok and err:find("cannot send value of type userdata %(at %[1%]%)"), err)
ok, err = pcall(s.send, echo, {list = {1, 2, co}})
assert(not ok and err:find("%(at %[1%]%.list%[3%]%)"), err)
local holds_co = function() return co end
ok, err = pcall(s.send, echo, holds_co)
assert(not ok and err:find("type thread %(at %[1%]<upvalue co>%)"), err)
ok, err = pcall(s.send, echo, coroutine.wrap(function() end))
assert(not ok and err:find("C function"), err)
local deep = {}
local cur = deep
for _ = 1, 300 do cur.next = {} cur = cur.next end
ok, err = pcall(s.send, echo, deep)
assert(not ok and err:find("nested deeper than 200 levels"), err)
local deep_ok = {}
cur = deep_ok
for _ = 1, 150 do cur.next = {} cur = cur.next end
assert(roundtrip(deep_ok).next.next ~= nil, "150 levels are fine")
local big = string.rep("0123456789abcdef", 65536)
assert(roundtrip(big) == big, "a 1 MB string")
-- The failed sends did not break anything.
assert(roundtrip("still fine") == "still fine")
print("values ok")
