---@meta synodic.control
-- What tools written in Lua (the console) need from the runtime.

---@class synodic.control
local control = {}

---Writes `kind text` to a console's port; false when it is gone.
---@param port integer
---@param kind string
---@param text string
---@return boolean
function control.write(port, kind, text) end
---This node's live processes.
---@return {pid: synodic.pid, state: string, mailbox: integer, names: string[]}[]
function control.processes() end
---Asks `pid` to describe itself (the caller receives "probe", pid, text).
---@param pid synodic.pid
---@return boolean
function control.probe(pid) end
---The tuple spaces of this node.
---@return table[]
function control.spaces() end
---Tuples of one class of a space of this node.
---@return any[][]
function control.tuples(id, arity, first, max) end
---The node's processor time (every thread), in seconds.
---@return number
function control.node_cpu() end

---The pid printed as `text` ("<0.4.0>"), or nil.
---@param text string
---@return synodic.pid?
function control.pid(text) end

return control
