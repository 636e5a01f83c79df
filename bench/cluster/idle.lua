-- bench/cluster: how long N nodes took to form a cluster (this node's
-- uptime when the program starts: `run --nodes N` starts the program once
-- every node sees all N), and each idle node's resident memory.
local s = require "synodic"
local formed = s.clock()
local me = s.self()
local function rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local kb = f:read("a"):match("VmRSS:%s*(%d+)")
  f:close()
  return tonumber(kb)
end
local max_kb = 0
for _, node in ipairs(s.nodes()) do
  if node ~= s.node() then
    s.spawn_on(node, function(boss, measure) require("synodic").send(boss, measure()) end, me, rss_kb)
    max_kb = math.max(max_kb, s.receive(10))
  end
end
print(("nodes=%d formed_s=%.3f max_idle_rss_mb=%.1f"):format(#s.nodes(), formed, max_kb / 1024))
