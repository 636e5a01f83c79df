-- bench/dashboard: N processes spread over every node, each waiting in
-- receive, for the dashboard to list (its refresh time with 100,000
-- processes over 3 nodes). Prints "ready" once they all live, then waits
-- `seconds`.
-- usage: synodic run --nodes 3 --dashboard ADDR many.lua N seconds
local s = require "synodic"
local n, seconds = tonumber(arg[1]) or 100000, tonumber(arg[2]) or 60
local nodes = s.nodes()
local me = s.self()
for i, node in ipairs(nodes) do
  local share = n // #nodes + (i <= n % #nodes and 1 or 0)
  s.spawn_on(node, function(boss, share)
    local s = require "synodic"
    for _ = 1, share do s.spawn(function() require("synodic").receive() end) end
    s.send(boss, "spawned")
    s.receive()
  end, me, share)
end
for _ = 1, #nodes do s.receive_match("spawned") end
print("ready")
io.stdout:flush()
s.sleep(seconds)
