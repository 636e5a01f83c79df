---@meta synodic
-- LuaLS annotations for Synodic's `synodic` module (SPEC §2, §6, §9, §11).
-- Point the Lua language server at this folder ("workspace.library") for
-- completion and checks. A test fails when a module exports a function
-- that these files do not describe.

---A process id: compares with `==`, works as a table key, prints as `<0.4.0>`.
---@class synodic.pid: lightuserdata

---A future (SPEC §6): the results of a task that runs in a node's pool.
---@class synodic.future: userdata
local future = {}
---Waits for the task's results and returns them; raises its error again; on timeout, no values.
---@param timeout? number seconds (0 polls)
---@return any ...
function future:get(timeout) end
---Whether `get` would return at once.
---@return boolean
function future:ready() end
---The node the results live on.
---@return string
function future:node() end

---@class synodic
local s = {}

---Starts `f(...)` in a new process; returns its pid at once.
---@param f function
---@param ... any sendable values
---@return synodic.pid
function s.spawn(f, ...) end

---Starts `f(...)` on `node` (`"any"`: the least loaded); waits for the new pid.
---@param node string
---@param f function
---@param ... any
---@return synodic.pid
function s.spawn_on(node, f, ...) end

---`spawn` with options: `max_memory` (bytes) is the process's memory limit.
---@param opts {max_memory?: integer}
---@param f function
---@param ... any
---@return synodic.pid
function s.spawn_opt(opts, f, ...) end

---`spawn`, linked to the caller.
---@param f function
---@param ... any
---@return synodic.pid
function s.spawn_link(f, ...) end

---`spawn_on`, linked to the caller.
---@param node string
---@param f function
---@param ... any
---@return synodic.pid
function s.spawn_link_on(node, f, ...) end

---The calling process's pid.
---@return synodic.pid
function s.self() end

---The main process's pid.
---@return synodic.pid
function s.main() end

---Sends the values to a pid or a registered name; never waits for the receiver.
---@param dest synodic.pid|string
---@param ... any at least one value
function s.send(dest, ...) end

---The next message's values; on timeout, no values.
---@param timeout? number seconds
---@return any ...
function s.receive(timeout) end

---The oldest message whose first value equals `filter` (or for which `filter(...)` is truthy); on timeout, no values.
---@param filter any|fun(...): boolean
---@param timeout? number
---@return any ...
function s.receive_match(filter, timeout) end

---Blocks only this process.
---@param seconds number
function s.sleep(seconds) end

---Seconds since the node started, on a monotonic clock.
---@return number
function s.clock() end

---The caller receives `"DOWN", pid, reason` when `pid` ends.
---@param pid synodic.pid
function s.monitor(pid) end

---Removes one monitor of `pid`; true when one was in place.
---@param pid synodic.pid
---@return boolean
function s.demonitor(pid) end

---The caller receives `"nodedown", node` when the node is lost.
---@param node string
function s.monitor_node(node) end

---Links the caller and `pid` (SPEC §11).
---@param pid synodic.pid
function s.link(pid) end

---Removes the link between the caller and `pid`.
---@param pid synodic.pid
function s.unlink(pid) end

---With true, a linked process's end arrives as `"EXIT", pid, reason`; returns the previous setting.
---@param on boolean
---@return boolean
function s.trap_exit(on) end

---Ends `pid`, on any node, whatever it does (default reason "killed").
---@param pid synodic.pid
---@param reason? any
---@return boolean
function s.kill(pid, reason) end

---Sends the message later; returns a timer reference.
---@param seconds number
---@param dest synodic.pid|string
---@param ... any
---@return integer
function s.send_after(seconds, dest, ...) end

---Cancels a `send_after`; true if the message had not been sent.
---@param ref integer
---@return boolean
function s.cancel_timer(ref) end

---Gives `name` to `pid` across the cluster.
---@param name string
---@param pid synodic.pid
---@return boolean
function s.register(name, pid) end

---The pid holding `name`, or nil.
---@param name string
---@return synodic.pid?
function s.whereis(name) end

---Whether `pid` is a live process.
---@param pid synodic.pid
---@return boolean
function s.is_alive(pid) end

---Ends the calling process (reason "normal" by default).
---@param reason? any
function s.exit(reason) end

---Ends the whole run with `status`.
---@param status? integer
function s.halt(status) end

---This node's name, or the name of `pid`'s node.
---@param pid? synodic.pid
---@return string
function s.node(pid) end

---All live nodes, this one included, sorted.
---@return string[]
function s.nodes() end

---Runs `f(...)` in the pool of the least loaded node; returns a future at once.
---@param f function
---@param ... any
---@return synodic.future
function s.async(f, ...) end

---`async` on `node` (a name, or "any").
---@param node string
---@param f function
---@param ... any
---@return synodic.future
function s.async_on(node, f, ...) end

---The first `n` futures to be ready, and the others (as ray.wait).
---@param futures synodic.future[]
---@param n? integer default 1
---@param timeout? number
---@return synodic.future[] ready
---@return synodic.future[] rest
function s.wait(futures, n, timeout) end

return s
