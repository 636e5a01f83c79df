-- alua.exit ends one agent; alua.exit_all, from any agent, ends the run (status 0).
local s = require "synodic"
alua.spawn{"B", "C"}
local b = s.whereis("B")
s.monitor(b)
alua.send("B", "alua.exit()")
local tag, who = s.receive()
assert(tag == "DOWN" and who == b)
assert(s.whereis("B") == nil, "an ended agent's id is released")
print("alua_exit ok")
-- C ends everything; main is still in its event loop when that happens.
alua.send("C", "alua.exit_all()")
