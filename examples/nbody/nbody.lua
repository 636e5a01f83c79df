-- The ALua paper's N-body application (its Table 1): a Barnes-Hut
-- simulation where one process per node moves its share of the bodies
-- with the C kernel (examples/nbody/bh.c, through the module nbody.c) and,
-- at the end of each iteration, sends its share to every other process and
-- takes theirs: an all-gather by messages, peer to peer. The MPI program
-- nbody_mpi.c does the same with MPI_Allgatherv and the same kernel.
--
-- usage: synodic run [--nodes N] examples/nbody/nbody.lua [bodies] [iterations] [theta] [out]
-- (the module built as nbody.so on LUA_CPATH; see nbody.c). Prints
-- `nbody: N bodies, I iterations, R nodes: T s` (the iterations' time on
-- the first node's process, as the MPI program gives rank 0's);
-- with `out`, every body's position, one line each (x y z, %.17g), or,
-- for a name ending in .svg, a picture of them (x and y, seen from +z).
local s = require "synodic"
local n = math.tointeger(tonumber(arg[1])) or 512
local iterations = math.tointeger(tonumber(arg[2])) or 10
local theta = tonumber(arg[3]) or 0.5
local out = arg[4]

-- One peer: moves bodies [lo, hi) each iteration, and trades shares.
local function peer(boss, rank, ranks, n, iterations, theta)
  local s, nbody = require "synodic", require "nbody"
  local _, peers = s.receive_match("peers")
  local all = nbody.init(n, 1)
  local lo, hi = nbody.share(n, rank, ranks)
  s.send(boss, "ready")
  s.receive_match("go")
  local t = s.clock()
  for it = 1, iterations do
    local mine = nbody.step(all, lo, hi, theta)
    for r, p in ipairs(peers) do
      if r - 1 ~= rank then s.send(p, "bodies", it, rank, mine) end
    end
    nbody.put(all, mine, lo)
    for _ = 1, ranks - 1 do
      local _, _, from, part = s.receive_match(function(tag, i) return tag == "bodies" and i == it end)
      nbody.put(all, part, (nbody.share(n, from, ranks)))
    end
  end
  s.send(boss, "done", rank, s.clock() - t, rank == 0 and all or nil)
end

local nodes = s.nodes()
local peers = {}
for r, node in ipairs(nodes) do
  peers[r] = s.spawn_on(node, peer, s.self(), r - 1, #nodes, n, iterations, theta)
end
for _, p in ipairs(peers) do s.send(p, "peers", peers) end
for _ = 1, #peers do s.receive_match("ready") end
for _, p in ipairs(peers) do s.send(p, "go") end
local all, took
for _ = 1, #peers do
  local _, rank, seconds, bodies = s.receive_match("done")
  if rank == 0 then all, took = bodies, seconds end
end
print(string.format("nbody: %d bodies, %d iterations, %d nodes: %.4f s", n, iterations, #nodes, took))
if out then
  local nbody = require "nbody"
  local f = assert(io.open(out, "w"))
  local svg = out:match("%.svg$")
  if svg then
    f:write('<svg xmlns="http://www.w3.org/2000/svg" viewBox="-3 -3 6 6" width="480" height="480">',
      '<rect x="-3" y="-3" width="6" height="6" fill="#0b1020"/>')
  end
  for i = 0, n - 1 do
    local x, y, z = nbody.get(all, i)
    if svg then
      if math.abs(x) < 3 and math.abs(y) < 3 then
        f:write(string.format('<circle cx="%.4f" cy="%.4f" r="0.018" fill="#ffd27a" fill-opacity="0.7"/>', x, -y))
      end
    else
      f:write(string.format("%.17g %.17g %.17g\n", x, y, z))
    end
  end
  if svg then f:write("</svg>\n") end
  f:close()
end
