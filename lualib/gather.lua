-- synodic.gather: asks every node of a list for something, at once, and
-- waits for their answers with a deadline. The console's listings and the
-- dashboard's views are made this way: each node computes its own part
-- (its processes' top, its spaces), so only that part crosses.

local s = require "synodic"

local M = {}

local TAG = "synodic.gather"

-- Runs `f(...)` on each of `nodes`; returns their results, in the order of
-- `nodes` (a list of {node =, ok =, value =}); a node that does not answer
-- within `timeout` seconds (default 5) is reported ("no answer"), not
-- waited for.
function M.on_nodes(nodes, timeout, f, ...)
  if type(timeout) == "function" then return M.on_nodes(nodes, 5, timeout, f, ...) end
  local me, asked, token = s.self(), {}, {}
  local ticket = tostring(token) .. tostring(s.clock())
  for _, node in ipairs(nodes) do
    local ok = pcall(s.spawn_on, node, function(boss, ticket, f, ...)
      local s = require "synodic"
      s.send(boss, "synodic.gather", ticket, s.node(), pcall(f, ...))
    end, me, ticket, f, ...)
    if ok then asked[#asked + 1] = node end
  end
  local by, deadline = {}, s.clock() + timeout
  for _ = 1, #asked do
    local left = deadline - s.clock()
    if left <= 0 then break end
    local tag, _, node, ok, value = s.receive_match(function(tag, t) return tag == TAG and t == ticket end, left)
    if not tag then break end
    by[node] = { node = node, ok = ok, value = value }
  end
  local got = {}
  for _, node in ipairs(nodes) do
    got[#got + 1] = by[node] or { node = node, ok = false, value = "no answer" }
  end
  return got
end

return M
