-- synodic-args: --nodes 2
-- Entities across nodes (SPEC §7): every row with the entity on the other
-- node, and from an entity on one node to an entity on the other.
local s = require "synodic"
local entity = require "synodic.entity"
local testkit = require "testkit"
local other = testkit.other_node()

require("entity_rows")(other, "remote")

-- An entity here calls one there, by name.
local far = entity.spawn{name = "far", node = other, methods = {node = function() return require("synodic").node() end}}
local near = entity.spawn{methods = {ask = function() return require("synodic.entity").call("far", "node") end}}
assert(entity.call(near, "ask") == other)
entity.kill(far)
entity.kill(near)
print("entities ok")
