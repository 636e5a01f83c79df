-- synodic-args: --nodes 2 --bind
-- run --nodes N --bind: each node on a share of the machine's processors
-- (as mpirun binds its ranks), none shared; a node started with the
-- default worker count runs one worker per processor of its share. With
-- more nodes than processors nothing is bound.
local s = require "synodic"

-- The processors a process may run on ("0-3,6" in /proc), as a list.
local function cpus_of(pid)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local list = f:read("a"):match("Cpus_allowed_list:%s*(%S+)")
  f:close()
  local cpus = {}
  for part in list:gmatch("[^,]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    for c = tonumber(a or part), tonumber(b or part) do cpus[#cpus + 1] = c end
  end
  return cpus
end

-- This node's processors and worker threads.
local function node(boss)
  local s = require "synodic"
  local f = assert(io.open("/proc/self/stat"))
  local pid, parent = f:read("a"):match("^(%d+) %b() %S+ (%d+)")
  f:close()
  -- The node's threads, found by trying the thread ids after its own
  -- (they were made as it started). Not by listing the directory with
  -- `ls`: a call that blocks for 4 ms gets the worker declared stuck, and
  -- a spare thread (named as a worker) stands in for it.
  local workers = 0
  for tid = tonumber(pid), tonumber(pid) + 4096 do
    local comm = io.open("/proc/" .. pid .. "/task/" .. tid .. "/comm")
    if comm then
      if comm:read("l"):match("^synodic%-worker") then workers = workers + 1 end
      comm:close()
    end
  end
  if boss then s.send(boss, "node", cpus_of("self"), workers) end
  return cpus_of("self"), workers, parent
end

local nodes = s.nodes()
assert(#nodes == 2)
local other = nodes[1] == s.node() and nodes[2] or nodes[1]
s.spawn_on(other, node, s.self())
local _, theirs, their_workers = s.receive_match("node", 10)
local mine, my_workers, parent = node()
-- What the machine offers: the processors of the process that started the run.
local offered = cpus_of(parent)

if #offered >= 2 then
  local taken = {}
  for _, c in ipairs(mine) do taken[c] = true end
  for _, c in ipairs(theirs) do
    assert(not taken[c], ("processor %d is in both nodes' shares"):format(c))
  end
  assert(#mine + #theirs == #offered, ("the shares cover the %d processors: %d and %d"):format(#offered, #mine, #theirs))
  assert(my_workers == #mine and their_workers == #theirs,
    ("one worker per processor of a share: %d for %d, %d for %d"):format(my_workers, #mine, their_workers, #theirs))
else
  assert(#mine == #offered and #theirs == #offered, "one processor: nothing is bound")
end
print("bind ok")
