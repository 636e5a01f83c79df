-- synodic-args: --workers 1
-- UDP sockets (SPEC §10): LuaSocket's setsockname / setpeername /
-- sendto / receivefrom / send / receive, waiting only the process.
local s = require "synodic"
local socket = require "synodic.socket"
local me = s.self()

local server = assert(socket.udp())
assert(server:setsockname("127.0.0.1", 0))
local ip, port = server:getsockname()
assert(ip == "127.0.0.1" and port > 0)
assert(tostring(server):match("^udp{unconnected}: "))

-- A client process sends from an unconnected socket, then a connected one.
s.spawn(function(port, me)
  local socket = require "synodic.socket"
  local u = assert(socket.udp())
  assert(u:sendto("ping", "127.0.0.1", port))
  assert(u:receive() == "pong")
  assert(u:setpeername("localhost", port))
  assert(u:getpeername() == "127.0.0.1")
  assert(u:send("connected ping"))
  u:settimeout(0.05)
  local none, why = u:receive()
  assert(none == nil and why == "timeout", tostring(why))
  s.send(me, "done")
end, port, me)

local data, from_ip, from_port = server:receivefrom()
assert(data == "ping" and from_ip == "127.0.0.1" and from_port > 0)
assert(server:sendto("pong", from_ip, from_port))
assert(server:receive() == "connected ping")
assert(s.receive() == "done")

-- A datagram larger than asked for is cut to the size given.
local u2 = assert(socket.udp())
assert(u2:sendto(string.rep("d", 100), "127.0.0.1", port))
assert(#server:receive(10) == 10)

server:settimeout(0)
local none, why = server:receivefrom()
assert(none == nil and why == "timeout")
server:close()
u2:close()
print("socket_udp ok")
