-- The node's pool workers (synodic_core::pool): each takes the node's tasks
-- one at a time, for as long as the node runs. A task's arguments that are
-- futures are resolved here, where the task runs, so another node's result
-- comes straight from that node. The results stay here, in the node's
-- store (s._resolve), until someone asks; the task's watcher, if it has
-- one, is told it is done and how much work this node has in hand.
local s = require "synodic"

local M = {}

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
  local results
  local ok, err = resolve_arguments(task, 8)
  if ok then
    results = table.pack(pcall(f, table.unpack(task, 8, task.n)))
  else
    results = table.pack(false, err)
  end
  s._resolve(origin, seq, table.unpack(results, 1, results.n))
  if watcher then
    s.send(watcher, "$done", note, results[1], s._pool_load())
  end
end

function M.main()
  while true do
    local task = table.pack(s._pool_take())
    if task[1] then run(task) end
  end
end

return M
