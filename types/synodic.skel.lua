---@meta synodic.skel
-- Lithium's skeletons (SPEC §6).

---@class synodic.skeleton

---@class synodic.evaluator
local evaluator = {}
---Adds a task to the stream.
---@param task any
function evaluator:add_task(task) end
---An iterator over the results, as they complete.
---@return fun(): any
function evaluator:results() end
---Per node: {done, in_flight, bytes_caller, bytes_nodes, limit}.
---@return table<string, table>
function evaluator:stats() end

---@class synodic.skel
local skel = {}

---Applies `f` to a task.
---@param f function
---@return synodic.skeleton
function skel.seq(f) end

---Applies `w` to each task, tasks in parallel.
---@param w synodic.skeleton|function
---@param opts? {workers?: integer}
---@return synodic.skeleton
function skel.farm(w, opts) end

---Stage after stage, stages in parallel over the stream.
---@param ... synodic.skeleton|function
---@return synodic.skeleton
function skel.pipeline(...) end

---`merge(results of w over split(task))`.
---@param split function
---@param w synodic.skeleton|function
---@param merge function
---@return synodic.skeleton
function skel.map(split, w, merge) end

---Divide and conquer.
---@param trivial function
---@param solve function
---@param divide function
---@param combine function
---@return synodic.skeleton
function skel.dc(trivial, solve, divide, combine) end

---Runs `program` over `tasks`; the results in task order.
---@param program synodic.skeleton|function
---@param tasks any[]
---@param opts? table nodes, lookahead, lazy, progress
---@return any[]
function skel.run(program, tasks, opts) end

---The streaming form of `run`.
---@param program synodic.skeleton|function
---@param opts? table
---@return synodic.evaluator
function skel.evaluator(program, opts) end

return skel
