-- synodic-args: --nodes 2
-- What a process sends to another node goes out even while its thread is
-- held in C code. A worker writes what its run queued when the run ends,
-- or when the process turns to its mailbox; and what a poll queues (the
-- reply to another node's spawn) waits for the run of the process that
-- poll made runnable, to go out in the same write. A C call that blocks
-- would hold both for as long as it lasts: the monitor writes them once
-- the run overruns its slice. Each blocking call here lasts 0.6 s; the
-- messages must arrive long before it ends.
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local HELD = 0.6     -- how long each process blocks in C, seconds
local SOON = 0.2     -- the messages must come well before that

-- A send, then a second blocked in C: the send arrives first.
local started = s.clock()
s.spawn_on(other, function(parent)
  local s = require "synodic"
  s.send(parent, "sent before the call")
  os.execute("sleep 0.6")
  s.send(parent, "after the call")
end, me)
local what = s.receive(5)
local waited = s.clock() - started
assert(what == "sent before the call", tostring(what))
assert(waited < SOON, ("the send waited %.3f s for the C call to end"):format(waited))
assert(s.receive(5) == "after the call")

-- A spawn whose process goes straight into C: its pid comes back at once.
-- (The reply waits for that process's run, to share its write.)
started = s.clock()
local pid = s.spawn_on(other, function(parent)
  local s = require "synodic"
  os.execute("sleep 0.6")
  s.send(parent, "done")
end, me)
waited = s.clock() - started
assert(pid ~= nil)
assert(waited < SOON, ("the spawn's reply waited %.3f s for the C call to end"):format(waited))
assert(s.receive(5) == "done")
assert(HELD > SOON)
print("held_writes ok")
