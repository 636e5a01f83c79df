-- register / whereis: names for pids, released when the process ends.
local s = require "synodic"
local me = s.self()

assert(s.whereis("server") == nil)
local server = s.spawn(function()
  while true do
    local from, x = s.receive()
    if x == "stop" then return end
    s.send(from, x * 2)
  end
end)
assert(s.register("server", server) == true)
assert(s.whereis("server") == server)
s.send("server", me, 21)
assert(s.receive() == 42, "send by name")

-- A taken name is refused with a clear error.
local other = s.spawn(function() s.receive() end)
local ok, err = pcall(s.register, "server", other)
assert(not ok and err:find("already registered"), err)

-- The name dies with its process.
s.monitor(server)
s.send("server", me, "stop")
assert(s.receive() == "DOWN")
assert(s.whereis("server") == nil)
-- A message to a name that nobody holds is an error, not a silent loss.
local ok3, err3 = pcall(s.send, "server", me, 1)
assert(not ok3 and err3:find("no such name: server"), err3)
assert(s.register("server", other) == true, "the name is free again")

local ok2, err2 = pcall(s.register, "x", 12)
assert(not ok2 and err2:find("pid expected"), err2)
print("register ok")
