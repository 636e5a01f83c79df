---@meta synodic.future
-- The node's pool workers (started by the runtime, not by programs).

---@class synodic.future_pool
local pool = {}

---A pool worker's loop.
function pool.main() end

---Control data a running task sends its watcher with its done note.
---@param ... any
function pool.reply(...) end

return pool
