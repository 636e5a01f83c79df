-- bench/cluster, Synodic's side: one measure between this node and another
-- (run with --nodes 2). Prints one line "name=value ...".
-- usage: synodic run --nodes 2 bench/cluster/cluster.lua pingpong|stream|spawn|big N
-- (big: N is the buffer's size in MB)
local s = require "synodic"

local mode, N = arg[1], math.tointeger(tonumber(arg[2])) or 10000
local me = s.self()
local other
for _, n in ipairs(s.nodes()) do if n ~= s.node() then other = n end end
assert(other, "run with --nodes 2")

local function echo_fn()
  local s = require "synodic"
  while true do
    local from, n = s.receive()
    s.send(from, n)
  end
end

if mode == "pingpong" then
  local echo = s.spawn_on(other, echo_fn)
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
elseif mode == "big" then
  -- One N MB buffer to the other node while a second process times small
  -- round trips between the same nodes.
  local buffer = require "synodic.buffer"
  local echo = s.spawn_on(other, echo_fn)
  local sink = s.spawn_on(other, function(boss)
    local s = require "synodic"
    while true do s.send(boss, "arrived", #s.receive()) end
  end, me)
  local big = buffer.new(N << 20, "u8")
  s.send(sink, big) -- warm up: both sides have touched that much memory once
  s.receive_match("arrived")
  -- Round trips that start while the buffer is in flight count (the
  -- main process says when that began).
  local pinger = s.spawn(function(boss, echo)
    local s = require "synodic"
    local me, starts, times = s.self(), {}, {}
    while true do
      local t = s.clock()
      s.send(echo, me, "ping")
      local what, t0 = s.receive()
      if what == "stop" then
        local during = {}
        for i, start in ipairs(starts) do
          if start >= t0 then during[#during + 1] = times[i] end
        end
        table.sort(during)
        s.send(boss, "p99", during[math.max(1, math.ceil(#during * 0.99))] or 0, #during)
        break
      end
      starts[#starts + 1], times[#times + 1] = t, s.clock() - t
    end
  end, me, echo)
  s.sleep(0.05) -- the pinger is under way
  local t = s.clock()
  s.send(sink, big)
  local _, n = s.receive_match("arrived")
  local took = s.clock() - t
  s.send(pinger, "stop", t)
  local _, p99, count = s.receive_match("p99")
  assert(n == N << 20)
  print(("big_gb_per_s=%.2f big_p99_ms=%.2f round_trips=%d"):format(n / took / 1e9, p99 * 1e3, count))
else
  error("mode: pingpong, stream, spawn or big")
end
