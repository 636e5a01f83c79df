-- The node's pool workers (synodic_core::pool): each takes the node's tasks
-- one at a time, for as long as the node runs. A task's arguments that are
-- futures are resolved here, where the task runs, so another node's result
-- comes straight from that node. The results stay here, in the node's
-- store (s._resolve), until someone asks.
--
-- A task with a watcher tells it when it is done:
--   "$done", note, ok, load, fetched, efficiency, reply...
-- load: the node's tasks in hand; fetched: bytes this task's arguments
-- brought from other nodes; efficiency: the share of the task's time its
-- thread had a processor (low on a node other programs load); reply: what
-- the task passed to M.reply, or its error when it failed.
local s = require "synodic"

local M = {}

local replied

-- Values the running task sends its watcher with its done note (control
-- data, such as the futures of a split's parts).
function M.reply(...)
  replied = table.pack(...)
end

-- Replaces the futures among a task's arguments by their first result.
local function resolve_arguments(task, first)
  for i = first, task.n do
    local a = task[i]
    if s._is_future(a) then
      local got = table.pack(pcall(a.get, a))
      if not got[1] then return false, got[2] end
      task[i] = got[2]
    end
  end
  return true
end

-- Runs one task: wanted, origin, seq, weight, watcher, note, f, args...
local function run(task)
  local origin, seq, watcher, note, f = task[2], task[3], task[5], task[6], task[7]
  s._fetched()
  replied = nil
  local results
  local ok, err = resolve_arguments(task, 8)
  local wall, cpu = s.clock(), s._cpu_clock()
  if ok then
    results = table.pack(pcall(f, table.unpack(task, 8, task.n)))
  else
    results = table.pack(false, err)
  end
  wall, cpu = s.clock() - wall, s._cpu_clock() - cpu
  s._resolve(origin, seq, table.unpack(results, 1, results.n))
  if watcher then
    local efficiency = wall > 1e-4 and math.min(1, math.max(0, cpu / wall)) or 1
    local reply = results[1] and (replied or {n = 0}) or {n = 1, results[2]}
    s.send(watcher, "$done", note, results[1], s._pool_load(), s._fetched(), efficiency, table.unpack(reply, 1, reply.n))
  end
  replied = nil
end

function M.main()
  while true do
    local task = table.pack(s._pool_take())
    if task[1] then run(task) end
  end
end

return M
