-- The string metatable is made the first time a process looks it up (the
-- vendored Lua's twelfth change): an idle process does not hold it, and no
-- program can tell otherwise. Each case runs in a fresh process, whose
-- first look-up is the one under test.
local s = require "synodic"
local me = s.self()

-- Runs `body` in a new process and returns what it returns (or its error).
local function fresh(body)
  s.spawn(function(me, body)
    local s = require "synodic"
    s.send(me, "done", pcall(body))
  end, me, body)
  local _, ok, a, b, c = s.receive_match("done")
  assert(ok, a)
  return a, b, c
end

-- An idle process does not hold it; the first look-up makes it.
local idle, used = fresh(function()
  collectgarbage() collectgarbage()
  local before = collectgarbage("count") * 1024
  local _ = ("x"):upper()
  collectgarbage() collectgarbage()
  return before, collectgarbage("count") * 1024
end)
assert(used - idle >= 300, ("the first string method took %d bytes"):format(used - idle))

-- Made, it is the metatable `luaopen_string` makes.
assert(fresh(function()
  local mt = getmetatable("")
  assert(type(mt) == "table" and mt.__index == string and getmetatable("x") == mt)
  assert(("abc"):upper() == "ABC" and ("%d"):format(7) == "7")
  assert("10" + 1 == 11 and "3" * "4" == 12 and -"2" == -2 and "7" // "2" == 3)
  assert("2" ^ "3" == 8 and "7" % "4" == 3 and "1" - "1" == 0 and "1" / "2" == 0.5)
  local keys = {}
  for k in pairs(mt) do keys[#keys + 1] = k end
  table.sort(keys)
  return table.concat(keys, " ")
end) == "__add __div __idiv __index __mod __mul __pow __sub __unm")

-- Each way in makes it: arithmetic first, an index first, the C API first
-- (`tostring` asks for `__tostring`), the debug library first.
for _, first in ipairs({
  function() return "1" + 1 end,
  function() return ("a"):rep(2) end,
  function() return tostring("a") end,
  function() return debug.getmetatable("") ~= nil end,
}) do
  assert(fresh(function()
    first()
    return getmetatable("").__index == string and "2" * 2 == 4
  end))
end

-- Its __index is the library as opened, whatever replaced it since.
assert(fresh(function()
  local lib = string
  string = {} package.loaded.string = {}
  return getmetatable("").__index == lib and ("a"):upper() == "A"
end))

-- A metatable set before the first look-up is the one strings keep.
assert(fresh(function()
  debug.setmetatable("", nil)
  local ok, err = pcall(function() return ("x"):upper() end)
  assert(not ok and string.find(err, "attempt to index a string value"), err)
  assert(getmetatable("") == nil and not pcall(function() return "1" + 1 end))
  local mine = {__index = {twice = function(x) return x .. x end}}
  debug.setmetatable("", mine)
  return getmetatable("") == mine and ("ab"):twice() == "abab"
end))

-- Made at any point of a collection, in a coroutine, in both modes: the
-- collector must keep the new table and the library behind it.
for _, mode in ipairs({"incremental", "generational"}) do
  for step = 1, 24 do
    assert(fresh(function()
      collectgarbage(mode)
      local junk = {}
      for i = 1, step * 25 do junk[i] = {i} end
      junk = nil
      collectgarbage("step", step % 4)
      local made = coroutine.wrap(function() return ("a"):upper() end)()
      for i = 1, 500 do local _ = {i} end
      collectgarbage() collectgarbage()
      return made == "A" and getmetatable("").__index == string and ("b"):upper() == "B"
    end))
  end
end

-- A C function whose stack is full when it asks (`tostring` on its last
-- slot): the metatable is made above the top without growing the stack.
assert(fresh(function()
  local t = {}
  for i = 1, 200 do t[i] = "s" .. i end
  local function last(...) return tostring(select(select("#", ...), ...)) end
  return last(table.unpack(t)) == "s200" and ("x"):len() == 1
end))

print("string_metatable ok")
