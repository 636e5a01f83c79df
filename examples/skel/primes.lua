-- A farm: count the primes below N in ranges of a fixed size, each range a
-- task, on every node of the cluster.
-- usage: synodic run [--nodes N] examples/skel/primes.lua [limit] [range]
local skel = require "synodic.skel"

local limit = math.tointeger(tonumber(arg[1])) or 200000
local size = math.tointeger(tonumber(arg[2])) or 10000

local function count_primes(range)
  local n = 0
  for x = math.max(range[1], 2), range[2] do
    local prime = true
    for d = 2, math.floor(math.sqrt(x)) do
      if x % d == 0 then prime = false break end
    end
    if prime then n = n + 1 end
  end
  return n
end

local ranges = {}
for from = 1, limit, size do ranges[#ranges + 1] = {from, math.min(from + size - 1, limit)} end

local total = 0
for _, n in ipairs(skel.run(skel.farm(count_primes), ranges)) do total = total + n end
print(("%d primes up to %d (%d ranges)"):format(total, limit, #ranges))
