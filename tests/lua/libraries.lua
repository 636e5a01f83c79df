-- The standard libraries and require work in every process.
local s = require "synodic"
local me = s.self()
local dir = arg[0]:match("^(.*)/[^/]*$") or "."

local function check(dir)
  assert(("abc"):upper() == "ABC" and ("x"):rep(3) == "xxx", "string methods")
  assert("10" + 1 == 11 and "3" * "4" == 12, "string arithmetic")
  assert(string.format("%5.1f", 3.14159) == "  3.1")
  assert(table.concat({1, 2, 3}, ",") == "1,2,3")
  local t = {3, 1, 2}; table.sort(t); assert(t[1] == 1 and t[3] == 3)
  assert(math.floor(2.5) == 2 and math.type(math.maxinteger) == "integer")
  assert(math.random(1, 1) == 1)
  assert(utf8.char(72, 228) == "Hä" and utf8.len("Hä") == 2)
  assert(type(os.time()) == "number" and os.getenv("HOME") ~= false)
  local co = coroutine.create(function() return 1 end)
  assert(coroutine.resume(co))
  assert(io.write ~= nil and io.stderr ~= nil)
  assert(type(debug.traceback()) == "string")
  assert(type(package.path) == "string" and package.loaded.string == string)
  package.path = dir .. "/modules/?.lua;" .. package.path
  local greeting = require "greeting"
  assert(greeting.hello("world") == "hello, world")
  assert(require("synodic.chan").new ~= nil)
  assert(load("return 1 + 1")() == 2)
  return true
end

assert(check(dir))
for i = 1, 4 do
  s.spawn(function(parent, dir) s.send(parent, pcall(check, dir)) end, me, dir)
end
for i = 1, 4 do
  local ok, err = s.receive()
  assert(ok, err)
end
print("libraries ok")

-- A process parses its first chunk of source late: reserved words met
-- before as ordinary strings (keys of a received table) must still be
-- keywords, and stay so after a full collection.
s.spawn(function(main, words)
  assert(words["while"] and words["end"] and words["_ENV"])
  collectgarbage()
  local f = assert(load("local n = 0 while n < 3 do n = n + 1 end return n, _ENV ~= nil"))
  local n, env = f()
  collectgarbage()
  assert(load("return function() if true then return 'kw' end end")()() == "kw")
  assert(not load("local end = 1"), "'end' is still reserved")
  s.send(main, n, env)
end, me, {["while"] = true, ["end"] = true, ["_ENV"] = true})
local n, env = s.receive(5)
assert(n == 3 and env == true, "a late first parse works")
