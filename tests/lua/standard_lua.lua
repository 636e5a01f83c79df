-- Inside any process Lua is plain Lua 5.4.8: the libraries Synodic makes
-- lazily cannot be told apart from libraries opened up front, and the
-- process's main thread is not a coroutine. Checked in the main process and
-- in a spawned one.
local s = require "synodic"

local function check()
  -- The global table has no metatable, and everything is there, raw.
  assert(getmetatable(_G) == nil)
  assert(rawget(_G, "load") == load and rawget(_G, "string") == string and rawget(_G, "_G") == _G)
  assert(rawget(_G, "_VERSION") == "Lua 5.4")
  local names = {}
  for k in pairs(_G) do names[k] = true end
  for _, k in ipairs{"assert", "print", "pairs", "require", "setmetatable", "xpcall", "warn",
                     "string", "table", "math", "io", "os", "coroutine", "utf8", "debug", "package"} do
    assert(names[k], "pairs(_G) misses " .. k)
  end
  -- Libraries: no metatable, every function listed.
  assert(getmetatable(string) == nil and getmetatable(math) == nil)
  local n = 0
  for _ in pairs(string) do n = n + 1 end
  assert(n == 17, "string has 17 functions, pairs saw " .. n)
  assert(rawget(math, "pi") == math.pi and math.type(rawget(math, "maxinteger")) == "integer")
  assert(getmetatable("").__index == string)
  assert(package.loaded.string == string and require("string") == string and require("_G") == _G)
  assert(select("#", require("string")) == 1, "an already loaded module: one result")
  assert(io.write and io.stdout and io.type(io.stdout) == "file")

  -- Removing a library removes it, for good (also after the table grows).
  local saved = os
  os = nil
  for i = 1, 100 do _G["filler" .. i] = i end
  assert(os == nil and rawget(_G, "os") == nil)
  for i = 1, 100 do _G["filler" .. i] = nil end
  os = saved

  -- The strict-mode idiom: the standard names are not undeclared.
  setmetatable(_G, {__index = function(_, k) error("undeclared " .. k, 2) end,
                    __newindex = function(_, k) error("undeclared " .. k, 2) end})
  assert(type(tostring) == "function" and type(utf8.char) == "function")
  assert(not pcall(function() return undeclared_name end))
  setmetatable(_G, nil)
  assert(type(select) == "function")

  -- The main thread is no coroutine.
  assert(coroutine.isyieldable() == false)
  local ok, err = pcall(coroutine.yield, 1)
  assert(not ok and err:find("outside a coroutine"), tostring(err))
  local main, ismain = coroutine.running()
  assert(ismain and not coroutine.isyieldable(main))
  assert(coroutine.wrap(function() return coroutine.isyieldable() end)())

  -- coroutine.wrap closes pending to-be-closed variables when the
  -- coroutine fails, and an error in closing passes on.
  local closed = false
  local f = coroutine.wrap(function()
    local x <close> = setmetatable({}, {__close = function() closed = true end})
    error("inside")
  end)
  ok, err = pcall(f)
  assert(not ok and err:find("inside") and closed)
  f = coroutine.wrap(function()
    local x <close> = setmetatable({}, {__close = function() error("in closing") end})
    error("inside")
  end)
  ok, err = pcall(f)
  assert(not ok and err:find("in closing"), tostring(err))
  return true
end

assert(check())
local me = s.self()
s.spawn(function() s.send(me, pcall(check)) end)
local ok, err = s.receive()
assert(ok, err)
print("standard_lua ok")
