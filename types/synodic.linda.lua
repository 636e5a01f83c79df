---@meta synodic.linda
-- Linda's tuple spaces (SPEC §5).

---A tuple space handle: sendable, names the same space on every node.
---@class synodic.space: userdata
local space = {}
---Adds a tuple (one or more fields, none nil).
---@param ... any
function space:out(...) end
---Removes a matching tuple; blocks until one exists.
---@param ... any values or formals (linda.int, linda.string, ...)
---@return any ...
function space:take(...) end
---Reads a matching tuple without removing it; blocks.
---@return any ...
function space:rd(...) end
---As `take`, but no values at once when nothing matches.
---@return any ...
function space:inp(...) end
---As `rd`, but no values at once when nothing matches.
---@return any ...
function space:rdp(...) end
---Fields that are functions run in new processes; the tuple is `out` when all are done.
function space:eval(...) end
---The number of matching tuples.
---@return integer
function space:count(...) end
---Removes every matching tuple; returns them, oldest first.
---@return any[][]
function space:take_all(...) end
---Empties the space.
function space:clear() end

---@class synodic.linda
---@field default synodic.space the space named "default"
---@field any table a formal matching any field
---@field int table a formal matching an integer
---@field float table a formal matching a float
---@field number table a formal matching a number
---@field string table a formal matching a string
---@field boolean table a formal matching a boolean
---@field table table a formal matching a table
---@field buffer table a formal matching a buffer
local linda = {}

---A handle to the named space (created on first use, cluster-wide).
---@param name string
---@return synodic.space
function linda.open(name) end

---A fresh private space.
---@return synodic.space
function linda.new() end

---The node a space lives on.
---@param space synodic.space
---@return string
function linda.where(space) end

return linda
