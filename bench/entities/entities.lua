-- bench/entities: the VEOS paper's primitives table (fork, join, sync and
-- async round trips, local and remote) for Synodic's entities; each figure
-- is the median over batches, in µs. Prints `key=value` lines for run.sh.
-- usage: synodic run --nodes 2 bench/entities/entities.lua [n]
local s = require "synodic"
local bench = dofile((arg[0]:match("^(.*)/") or ".") .. "/../common.lua")
local median = bench.median
local entity = require "synodic.entity"
local N = math.tointeger(tonumber(arg[1])) or 5000
local me = s.self()
local other = bench.other_node()

-- µs per op of `op(i)` over `n`, the median of 5 batches.
local function time(n, op)
  local per = {}
  for b = 1, 5 do
    local t0 = s.clock()
    for i = 1, n do op(i) end
    per[b] = (s.clock() - t0) / n * 1e6
  end
  return median(per)
end

local send = s.send -- crosses as a reference to the library function
local methods = {
  ping = function() return 1 end,
  async = function(self, from) send(from, "pong") end,
}

for _, where in ipairs({"local", "remote"}) do
  local node = where == "remote" and other or nil
  local n = where == "remote" and N // 4 or N
  -- fork: create an entity (an empty persistent procedure, as the paper's)
  -- and know it runs; join: dispatch its dispose (asynchronous, as VEOS's).
  local made = {}
  local fork = time(n // 5, function(i) made[#made + 1] = entity.spawn{node = node, init = function() end, methods = methods} end)
  local k = 0
  local join = time(n // 5, function() k = k + 1 entity.kill(made[k]) end)
  local e = entity.spawn{node = node, methods = methods}
  local sync = time(n, function() entity.call(e, "ping") end)
  local async = time(n, function() entity.send(e, "async", me) s.receive_match("pong") end)
  entity.kill(e)
  print(string.format("fork_%s_us=%.2f join_%s_us=%.2f sync_%s_us=%.2f async_%s_us=%.2f", where, fork, where, join, where, sync, where, async))
end
