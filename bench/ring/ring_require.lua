-- The ring of examples/ring.lua, written the idiomatic way for code that
-- runs in other processes: every member requires the synodic module itself
-- (`require` of a built-in module must cost next to nothing).
-- usage: synodic run bench/ring/ring_require.lua [N] [M]
local s = require "synodic"

local N = math.tointeger(tonumber(arg[1])) or 10000
local M = math.tointeger(tonumber(arg[2])) or 100

local function member(main)
  local s = require "synodic"
  local next = s.receive()
  while true do
    local hops = s.receive()
    if hops == 0 then
      s.send(main, "done")
    else
      s.send(next, hops - 1)
    end
  end
end

local main = s.self()
local t0 = s.clock()
local first = s.spawn(member, main)
local prev = first
for _ = 2, N do
  local p = s.spawn(member, main)
  s.send(prev, p)
  prev = p
end
s.send(prev, first)
s.send(first, N - 1)
assert(s.receive() == "done")
local t1 = s.clock()
s.send(first, N * M - 1)
assert(s.receive() == "done")
local t2 = s.clock()
print(string.format("ring N=%d M=%d create=%.3fs ns_per_send=%.0f", N, M, t1 - t0, (t2 - t1) * 1e9 / (N * M)))
