---@meta synodic.chan
-- luaproc's named channels (SPEC §4): synchronous hand-offs.

---@class synodic.chan
local chan = {}

---Creates a channel; `nil, "exists"` if the name is taken.
---@param name string
---@return boolean|nil, string?
function chan.new(name) end

---Blocks until a receiver has taken the message.
---@param name string
---@param ... any
---@return boolean|nil, string?
function chan.send(name, ...) end

---Blocks until a message arrives; with `async`, no values at once when none waits.
---@param name string
---@param async? boolean
---@return any ...
function chan.receive(name, async) end

---Removes a channel; blocked senders and receivers get `nil, "deleted"`.
---@param name string
function chan.delete(name) end

return chan
