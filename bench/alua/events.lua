-- bench/alua: code-chunk events against plain messages between two agents,
-- and the cost of one event split into compiling and running it.
-- usage: synodic run bench/alua/events.lua [N]
local s = require "synodic"
local N = math.tointeger(tonumber(arg[1])) or 200000

-- Plain messages: N sends to a process that counts them, then replies.
local counter = s.spawn(function(parent, n)
  for _ = 1, n do s.receive() end
  s.send(parent, "counted")
end, s.self(), N)
local t0 = s.clock()
for i = 1, N do s.send(counter, i) end
assert(s.receive() == "counted")
local plain = s.clock() - t0

-- Code chunks: N events "n = n + 1" to agent B; the last one replies.
alua.spawn{"B"}
alua.send("B", "n = 0")
local t1 = s.clock()
for _ = 1, N - 1 do alua.send("B", "n = n + 1") end
alua.send("B", [[ n = n + 1 require("synodic").send("main", n) ]])
assert(s.receive() == N)
local events = s.clock() - t1

-- One event's cost, split: compiling the chunk, then running it.
local code = "n = n + 1"
local env = {n = 0}
local t2 = s.clock()
local chunks = {}
for i = 1, N do chunks[i] = load(code, "=(event)", "t", env) end
local compile = s.clock() - t2
local t3 = s.clock()
for i = 1, N do chunks[i]() end
local run = s.clock() - t3
assert(env.n == N)

print(string.format("| N | plain messages/s | code-chunk events/s | ratio (events ÷ plain) | compile µs/event | run µs/event |"))
print("|---|---|---|---|---|---|")
print(string.format("| %d | %.0f | %.0f | %.2f | %.2f | %.3f |", N, N / plain, N / events, plain / events, compile * 1e6 / N, run * 1e6 / N))
alua.exit_all()
