-- synodic-args: --workers 2
-- A woken process waits about two time slices at most, however many
-- processes compute: with three busy processes per worker, a process woken by
-- a timer, a message, a channel or a tuple runs within a few milliseconds
-- (wake-ups used to wait behind every busy process: 250 ms to 1 s).
-- Medians and a generous worst case, so that a loaded machine does not fail
-- the script: the old behaviour was two orders of magnitude slower.
local s = require "synodic"
local chan = require "synodic.chan"
local linda = require "synodic.linda"
local me = s.self()

for _ = 1, 6 do
  s.spawn(function() local x = 0 while true do x = x + 1 end end)
end

local ROUNDS = 15

local function summary(lat)
  table.sort(lat)
  return lat[(#lat + 1) // 2], lat[#lat]
end

-- Each measured process reports a list of latencies in seconds.
local function measure(name, body)
  s.spawn(function()
    local lat = {}
    body(lat)
    s.send(me, name, lat)
  end)
end

measure("timer", function(lat)
  for i = 1, ROUNDS do
    local t0 = s.clock()
    s.sleep(0.01)
    lat[i] = s.clock() - t0 - 0.01
  end
end)

-- A sender that sleeps between sends, so the receiver is blocked each time.
local function paced(send)
  s.spawn(function()
    for _ = 1, ROUNDS do
      s.sleep(0.01)
      send(s.clock())
    end
  end)
end

measure("message", function(lat)
  local receiver = s.self()
  paced(function(t) s.send(receiver, t) end)
  for i = 1, ROUNDS do
    local sent = s.receive()
    lat[i] = s.clock() - sent
  end
end)

chan.new("latency")
measure("channel", function(lat)
  paced(function(t) chan.send("latency", t) end)
  for i = 1, ROUNDS do
    local sent = chan.receive("latency")
    lat[i] = s.clock() - sent
  end
end)

local ts = linda.new()
measure("tuple", function(lat)
  paced(function(t) ts:out("t", t) end)
  for i = 1, ROUNDS do
    local _, t = ts:take("t", linda.number)
    lat[i] = s.clock() - t
  end
end)

for _ = 1, 4 do
  local name, lat = s.receive()
  local median, worst = summary(lat)
  print(string.format("%-8s median %.1f ms, worst %.1f ms", name, median * 1e3, worst * 1e3))
  assert(median < 0.010, name .. ": woken processes wait behind busy ones")
  assert(worst < 0.100, name .. ": a wake-up waited " .. worst .. " s")
end
print("wakeup_latency ok")
