-- A spawner's memo of its last spawn's leading values (the function and
-- its first argument; crates/lua/src/vm/codec/memo.rs): a process that
-- spawns alike writes them as it wrote them last, when a walk finds them
-- the same. Whatever changed between two spawns must reach the second:
-- a table's field, a method, an upvalue, an array's element, a module
-- loaded since; shared tables and upvalue cells stay shared, and an
-- argument after them may refer to them.
local s = require "synodic"
local me = s.self()

-- Spawns `f(code, ...)` `n` times and returns what each sent back.
local function spawn_all(n, f, code, ...)
  local got = {}
  for i = 1, n do s.spawn(f, code, me, i, ...) end
  for _ = 1, n do
    local i, v = s.receive()
    got[i] = v
  end
  return got
end

local function call_ping(code, boss, i) require("synodic").send(boss, i, code.methods.ping()) end

-- 1. Alike: every spawn runs the same code (the memo is made, then used).
local methods = {ping = function() return "pong" end}
for _, v in ipairs(spawn_all(20, call_ping, {methods = methods})) do assert(v == "pong", v) end

-- 2. A method changed in place between spawns is the one the next runs.
methods.ping = function() return "pong 2" end
for _, v in ipairs(spawn_all(5, call_ping, {methods = methods})) do assert(v == "pong 2", "a changed method: " .. v) end

-- 3. An upvalue's value changed between spawns.
local word = "first"
methods.ping = function() return word end
for _, v in ipairs(spawn_all(5, call_ping, {methods = methods})) do assert(v == "first", v) end
word = "second"
for _, v in ipairs(spawn_all(5, call_ping, {methods = methods})) do assert(v == "second", "a changed upvalue: " .. v) end
word = 3.5
for _, v in ipairs(spawn_all(5, call_ping, {methods = methods})) do assert(v == 3.5, "a number upvalue") end
word = 3
for _, v in ipairs(spawn_all(5, call_ping, {methods = methods})) do
  assert(v == 3 and math.type(v) == "integer", "an integer where a float was")
end

-- 4. An array's element, and a field added.
local function sum(code, boss, i)
  local total = 0
  for _, x in ipairs(code.list) do total = total + x end
  require("synodic").send(boss, i, total + (code.extra or 0))
end
local code = {list = {1, 2, 3}}
for _ = 1, 3 do
  for _, v in ipairs(spawn_all(3, sum, code)) do assert(v == 6, v) end
end
code.list[2] = 20
for _, v in ipairs(spawn_all(3, sum, code)) do assert(v == 24, "an element changed: " .. v) end
code.list[4] = 100
for _, v in ipairs(spawn_all(3, sum, code)) do assert(v == 124, "an element added: " .. v) end
code.extra = 1000
for _, v in ipairs(spawn_all(3, sum, code)) do assert(v == 1124, "a field added: " .. v) end

-- 5. Shared tables and cells stay shared, and a later argument may name
-- one of the leading values' tables or functions.
local function shared(code, boss, i, again, f)
  local ok = code.a == code.b and again == code.a and f == code.bump
  code.bump()
  require("synodic").send(boss, i, ok and code.peek() == 1 and f() == 2)
end
local inner = {}
local count = 0
local pair = {a = inner, b = inner, bump = function() count = count + 1 return count end, peek = function() return count end}
for _ = 1, 3 do
  for _, v in ipairs(spawn_all(4, shared, pair, inner, pair.bump)) do assert(v == true, "shared tables, cells, later references") end
end

-- 6. A module loaded between spawns: what names it crosses by its name,
-- and a table sent before as a copy still crosses as one.
assert(package.loaded["synodic.skel"] == nil, "not loaded yet")
local plain = {tag = "plain"}
local holder = {plain = plain}
local function named(code, boss, i)
  local mod = code.mod == nil or code.mod == require("synodic.skel")
  require("synodic").send(boss, i, mod and code.plain.tag == "plain" and code.plain ~= require("synodic.skel"))
end
for _ = 1, 3 do
  for _, v in ipairs(spawn_all(3, named, holder)) do assert(v == true) end
end
holder.mod = require "synodic.skel"
for _ = 1, 3 do
  for _, v in ipairs(spawn_all(3, named, holder)) do assert(v == true, "a module loaded since crosses by name") end
end

-- 7. A first argument that always differs: every spawn sees its own.
local function own(code, boss, i) require("synodic").send(boss, i, code.i) end
for i = 1, 200 do s.spawn(own, {i = i}, me, i) end
for _ = 1, 200 do
  local i, v = s.receive()
  assert(v == i, "a first argument of its own")
end

-- 8. A value the walk does not take (a pid in the code) still crosses.
local function has_pid(code, boss, i) require("synodic").send(boss, i, code.boss == boss) end
for _ = 1, 3 do
  for _, v in ipairs(spawn_all(3, has_pid, {boss = me})) do assert(v == true, "a pid in the leading values") end
end

-- 9. Leading values longer than a template's get no memo, and still cross
-- whole, changed or not.
local function size(code, boss, i) require("synodic").send(boss, i, #code.blob .. code.blob:sub(1, 1)) end
local big = {blob = string.rep("a", 20000)}
for _, v in ipairs(spawn_all(3, size, big)) do assert(v == "20000a", v) end
big.blob = string.rep("b", 30000)
for _, v in ipairs(spawn_all(3, size, big)) do assert(v == "30000b", "a long value changed: " .. v) end

-- 10. Random changes, many rounds: what a spawned process sees of its
-- first argument is always what its spawner had at the spawn (a
-- deterministic dump of it, functions shown by what they return).
local function dump(v, seen)
  seen = seen or {}
  local t = type(v)
  if t == "function" then return "f(" .. dump(v(), seen) .. ")" end
  if t ~= "table" then return t .. ":" .. tostring(v) end
  if seen[v] then return "@" .. seen[v] end
  seen.n = (seen.n or 0) + 1
  seen[v] = seen.n
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = tostring(k) .. "=" .. dump(v[k], seen) end
  return "{" .. table.concat(out, ",") .. "}"
end
local function shows(code, boss, i)
  local function dump(v, seen) -- the same as the spawner's (sent as its upvalue)
    return code.dump(v, seen)
  end
  require("synodic").send(boss, i, dump(code.data))
end
local random = math.random
math.randomseed(39)
local cell = 1
local shared = {1, 2, 3}
local data = {a = 1, b = "two", list = {1, 2, 3}, nested = {x = {y = true}}, f = function() return cell end, s = shared, t = shared}
local choices = {
  function() data.a = random(1, 5) end,
  function() data.b = ("v"):rep(random(0, 3)) end,
  function() data.list[random(1, 4)] = random(1, 9) end,
  function() data.list[#data.list] = nil end,
  function() data.nested.x.y = not data.nested.x.y end,
  function() data.nested.z = random(2) == 1 and {} or nil end,
  function() cell = random(1, 3) end,
  function() local c = random(1, 3) data.f = function() return c end end,
  function() data.t = random(2) == 1 and shared or {1, 2, 3} end,
  function() data.g = random(2) == 1 and 2.5 or 2 end,
  function() shared[random(1, 3)] = random(1, 3) end,
}
local code = {data = data, dump = dump}
for round = 1, 400 do
  choices[random(#choices)]()
  local want = dump(data)
  s.spawn(shows, code, me, round)
  local r, got = s.receive()
  assert(r == round and got == want, "round " .. round .. ": sent " .. want .. ", seen " .. tostring(got))
end

print("spawn_memo ok")
