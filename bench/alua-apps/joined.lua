-- joined.lua N SCRIPT ARGS...: waits until the cluster is N nodes (at most
-- 30 s), then runs SCRIPT with ARGS as its `arg`. For nodes started one
-- by one (here behind delaying proxies), where `--nodes` would have
-- waited for them itself. Exactly N: a node of the previous run may still
-- be listed for a moment after it ended.
local s = require "synodic"
local want, script = math.tointeger(tonumber(arg[1])), arg[2]
assert(want and script, "usage: joined.lua N SCRIPT ARGS...")
local deadline = s.clock() + 30
while #s.nodes() ~= want do
  assert(s.clock() < deadline, string.format("%d nodes where %d were expected, for 30 s", #s.nodes(), want))
  s.sleep(0.02)
end
arg = table.move(arg, 3, #arg, 1, { [0] = script })
dofile(script)
