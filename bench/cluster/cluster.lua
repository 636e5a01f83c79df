-- bench/cluster, Synodic's side: one measure between this node and another
-- (run with --nodes 2). Prints one line "name=value ...".
-- usage: synodic run --nodes 2 bench/cluster/cluster.lua pingpong|stream|spawn N
local s = require "synodic"

local mode, N = arg[1], math.tointeger(tonumber(arg[2])) or 10000
local me = s.self()
local other
for _, n in ipairs(s.nodes()) do if n ~= s.node() then other = n end end
assert(other, "run with --nodes 2")

if mode == "pingpong" then
  local echo = s.spawn_on(other, function()
    local s = require "synodic"
    while true do
      local from, n = s.receive()
      s.send(from, n)
    end
  end)
  for i = 1, 1000 do s.send(echo, me, i) s.receive() end -- warm up
  local t = s.clock()
  for i = 1, N do
    s.send(echo, me, i)
    assert(s.receive() == i)
  end
  print(("pingpong_us=%.2f"):format((s.clock() - t) * 1e6 / N))
elseif mode == "stream" then
  local sink = s.spawn_on(other, function(boss, n)
    local s = require "synodic"
    s.send(boss, "ready")
    for _ = 1, n do s.receive() end
    s.send(boss, "got all")
  end, me, N)
  assert(s.receive() == "ready")
  local t = s.clock()
  for i = 1, N do s.send(sink, i) end
  assert(s.receive() == "got all")
  print(("stream_msgs_per_s=%.0f"):format(N / (s.clock() - t)))
elseif mode == "spawn" then
  local function hello(boss) require("synodic").send(boss, "hi") end
  for _ = 1, 100 do s.spawn_on(other, hello, me) s.receive() end -- warm up
  local t = s.clock()
  for _ = 1, N do
    s.spawn_on(other, hello, me)
    assert(s.receive() == "hi")
  end
  print(("spawn_us=%.2f"):format((s.clock() - t) * 1e6 / N))
else
  error("mode: pingpong, stream or spawn")
end
