-- A pool of workers fed through a rendezvous channel; results come back by
-- message. Shows spawn, channels, send/receive and monitors together.
-- usage: synodic run examples/worker_pool.lua [jobs] [workers]
local s = require "synodic"
local chan = require "synodic.chan"

local JOBS = math.tointeger(tonumber(arg[1])) or 100
local WORKERS = math.tointeger(tonumber(arg[2])) or 4

-- Counting primes below n by trial division stands for real work.
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

local function worker(boss, id)
  while true do
    local job = chan.receive("jobs")
    if job == nil then return end -- the channel was deleted: no more work
    s.send(boss, id, job, primes_below(job))
  end
end

assert(chan.new("jobs"))
local boss = s.self()
for id = 1, WORKERS do
  s.monitor(s.spawn(worker, boss, id))
end

-- Feed the jobs from a separate process, so the boss can collect meanwhile.
s.spawn(function()
  for job = 1, JOBS do chan.send("jobs", 100 + job) end
end)

local done, by_worker, total = 0, {}, 0
while done < JOBS do
  local id, _, primes = s.receive()
  done = done + 1
  by_worker[id] = (by_worker[id] or 0) + 1
  total = total + primes
end
chan.delete("jobs")
for _ = 1, WORKERS do assert(s.receive() == "DOWN") end

local shares = {}
for id = 1, WORKERS do shares[#shares + 1] = string.format("%d:%d", id, by_worker[id] or 0) end
print(string.format("%d jobs done by %d workers (%s); %d primes in all", JOBS, WORKERS, table.concat(shares, " "), total))
