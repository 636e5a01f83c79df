-- synodic-args: --nodes 2
-- Sockets stay on their node (SPEC §10): sending one to a process of
-- another node is refused with a clear error, and the socket still works
-- for its holder; sent to a process of the same node, it is handed over.
local s = require "synodic"
local socket = require "synodic.socket"
local testkit = require "testkit"

local me = s.self()
local echo = testkit.echo_on(testkit.other_node())

local srv = assert(socket.bind("127.0.0.1", 0))
local _, port = srv:getsockname()
local ok, err = pcall(s.send, echo, me, srv)
assert(not ok and err:find("cannot send value of type socket"), err)
ok, err = pcall(s.send, echo, me, { nested = { srv } })
assert(not ok and err:find("cannot send value of type socket"), err)

-- Still the sender's: a connection to it is accepted here.
local c = assert(socket.connect("127.0.0.1", port))
local conn = assert(srv:accept())
-- Handed to a process of this node: it answers through it.
local local_pid = s.spawn(function(me)
  local conn = s.receive()
  conn:send(conn:receive() .. "!\n")
  s.send(me, "answered")
end, me)
s.send(local_pid, conn)
assert(c:send("hello\n"))
assert(c:receive() == "hello!")
assert(s.receive() == "answered")
assert(select(2, conn:receive()) == "closed", "the sender's handle is closed once handed over")
print("sockets ok")
