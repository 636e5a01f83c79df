-- bench/skel, task overhead (against Ray and Dask, overhead.py): with
-- futures, N empty tasks submitted at once and then gathered, a single
-- task's round trip, and a two-stage chain passing 1 MB between stages
-- (the first stage on the other node, the second here).
-- usage: synodic run [--nodes 2] overhead.lua N here|there
-- Prints "empty_us=... roundtrip_us=... chain_ms=...".
local s = require "synodic"

local n = math.tointeger(tonumber(arg[1])) or 10000
local where = arg[2] or "here"
local node = s.node()
if where == "there" then
  for _, name in ipairs(s.nodes()) do if name ~= s.node() then node = name end end
  assert(node ~= s.node(), "there: run with --nodes 2")
end

local function noop() end
local function timed(f)
  local t = s.clock()
  f()
  return s.clock() - t
end

for i = 1, 200 do s.async_on(node, noop):get() end -- warm the pool
local empty = timed(function()
  local futures = {}
  for i = 1, n do futures[i] = s.async_on(node, noop) end
  for i = 1, n do futures[i]:get() end
end) / n
local trips = math.max(n // 10, 100)
local roundtrip = timed(function()
  for _ = 1, trips do s.async_on(node, noop):get() end
end) / trips
local chains = math.max(n // 100, 20)
local function make() return require("synodic.buffer").new(1 << 20, "u8") end
local function size(b) return #b end
local function chain_once() assert(s.async_on(s.node(), size, s.async_on(node, make)):get() == 1 << 20) end
for _ = 1, 20 do chain_once() end -- warm the memory both nodes reuse
local chain = timed(function()
  for _ = 1, chains do chain_once() end
end) / chains
print(("empty_us=%.2f roundtrip_us=%.2f chain_ms=%.3f"):format(empty * 1e6, roundtrip * 1e6, chain * 1e3))
