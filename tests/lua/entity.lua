-- Entities (SPEC §7) on one node: every row, see modules/entity_rows.lua;
-- also spawn's errors.
local entity = require "synodic.entity"
require("entity_rows")(nil, "local")
local ok, err = pcall(entity.spawn, {init = function() error("init boom") end})
assert(not ok and err:find("init boom"), err)
ok, err = pcall(entity.spawn, {frame_rate = -1})
assert(not ok and err:find("frame_rate must be a positive number"), err)
local e = entity.spawn{name = "taken"}
ok, err = pcall(entity.spawn, {name = "taken"})
assert(not ok and err:find("already registered"), err)
-- A method or procedure that is not a function is the caller's error, at
-- the caller's line; the entity keeps what it had.
entity.define(e, "m", function() return 7 end)
ok, err = pcall(function() entity.define(e, "m", 5) end)
assert(not ok and err:find("entity.lua:%d+: entity.define: a function expected"), err)
ok, err = pcall(function() entity.persist(e, "p", {}) end)
assert(not ok and err:find("entity.lua:%d+: entity.persist: a function expected"), err)
assert(entity.call(e, "m") == 7, "a refused define changes nothing")
entity.undefine(e, "m")
ok, err = pcall(entity.call, e, "m")
assert(not ok and err:find("no method 'm'"), err)
entity.kill(e)
-- A start's READY that nobody waits for any more (its spawn stopped waiting)
-- is passed over by the next spawn, which gets its own.
local READY = require("synodic.entity.loop").tags().READY
local s = require "synodic"
s.send(s.self(), READY, -1, false, "a stale start")
local fresh = entity.spawn{methods = {v = function() return "mine" end}}
assert(entity.call(fresh, "v") == "mine")
entity.kill(fresh)
print("entity ok")
