-- bench/linda: the Linda paper's Table 1 (time to out and to in a tuple, by
-- size), the median out+in pair, and out+in throughput with 1, 2 and 8
-- process pairs. Prints markdown tables (medians).
-- usage: synodic run bench/linda/linda.lua [scale]   (scale < 1 for a smoke run)
local s = require "synodic"
local bench = dofile((arg[0]:match("^(.*)/") or ".") .. "/../common.lua")
local median = bench.median
local linda = require "synodic.linda"
local buffer = require "synodic.buffer"
local SCALE = tonumber(arg[1]) or 1
local clock = s.clock
local ts = linda.new()

-- Table 1: out and in of a ("t", payload) tuple; payload a buffer of n bytes
-- (shared, not copied) and, for comparison, a string (copied).
print("| payload | bytes | out µs | in µs | out+in GB/s |")
print("|---|---|---|---|---|")
for _, size in ipairs({8, 16, 4096, 8192, 16384, 1048576}) do
  for _, kind in ipairs({"buffer", "string"}) do
    local payload = kind == "buffer" and buffer.new(size, "u8") or string.rep("x", size)
    local formal = kind == "buffer" and linda.buffer or linda.string
    local reps = math.max(20, math.floor((size >= 1048576 and 200 or 5000) * SCALE))
    local outs, ins = {}, {}
    for r = 1, reps do
      local t0 = clock()
      ts:out("t", payload)
      local t1 = clock()
      ts:take("t", formal)
      local t2 = clock()
      outs[r], ins[r] = t1 - t0, t2 - t1
    end
    local o, i = median(outs), median(ins)
    print(string.format("| %s | %d | %.3f | %.3f | %.2f |", kind, size, o * 1e6, i * 1e6, size / (o + i) / 1e9))
  end
end

-- One out+in pair on an 8-byte integer tuple, median over batches.
local BATCH, batches = 1000, math.max(10, math.floor(200 * SCALE))
local per = {}
for b = 1, batches do
  local t0 = clock()
  for i = 1, BATCH do
    ts:out("pair", i)
    ts:take("pair", linda.int)
  end
  per[b] = (clock() - t0) / BATCH
end
print()
print(string.format("median out+in pair (same process): %.3f µs", median(per) * 1e6))

-- Throughput: k producer/consumer pairs, each stream named by its first
-- field (the Linda idiom: the first field picks the tuple class).
print()
print("| pairs of processes | out+in pairs/s |")
print("|---|---|")
local me = s.self()
for _, k in ipairs({1, 2, 8}) do
  local M = math.max(1000, math.floor(200000 * SCALE / k))
  local t0 = clock()
  for id = 1, k do
    local key = "stream" .. id
    s.spawn(function(ts, key) for i = 1, M do ts:out(key, i) end end, ts, key)
    s.spawn(function(ts, key) for _ = 1, M do ts:take(key, linda.int) end s.send(me, "done") end, ts, key)
  end
  for _ = 1, k do s.receive() end
  print(string.format("| %d | %.0f |", k, k * M / (clock() - t0)))
end
