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
---This node's live processes (with `max`, the top `max` by "cpu", "memory"
---or "mailbox"), and how many live.
---@param max? integer
---@param by? "cpu"|"memory"|"mailbox"
---@return {pid: synodic.pid, state: string, on: string, mailbox: integer, memory: integer, cpu: number, names: string[]}[]
---@return integer
function control.processes(max, by) end
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

---The tuple scope's hold on this node's tuple operations: "view", "stop",
---"continue", "step" (the oldest held, or `arg`'s), "break" (condition
---`arg`, or none).
---@param what string
---@param arg? any
---@return table?
function control.scope(what, arg) end
---This node's figures: messages delivered, resident bytes, processor
---seconds, processes, workers, load, the task pool, bytes per link.
---@return table
function control.node_stats() end
---Whether `proof` (hex) is HMAC-SHA256 of `nonce` under `key` (hex).
---@param key string
---@param nonce string
---@param proof string
---@return boolean
function control.proof_ok(key, nonce, proof) end
---128 random bits as 32 hex digits.
---@return string
function control.token() end
---This node's processes that said what they are (skeleton runs, entities).
---@return {pid: synodic.pid, role: string}[]
function control.roles() end
---The dashboard page's file at `path` and its content type, or nil.
---@param path string
---@return string?, string?
function control.asset(path) end

---The pid printed as `text` ("<0.4.0>"), or nil.
---@param text string
---@return synodic.pid?
function control.pid(text) end

return control
