-- bench/common.lua: what the Lua side of the benchmarks shares. A bench
-- script loads it from beside its own folder:
--   local bench = dofile((arg[0]:match("^(.*)/") or ".") .. "/../common.lua")
local s = require "synodic"

local bench = {}

-- The median of the numbers in `t` (sorts `t`).
function bench.median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

-- A node of the cluster other than this one; an error without one.
function bench.other_node()
  local other = s.nodes()[1] == s.node() and s.nodes()[2] or s.nodes()[1]
  return assert(other, "run with --nodes 2")
end

return bench
