-- Spawn-and-exit: N processes that each send one message back and end.
-- usage: synodic run bench/ring/spawn.lua N
local s = require "synodic"
local N = math.tointeger(tonumber(arg[1])) or 100000
local main = s.self()
local t0 = s.clock()
for i = 1, N do
  s.spawn(function(m, i) s.send(m, i) end, main, i)
end
for _ = 1, N do s.receive() end
print(string.format("spawn N=%d us_per_process=%.2f", N, (s.clock() - t0) * 1e6 / N))
