-- The Armstrong challenge: N processes in a ring pass a token around M times.
-- usage: synodic run examples/ring.lua [N] [M] [require]
-- Prints one line: N, M, seconds to build the ring, ns per send. With
-- `require`, every member does `local s = require "synodic"` itself, as code
-- written to run in other processes usually does (bench/ring measures both).
local s = require "synodic"

local N = math.tointeger(tonumber(arg[1])) or 10000
local M = math.tointeger(tonumber(arg[2])) or 100

-- A member learns its successor first, then forwards every token. A token is
-- the number of hops left; the member that receives 0 tells the main process.
local function member(main, by_require)
  local s = by_require and require "synodic" or s
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

local by_require = arg[3] == "require"
local main = s.self()
local t0 = s.clock()
local first = s.spawn(member, main, by_require)
local prev = first
for _ = 2, N do
  local p = s.spawn(member, main, by_require)
  s.send(prev, p)
  prev = p
end
s.send(prev, first)
-- The ring is complete once a token has gone round once.
s.send(first, N - 1)
assert(s.receive() == "done")
local t1 = s.clock()
s.send(first, N * M - 1)
assert(s.receive() == "done")
local t2 = s.clock()
print(string.format("ring N=%d M=%d create=%.3fs ns_per_send=%.0f", N, M, t1 - t0, (t2 - t1) * 1e9 / (N * M)))
