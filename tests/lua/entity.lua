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
entity.kill(e)
print("entity ok")
