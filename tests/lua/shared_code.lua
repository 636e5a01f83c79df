-- The code and strings every process of a node shares (crates/lua/src/vm/shared.rs):
-- a process sees nothing of it. Strings it makes are the shared ones where
-- the text is the same (table keys and equality work across both), the
-- metamethod names and reserved words work, bundled modules load with
-- their source and lines and survive every kind of collection, many
-- processes on all workers use them at once, and a bundled module costs a
-- process only what running its main chunk makes. A bundled module's
-- function crosses by name (the receiver's own), any other by copy. The
-- entity loop is frozen: its functions, closures and upvalues, are the
-- node's, which no process may change, and an entity's state holds
-- nothing of it.
local s = require "synodic"
local me = s.self()

-- Everything one process checks; returns a checksum of what it computed.
local function exercise(tag)
  local s = require "synodic"
  -- A string made at run time is the shared one of the same text.
  local key = "sy" .. "nodic"
  assert(package.loaded[key] == s, "a made string finds a module by name")
  local t = {main = 1}
  assert(t[("ma") .. "in"] == 1, "a made key finds a constant one")
  t[table.concat({"re", "ceive"})] = 2
  assert(t.receive == 2, "a constant key finds a made one")
  local loop = require "synodic.entity.loop"
  assert(loop.tags().READY == "\0e" .. ".y", "a bundled module's constant equals the same text")
  -- Metamethod names, as the node's.
  local mt = {__index = function(_, k) return k .. "!" end, __eq = function() return true end,
    __lt = function() return true end, __concat = function() return "cat" end, __len = function() return 9 end,
    __call = function(_, x) return x + 1 end}
  local a, b = setmetatable({}, mt), setmetatable({}, mt)
  assert(a.x == "x!" and a == b and a < b and a .. b == "cat" and #a == 9 and a(1) == 2, "metamethods")
  local closed = false
  do local _ <close> = setmetatable({}, {__close = function() closed = true end}) end
  assert(closed, "__close")
  local collected = false
  setmetatable({}, {__gc = function() collected = true end})
  collectgarbage()
  assert(collected, "__gc")
  -- A first parse in this process: the reserved words are the node's.
  local f = assert(load("local x <const> = 20 if x and not false then return x // 2 end"))
  assert(f() == 10, "a chunk parsed late")
  -- Bundled code keeps its source and lines, and can be dumped and loaded.
  local entity = require "synodic.entity"
  local info = debug.getinfo(entity.spawn, "SL")
  assert(info.source == "@lualib/entity.lua" and info.linedefined > 0 and next(info.activelines), "debug information")
  local ok, err = pcall(entity.spawn, {frame_rate = -1})
  assert(not ok and err:find("frame_rate must be a positive number"), err)
  assert(debug.traceback():find("shared_code.lua"), "tracebacks")
  local copy = load(string.dump(loop.main))
  assert(type(copy) == "function", "a bundled function dumps and loads")
  -- Every kind of collection, with bundled modules in use.
  for _, mode in ipairs({"generational", "incremental"}) do
    collectgarbage(mode)
    for _ = 1, 3 do
      local skel = require "synodic.skel"
      collectgarbage()
      collectgarbage("step", 0)
      assert(type(skel) == "table" and type(require("synodic.future")) == "table")
    end
  end
  return tag * 2
end

assert(exercise(1) == 2)

-- Many processes on every worker at once.
local N = 200
for i = 1, N do
  s.spawn(function(parent, i) s.send(parent, "done", exercise(i)) end, me, i)
end
local sum = 0
for _ = 1, N do
  local _, v = s.receive_match("done")
  sum = sum + v
end
assert(sum == N * (N + 1), "every process ran")

-- A bundled module costs a process what its main chunk makes, not a copy
-- of its code (skel is ~20 KB of code and constants); a frozen one (the
-- entity loop) only a table of the node's functions.
local function growth(module)
  s.spawn(function(parent)
    collectgarbage()
    local before = collectgarbage("count")
    require(module)
    s.send(parent, "grew", (collectgarbage("count") - before) * 1024)
  end, me)
  local _, grew = s.receive_match("grew")
  print(string.format("requiring %s: %.0f bytes", module, grew))
  return grew
end
assert(growth("synodic.skel") < 6000, "requiring skel took too much: its code is not shared")
assert(growth("synodic.entity.loop") < 600, "requiring the entity loop made more than a table: it is not frozen")
-- A bundled module's function crosses as its name: the receiver gets its
-- own, with its own module state. A user's function, even one put in a
-- bundled module's table, crosses as a copy.
local skel, loop = require "synodic.skel", require "synodic.entity.loop"
package.loaded["synodic.skel"].mine = function() return "mine" end
s.spawn(function(parent, farm, lookup, mine)
  local ok = rawequal(farm, require("synodic.skel").farm) and rawequal(lookup, require("synodic.entity.loop").lookup)
  s.send(parent, "named", ok, require("synodic.skel").mine, mine())
end, me, skel.farm, loop.lookup, package.loaded["synodic.skel"].mine)
local _, named, theirs, mine = s.receive_match("named")
assert(named, "bundled functions arrive as the receiver's own")
assert(theirs == nil and mine == "mine", "a user's function in a bundled module's table is copied")
package.loaded["synodic.skel"].mine = nil

-- The entity loop's functions are the node's (frozen), closures and
-- upvalues: no process may change their upvalues, and their values are
-- the same C functions as a process's own.
local ok, err = pcall(debug.setupvalue, loop.main, 1, print)
assert(not ok and err:find("a function the node shares"), err)
ok, err = pcall(debug.upvaluejoin, function() return ok end, 1, loop.main, 1)
assert(not ok and err:find("a function the node shares"), err)
ok, err = pcall(debug.upvaluejoin, loop.lookup, 1, function() return ok end, 1)
assert(not ok and err:find("a function the node shares"), err)
local names = {}
for i = 1, 255 do
  local name, value = debug.getupvalue(loop.main, i)
  if name == nil then break end
  names[name] = value
end
assert(names.send == s.send and names.self_pid == s.self, "upvalues hold the kernel's functions")
assert(debug.setupvalue(function() return names end, 1, {}) == "names", "other functions' upvalues still change")
-- A process's table of a frozen module is its own.
loop.mine = true
s.spawn(function(parent) s.send(parent, "mine", require("synodic.entity.loop").mine) end, me)
assert(select(2, s.receive_match("mine")) == nil, "a frozen module's table is each process's")
loop.mine = nil

-- A process started with the loop's main is a copy of a template that
-- holds nothing of the loop: its functions are the node's, and an
-- entity's state is what the entity itself makes. Nor does it hold
-- anything of another copy.
local entity = require "synodic.entity"
local probe = {
  loaded = function() return rawget(package.loaded, "synodic.entity.loop") ~= nil end,
  heap = function() collectgarbage() return collectgarbage("count") * 1024 end,
  mark = function(self, v) _G.mark = v end,
  read = function() return _G.mark end,
}
local e1 = entity.spawn{methods = probe}
local e2 = entity.spawn{methods = probe}
assert(not entity.call(e1, "loaded"), "an entity runs its loop without loading it")
local heap = entity.call(e2, "heap")
print(string.format("an entity's state: %.0f bytes", heap))
assert(heap < 7500, "an entity's state is " .. heap .. " bytes: it holds the loop's closures")
entity.call(e1, "mark", "one")
assert(entity.call(e2, "read") == nil and entity.call(e1, "read") == "one", "copies share nothing")
entity.kill(e1) entity.kill(e2)
print("shared_code ok")
