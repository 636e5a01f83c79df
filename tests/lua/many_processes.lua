-- 100,000 processes spawned, each sends one message and ends.
local s = require "synodic"
local me = s.self()
local N = 100000
for i = 1, N do
  s.spawn(function(parent, i) s.send(parent, i) end, me, i)
end
local sum = 0
for _ = 1, N do sum = sum + s.receive() end
assert(sum == N * (N + 1) // 2)
print("many_processes ok")
