---@meta synodic.alua
-- ALua's agents (SPEC §3): processes that receive code.

---@class synodic.alua
---@field id string this agent's id ("main" for the main script)
local alua = {}

---Starts `n` agents (or agents with these names); returns their ids once all are ready.
---@param n integer|string[]
---@param opts? {on?: string|string[]}
---@return string[]
function alua.spawn(n, opts) end

---Sends Lua source text, run as one event in agent `id`.
---@param id string
---@param code string
function alua.send(id, code) end

---`send` to each of `ids`.
---@param ids string[]
---@param code string
function alua.mcast(ids, code) end

---Lua source text that rebuilds `v`.
---@param v any
---@return string
function alua.tostring(v) end

---Ends this agent (in the main script: the run, status 0).
function alua.exit() end

---Ends every agent and the run.
function alua.exit_all() end

---Sets the handler of messages that are not code events.
---@param handler fun(...)
function alua.on_message(handler) end

return alua
