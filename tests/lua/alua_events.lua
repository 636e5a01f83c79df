-- alua events: atomic, errors reported and survived, mcast, text only, exit.
local s = require "synodic"

local agents = alua.spawn{"worker", "other1", "other2"}

-- Atomic: while the long event runs, the short one waits, even though the
-- long one is preempted many times.
alua.send("worker", [[
  log = {}
  local x = 0
  for i = 1, 3e6 do x = x + i end
  log[#log + 1] = "long"
]])
alua.send("worker", [[ log[#log + 1] = "short" ]])

-- An error in an event is reported, and the agent goes on with the next one.
alua.send("worker", [[ error("deliberate") ]])
alua.send("worker", [[ log[#log + 1] = "after error" ]])

-- Binary chunks are refused at the sender.
local ok, err = pcall(alua.send, "worker", string.dump(function() end))
assert(not ok and err:find("binary chunks are not accepted"), err)
ok, err = pcall(alua.send, "nobody", "x = 1")
assert(not ok and err:find("no agent 'nobody'"), err)

alua.send("worker", [[ alua.send("main", "worker_log = " .. alua.tostring(log) .. " step2()") ]])

function step2()
  assert(table.concat(worker_log, ",") == "long,short,after error", table.concat(worker_log, ","))
  -- mcast reaches every agent.
  heard = {}
  alua.mcast({"other1", "other2"}, [[ alua.send("main", "heard[#heard + 1] = " .. string.format("%q", alua.id) .. " step3()") ]])
end

function step3()
  if #heard < 2 then return end
  table.sort(heard)
  assert(heard[1] == "other1" and heard[2] == "other2")
  -- alua.exit ends an agent: its id is released.
  local pid = s.whereis("other1")
  s.monitor(pid)
  alua.send("other1", "alua.exit()")
  assert(s.receive() == "DOWN")
  assert(s.whereis("other1") == nil)
  print("alua_events ok")
  alua.exit_all()
end
