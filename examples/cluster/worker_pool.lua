-- A pool of workers over every node of the cluster that survives losing a
-- node: the boss hands out jobs one at a time, monitors every worker, and
-- when a worker is lost (its node died: DOWN "noconnection") gives its job
-- to another. With the argument `lose`, one node other than the boss's
-- dies in the middle of the run (a worker there calls os.exit).
-- usage: synodic run --nodes 3 examples/cluster/worker_pool.lua [jobs] [per_node] [lose]
local s = require "synodic"

local JOBS = math.tointeger(tonumber(arg[1])) or 60
local PER_NODE = math.tointeger(tonumber(arg[2])) or 2
local LOSE = arg[3] == "lose"

-- The work: count the primes below n (stands for real computation).
local function primes_below(n)
  local count = 0
  for i = 2, n - 1 do
    local prime = true
    for d = 2, math.floor(math.sqrt(i)) do
      if i % d == 0 then prime = false break end
    end
    if prime then count = count + 1 end
  end
  return count
end

-- A worker asks for a job, does it, answers, asks again; "crash" ends its
-- whole node, as a machine failing would.
local function worker(boss)
  local s = require "synodic"
  s.send(boss, "ready", s.self())
  while true do
    local what, job = s.receive()
    if what == "stop" then return end
    if what == "crash" then os.exit(1) end
    s.send(boss, "result", s.self(), job, primes_below(job))
  end
end

local boss = s.self()
local nodes = s.nodes()
local workers = {} -- pid -> {node =, job = the job it is doing}
for _, node in ipairs(nodes) do
  for _ = 1, PER_NODE do
    local w = s.spawn_on(node, worker, boss)
    s.monitor(w)
    workers[w] = {node = node}
  end
end

local queue, results, done = {}, {}, 0
for j = 1, JOBS do queue[j] = 10000 + j end
local idle = {}
local victim = nil
for _, node in ipairs(nodes) do if node ~= s.node() then victim = node break end end
local lost_nodes, redone = {}, 0

local function dispatch()
  while #idle > 0 and #queue > 0 do
    local w = table.remove(idle)
    if workers[w] then
      local job = table.remove(queue, 1)
      workers[w].job = job
      s.send(w, "job", job)
    end
  end
end

while done < JOBS do
  local what, a, b, c = s.receive(60)
  assert(what, "the pool stalled")
  if what == "ready" then
    idle[#idle + 1] = a
  elseif what == "result" then
    local w, job, primes = a, b, c
    if results[job] == nil then results[job] = primes done = done + 1 end
    if workers[w] then workers[w].job = nil end
    idle[#idle + 1] = w
    if LOSE and victim and done == JOBS // 3 then
      -- Bring down the victim's node through one of its workers.
      for p, info in pairs(workers) do
        if info.node == victim then s.send(p, "crash") break end
      end
      victim = nil
    end
  elseif what == "DOWN" then
    local w, reason = a, b
    local info = workers[w]
    if info then
      workers[w] = nil
      if reason == "noconnection" then lost_nodes[info.node] = true end
      if info.job then table.insert(queue, 1, info.job) redone = redone + 1 end
    end
  end
  dispatch()
end

local alive = 0
for w in pairs(workers) do s.send(w, "stop") alive = alive + 1 end
local total = 0
for j = 1, JOBS do total = total + results[10000 + j] end
local lost = {}
for node in pairs(lost_nodes) do lost[#lost + 1] = node end
print(("%d jobs on %d node(s), %d workers left; %d primes in all"):format(JOBS, #nodes, alive, total))
if #lost > 0 then print(("lost %s; %d job(s) given to other workers"):format(table.concat(lost, " "), redone)) end
