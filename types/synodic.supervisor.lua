---@meta synodic.supervisor
-- Erlang's supervisors (SPEC §11).

---@class synodic.child_spec
---@field id any
---@field start function
---@field args? any[]
---@field restart? "permanent"|"transient"|"temporary"
---@field node? string a node name or "any"

---@class synodic.supervisor
local supervisor = {}

---Starts a supervisor and its children; returns its pid.
---@param opts {strategy?: "one_for_one"|"one_for_all"|"rest_for_one", intensity?: integer, period?: number, children?: synodic.child_spec[]}
---@return synodic.pid
function supervisor.start(opts) end

---The children: {id, pid (nil while restarting), node}.
---@param sup synodic.pid
---@return {id: any, pid: synodic.pid?, node: string}[]
function supervisor.which_children(sup) end

---Adds a child and starts it; returns its pid.
---@param sup synodic.pid
---@param spec synodic.child_spec
---@return synodic.pid?
function supervisor.start_child(sup, spec) end

---Ends a child and forgets it.
---@param sup synodic.pid
---@param id any
---@return boolean
function supervisor.terminate_child(sup, id) end

return supervisor
