---@meta synodic.entity
-- VEOS's entities (SPEC §7).

---@class synodic.entity
---@field flow_limit integer calls in flight per caller before send_flow waits
local entity = {}

---Starts an entity; returns its id.
---@param spec {name?: string, node?: string, init?: function, methods?: table<string, function>, persist?: table<string, function>, frame_rate?: number}
---@return any
function entity.spawn(spec) end

---Asynchronous call of method `m`.
---@param e any
---@param m string
---@param ... any
function entity.send(e, m, ...) end

---Asynchronous call that waits while too many of the caller's calls are unprocessed.
---@param e any
---@param m string
---@param ... any
function entity.send_flow(e, m, ...) end

---Synchronous call: returns the method's results.
---@param e any
---@param m string
---@param ... any
---@return any ...
function entity.call(e, m, ...) end

---Installs or replaces a method while the entity runs.
---@param e any
---@param m string
---@param f function
function entity.define(e, m, f) end

---Removes a method.
---@param e any
---@param m string
function entity.undefine(e, m) end

---Installs a persistent procedure (run once per frame).
---@param e any
---@param p string
---@param f function
function entity.persist(e, p, f) end

---Removes a persistent procedure.
---@param e any
---@param p string
function entity.unpersist(e, p) end

---Disposes of an entity.
---@param e any
function entity.kill(e) end

---The calling entity's id.
---@return any
function entity.self() end

return entity
