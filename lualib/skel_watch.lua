-- synodic.skel.watch: what the dashboard sees of a process's skeleton
-- runs (SPEC §12: progress, per node tasks in flight and limits, a task
-- stream). An evaluator says it runs (`started`) and ends (`ended`); the
-- process is then marked as a skeleton run for tools (`synodic._role`),
-- and its description (a probe: the dashboard's listing and inspect)
-- gains one line per run from `registry["synodic.stats"]`. The last few
-- results of each run are kept (`noted`) for the stream: a bounded list,
-- a clock read and a table write per result, nothing else while nobody
-- looks.

local s = require "synodic"

local M = {}

local STREAM = 8 -- results kept per run
local active = {} -- this process's running evaluators, in start order

local function summary()
  local lines = {}
  for _, ev in ipairs(active) do
    local elapsed = s.clock() - ev.started
    local parts = { string.format("run %d: %d/%d tasks done in %.1f s", ev.id, ev.finished, ev.added, elapsed) }
    for _, name in ipairs(ev.order) do
      local n = ev.nodes[name]
      parts[#parts + 1] = string.format("%s %d in flight (limit %d), %d done%s", name, n.in_flight, n.limit, n.done, n.alive and "" or ", lost")
    end
    local stream = {}
    for i = #ev.stream, 1, -1 do
      local r = ev.stream[i]
      stream[#stream + 1] = string.format("%s on %s at %.2f s", r[3], r[2], r[1])
    end
    if #stream > 0 then parts[#parts + 1] = "latest: " .. table.concat(stream, ", ") end
    lines[#lines + 1] = table.concat(parts, "\n  ")
  end
  return table.concat(lines, "\n")
end

function M.started(ev)
  ev.stream = {}
  active[#active + 1] = ev
  if #active == 1 then
    s._role("skeleton")
    debug.getregistry()["synodic.stats"] = summary
  end
end

-- A result of `ins` (an instruction of task ins.task) came from `node`.
function M.noted(ev, node, ins)
  local stream = ev.stream
  if #stream >= STREAM then table.remove(stream, 1) end
  stream[#stream + 1] = { s.clock() - ev.started, node.name, ins.kind .. " of task " .. tostring(ins.task and ins.task.index) }
end

function M.ended(ev)
  for i, e in ipairs(active) do
    if e == ev then table.remove(active, i) break end
  end
  if #active == 0 then
    s._role(nil)
    debug.getregistry()["synodic.stats"] = nil
  end
end

return M
