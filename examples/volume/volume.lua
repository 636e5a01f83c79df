-- The ALua paper's distributed volume visualization (its Table 2): a
-- master deals the image out to workers, one per node, by pixels,
-- scanlines or blocks, statically (each worker's share up front, dealt
-- round robin) or dynamically (two tasks a worker to start, then one more
-- for each result), and assembles what comes back (it is the visualizer
-- too). The ray casting is C (examples/volume/vr.c, through the module
-- volume.c), as in the MPI program volume_mpi.c, whose protocol this is.
--
-- usage: synodic run [--nodes N] examples/volume/volume.lua
--          [pixel|scanline|block] [static|dynamic] [size] [voxels] [out.png]
-- Workers go on every node but the master's (on its node too when there
-- is one node). Prints `volume: PARTITION DISTRIBUTION, SIZExSIZE, N
-- workers: T s, checksum C` (T from the first task dealt to the last
-- result placed).
local s = require "synodic"
local partition = arg[1] or "scanline"
local distribution = arg[2] or "static"
local size = math.tointeger(tonumber(arg[3])) or 128
local voxels = math.tointeger(tonumber(arg[4])) or 64
local out = arg[5]
local BLOCK, TURN = 16, 0.6
assert(partition == "pixel" or partition == "scanline" or partition == "block", "partition: pixel, scanline or block")
assert(distribution == "static" or distribution == "dynamic", "distribution: static or dynamic")

-- A worker: makes the volume, then renders the tasks it is given (a list,
-- or one at a time until `false`), sending each result to the master.
local function worker(master, voxels, partition, size, block, turn)
  local s, volume = require "synodic", require "volume"
  local vol = volume.new(voxels, 1)
  s.send(master, "ready", s.self())
  local function render(t)
    local _, x0, y0, w, h = volume.task(partition, size, size, block, t)
    s.send(master, "part", t, s.self(), volume.render(vol, voxels, size, size, turn, x0, y0, w, h))
  end
  while true do
    local _, what = s.receive_match("task")
    if what == false then return end
    if type(what) == "table" then
      for _, t in ipairs(what) do render(t) end
      return
    end
    render(what)
  end
end

local volume = require "volume"
local nodes = s.nodes()
local workers = {}
for _, node in ipairs(nodes) do
  if node ~= s.node() or #nodes == 1 then
    workers[#workers + 1] = s.spawn_on(node, worker, s.self(), voxels, partition, size, BLOCK, TURN)
  end
end
for _ = 1, #workers do s.receive_match("ready") end

local count = volume.task(partition, size, size, BLOCK, 0)
local img = volume.image(size, size)
local t = s.clock()
local next_task, stopped = 0, {}
-- The next task to `w`, or, once there is none, `false` (once).
local function deal(w)
  if next_task < count then
    s.send(w, "task", next_task)
    next_task = next_task + 1
  elseif not stopped[w] then
    stopped[w] = true
    s.send(w, "task", false)
  end
end
if distribution == "static" then
  for k, w in ipairs(workers) do
    local mine = {}
    for task = k - 1, count - 1, #workers do mine[#mine + 1] = task end
    s.send(w, "task", mine)
  end
else
  for _ = 1, 2 do
    for _, w in ipairs(workers) do if next_task < count then deal(w) end end
  end
  -- A worker that got nothing (more workers than tasks) stops at once.
  for k = count + 1, #workers do deal(workers[k]) end
end
for _ = 1, count do
  local _, task, from, part = s.receive_match("part")
  local _, x0, y0, w, h = volume.task(partition, size, size, BLOCK, task)
  volume.put(img, size, part, x0, y0, w, h)
  if distribution == "dynamic" then deal(from) end
end
local took = s.clock() - t
print(string.format("volume: %s %s, %dx%d, %d workers: %.4f s, checksum %d", partition, distribution, size, size, #workers, took, volume.checksum(img)))
if out then volume.png(img, size, size, out) end
