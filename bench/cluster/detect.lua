-- bench/cluster: waits for the node named arg[1] to be declared down (the
-- benchmark kills it with SIGKILL once this prints "ready").
local s = require "synodic"
s.monitor_node(arg[1])
print("ready")
io.stdout:flush()
assert(s.receive_match("nodedown", 60), "no nodedown within 60 s")
print("down")
