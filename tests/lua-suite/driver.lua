-- Runs one file of Lua 5.4.8's own test suite (vendor/lua-5.4.8-tests) the
-- way its all.lua does, in the main process or in a spawned one:
--   synodic run driver.lua FILE [main|spawn]
-- (from the suite's directory). Prints "SUITE OK FILE" at a normal end.
-- As all.lua: _soft and _port are on (no heavy or non-portable parts, which
-- include the tests of the stand-alone `lua` interpreter in main.lua and
-- files.lua), no internal tests (T), `debug` removed from the globals, and
-- most files run through string.dump and load; strings.lua, literals.lua
-- and gc.lua from source, code.lua, goto.lua, sort.lua and verybig.lua with
-- their debug information stripped.
local file, mode = ...
local from_source = {["strings.lua"] = true, ["literals.lua"] = true, ["gc.lua"] = true}
local stripped = {["code.lua"] = true, ["goto.lua"] = true, ["sort.lua"] = true, ["verybig.lua"] = true}

local function run(file)
  _soft, _port, _nomsg = true, true, true
  T = nil
  debug = nil
  function Message() end
  local f = assert(loadfile(file))
  if not from_source[file] then f = assert(load(string.dump(f, stripped[file]))) end
  return f()
end

if mode == "spawn" then
  local s = require "synodic"
  local p = s.spawn(function(file)
    run(file)
    require("synodic").send(require("synodic").main(), "done")
  end, file)
  s.monitor(p)
  local tag, _, reason = s.receive()
  assert(tag == "done", "the spawned run failed: " .. tostring(reason))
else
  run(file)
end
print("SUITE OK " .. file)
