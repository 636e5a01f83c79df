-- synodic-args: --workers 3
-- A node starts its threads when they have work (Runtime::start): a run
-- whose main process is alone runs it on the main thread, the node's first
-- worker (Runtime::run_main_here), with no other worker, no monitor, no
-- timer thread, and no signal thread until the run lasts (10 ms of
-- computing, runtime/lasting.rs); a second process starts the other
-- workers and the monitor; the first timer starts the timer thread.
-- Counted from the kernel's own list of this OS process's threads.
local s = require "synodic"

local function threads()
  local names = {}
  -- The shell's parent is this node.
  local list = io.popen("cat /proc/$PPID/task/*/comm")
  for line in list:lines() do
    local name = line:gsub("%-%d*$", "")  -- names are cut at 15 bytes
    names[name] = (names[name] or 0) + 1
  end
  list:close()
  return names
end

local alone = threads()
assert(alone.synodic == 1, "the main thread")
assert(not alone["synodic-signals"], "no signal thread in a run's first milliseconds")
assert(not alone["synodic-worker"], "no worker thread while the main process is alone, got " .. tostring(alone["synodic-worker"]))
assert(not alone["synodic-monitor"], "no monitor while the main process is alone")
assert(not alone["synodic-timers"], "no timer thread before the first timer")

-- Computing (not waiting) for longer than 10 ms: the run lasts.
local t0 = s.clock()
while s.clock() - t0 < 0.05 do end
local lasting = threads()
assert(lasting["synodic-signals"] == 1, "the signal thread once the run lasts")
assert(lasting.synodic == 1 and not lasting["synodic-worker"] and not lasting["synodic-monitor"], "and nothing else")

local me = s.self()
s.spawn(function() s.send(me, "here") end)
assert(s.receive() == "here")
local two = threads()
assert(two["synodic-worker"] == 2, "--workers 3 (the main thread and two more) once a second process runs, got " .. tostring(two["synodic-worker"]))
assert(two["synodic-monitor"] == 1, "a monitor once a second process runs")
assert(not two["synodic-timers"], "still no timer thread")

s.sleep(0.001)
assert(threads()["synodic-timers"] == 1, "the first timer starts the timer thread")
print("threads_on_demand ok")
