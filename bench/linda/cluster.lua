-- bench/linda/cluster.lua: tuple spaces between two nodes. The Linda
-- paper's Table 1 re-run (out, then in, of tuples of 8 B to 1 MB, on one
-- node and between two: producer here, consumer on the other node), with
-- the 1991 figures beside ours; then the remote pair: a tuple out on one
-- node and taken on the other, alternating (ping here, pong there), as a
-- round-trip time and as pairs per second with 1 and 8 such streams.
-- Prints markdown tables (medians).
-- usage: synodic run --nodes 2 bench/linda/cluster.lua [scale]
local s = require "synodic"
local bench = dofile((arg[0]:match("^(.*)/") or ".") .. "/../common.lua")
local median = bench.median
local linda = require "synodic.linda"
local buffer = require "synodic.buffer"
local SCALE = tonumber(arg[1]) or 1
local clock, me = s.clock, s.self()
local other = bench.other_node()

-- Table 1 of the paper, seconds: peak alone (out, in), and peak's out
-- taken in on knick over Ethernet (two machines).
local SIZES = {8, 16, 4096, 8192, 16384, 1048576}
local PAPER = {
  one_out = {0.000357, 0.000360, 0.000784, 0.000805, 0.001159, 0.075027},
  one_in = {0.000392, 0.000391, 0.000581, 0.000751, 0.000967, 0.032262},
  two_out = {0.001071, 0.000496, 0.000790, 0.001533, 0.001166, 0.078526},
  two_in = {0.000384, 0.005297, 0.010544, 0.020618, 0.037712, 1.835715},
}

-- The space lives here; the consumer on the other node takes when told,
-- and says how long its in took.
local ts = linda.open("bench")
ts:count("claim")
local consumer = s.spawn_on(other, function(boss)
  local s, linda = require "synodic", require "synodic.linda"
  local ts = linda.open("bench")
  while s.receive() == "go" do
    local t0 = s.clock()
    ts:take("t", linda.buffer)
    s.send(boss, "took", s.clock() - t0)
  end
end, me)

local rows = {}
for n, size in ipairs(SIZES) do
  local payload = buffer.new(size, "u8")
  local reps = math.max(10, math.floor((size >= 1048576 and 100 or 2000) * SCALE))
  local one_out, one_in, two_out, two_in = {}, {}, {}, {}
  for r = 1, reps do
    local t0 = clock()
    ts:out("t", payload)
    local t1 = clock()
    ts:take("t", linda.buffer)
    one_out[r], one_in[r] = t1 - t0, clock() - t1
    t0 = clock()
    ts:out("t", payload)
    two_out[r] = clock() - t0
    s.send(consumer, "go")
    two_in[r] = select(2, s.receive_match("took"))
  end
  rows[n] = {size, median(one_out), median(one_in), median(two_out), median(two_in)}
end
s.send(consumer, "stop")

print("| bytes | 1991 one: out µs | in µs | Synodic one node: out µs | in µs | 1991 two: out µs | in µs | in MB/s | Synodic two nodes: out µs | in µs | in MB/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n, r in ipairs(rows) do
  local size = r[1]
  print(string.format("| %d | %.0f | %.0f | %.2f | %.2f | %.0f | %.0f | %.2f | %.2f | %.1f | %.1f |", size,
    PAPER.one_out[n] * 1e6, PAPER.one_in[n] * 1e6, r[2] * 1e6, r[3] * 1e6,
    PAPER.two_out[n] * 1e6, PAPER.two_in[n] * 1e6, size / PAPER.two_in[n] / 1e6,
    r[4] * 1e6, r[5] * 1e6, size / r[5] / 1e6))
end

-- The remote pair: k streams, each a process here and one there; here
-- outs ("ping", i) and takes ("pong", i), there takes the ping and outs the
-- pong. Each round is two pairs (an out on one node, its take on the other).
local function pairs_per_second(k, rounds)
  for id = 1, k do
    s.spawn_on(other, function(boss, id, rounds)
      local linda = require "synodic.linda"
      local ts = linda.open("bench")
      for _ = 1, rounds do
        local _, _, i = ts:take("ping", id, linda.int)
        ts:out("pong", id, i)
      end
      require("synodic").send(boss, "ponged")
    end, me, id, rounds)
  end
  local t0 = clock()
  for id = 1, k do
    s.spawn(function(id)
      for i = 1, rounds do
        ts:out("ping", id, i)
        ts:take("pong", id, i)
      end
      s.send(me, "pinged")
    end, id)
  end
  for _ = 1, k do s.receive_match("pinged") s.receive_match("ponged") end
  return 2 * k * rounds / (clock() - t0)
end

-- Round trip: one stream, median of batches.
local per = {}
for b = 1, math.max(5, math.floor(50 * SCALE)) do
  local rounds = 200
  per[b] = 2 / pairs_per_second(1, rounds)
end
print()
print(string.format("median remote round trip (out here, in there, out there, in here): %.1f µs", median(per) * 1e6))
print()
print("| remote streams | pairs/s |")
print("|---|---|")
for _, k in ipairs({1, 8}) do
  local rounds = math.max(200, math.floor(40000 * SCALE / k))
  print(string.format("| remote %d | %.0f |", k, pairs_per_second(k, rounds)))
end
