-- synodic-args: --workers 1
-- TCP sockets (SPEC §10): LuaSocket's API, blocking only the calling
-- process. On one worker, a server and its clients in other processes can
-- only make progress if a process waiting on a socket leaves the worker.
local s = require "synodic"
local socket = require "synodic.socket"
local me = s.self()

-- Refused, and bad host names, are answers, not errors.
do
  local probe = assert(socket.bind("127.0.0.1", 0))
  local _, free = probe:getsockname()
  probe:close()
  local c, err = socket.connect("127.0.0.1", free)
  assert(c == nil and err == "connection refused", tostring(err))
  c, err = socket.connect("no-such-host.invalid", 80)
  assert(c == nil and err == "host not found", tostring(err))
end

local srv = assert(socket.bind("127.0.0.1", 0))
assert(tostring(srv):match("^tcp{server}: "))
local host, port, family = srv:getsockname()
assert(host == "127.0.0.1" and math.type(port) == "integer" and port > 0 and family == "inet")

-- A client process: lines (CR ignored), a count with a prefix, until closed.
s.spawn(function(port, me)
  local socket = require "synodic.socket"
  local c = assert(socket.connect("localhost", port))
  assert(tostring(c):match("^tcp{client}: "))
  assert(c:send("first line\r\nsecond\n") == 19)
  assert(c:send("xx12345yy", 3, 7) == 7, "send(data, i, j) gives the last index sent")
  assert(c:receive() == "ready")
  assert(c:send(string.rep("z", 300000)) == 300000)
  c:shutdown("send")
  assert(c:receive("*a") == "bye")
  c:close()
  s.send(me, "client done")
end, port, me)

local c = assert(srv:accept())
assert(tostring(c):match("^tcp{client}: "))
local peer_ip, peer_port = c:getpeername()
assert(peer_ip == "127.0.0.1" and peer_port > 0)
assert(c:receive() == "first line")
assert(c:receive("*l") == "second")
assert(c:receive(7, "ab") == "ab12345", "a prefix counts toward the bytes asked for")
assert(c:send("ready\n"))
local all = assert(c:receive("a"))
assert(#all == 300000 and all == string.rep("z", 300000))
-- The peer shut its side: further reads say closed, with nothing partial.
local data, err, partial = c:receive()
assert(data == nil and err == "closed" and partial == "")
assert(c:send("bye"))
c:close()
assert(s.receive() == "client done")
assert(select(2, c:receive()) == "closed", "a closed socket says so")

-- Timeouts: a receive or an accept that waits too long returns "timeout",
-- with what had arrived as the partial result.
do
  srv:settimeout(0.05)
  local t0 = s.clock()
  local none, why = srv:accept()
  assert(none == nil and why == "timeout" and s.clock() - t0 >= 0.04)
  srv:settimeout(nil)
  s.spawn(function(port)
    local socket = require "synodic.socket"
    local c = assert(socket.connect("127.0.0.1", port))
    c:send("partial")
    s.receive() -- keeps the connection open until told
  end, port)
  local c2 = assert(srv:accept())
  c2:settimeout(0.05)
  local d, e, p = c2:receive()
  assert(d == nil and e == "timeout" and p == "partial", tostring(e) .. " " .. tostring(p))
  c2:settimeout(-1)
  c2:close()
end

-- While one process waits on a socket, the only worker runs others.
do
  local waiter = s.spawn(function(port, me)
    local socket = require "synodic.socket"
    local c = assert(socket.connect("127.0.0.1", port))
    s.send(me, "connected")
    s.send(me, "got", c:receive())
  end, port, me)
  local c3 = assert(srv:accept())
  assert(s.receive() == "connected")
  local ticks = 0
  for _ = 1, 100 do ticks = ticks + 1; s.sleep(0) end
  assert(ticks == 100)
  c3:send("late line\n")
  local tag, line = s.receive()
  assert(tag == "got" and line == "late line")
  c3:close()
  assert(waiter)
end

-- A process's sockets close when it ends: the peer reads the end.
do
  s.spawn(function(port)
    local socket = require "synodic.socket"
    assert(socket.connect("127.0.0.1", port)) -- kept until the process ends
  end, port)
  local c4 = assert(srv:accept())
  c4:settimeout(5)
  local d, e = c4:receive()
  assert(d == nil and e == "closed", tostring(e))
  c4:close()
end

-- Back-pressure: a sender to a reader that does not read waits (it does
-- not queue without bound) and goes on when the reader reads.
do
  local big = string.rep("b", 8 << 20)
  s.spawn(function(port, me, big)
    local socket = require "synodic.socket"
    local c = assert(socket.connect("127.0.0.1", port))
    s.send(me, "sending")
    local last = c:send(big)
    s.send(me, "sent", last)
    c:close()
  end, port, me, big)
  local c5 = assert(srv:accept())
  assert(s.receive() == "sending")
  assert(select("#", s.receive(0.1)) == 0, "the sender still waits: the reader has not read")
  local got = assert(c5:receive("*a"))
  local tag, last = s.receive()
  assert(tag == "sent" and last == #big and #got == #big)
  c5:close()
end

-- Many connections at once, a process each.
do
  local n = 200
  for i = 1, n do
    s.spawn(function(port, me, i)
      local socket = require "synodic.socket"
      local c = assert(socket.connect("127.0.0.1", port))
      c:send(i .. "\n")
      s.send(me, "echo", tonumber(c:receive()))
      c:close()
    end, port, me, i)
  end
  for _ = 1, n do
    local conn = assert(srv:accept())
    s.spawn(function(conn)
      local line = conn:receive()
      conn:send(line .. "\n")
      conn:close()
    end, conn)
  end
  local sum = 0
  for _ = 1, n do
    local tag, v = s.receive()
    assert(tag == "echo")
    sum = sum + v
  end
  assert(sum == n * (n + 1) // 2)
end

-- socket.tcp(): bind, listen and connect step by step, as LuaSocket;
-- options; socket.sleep blocks only this process.
do
  local master = assert(socket.tcp())
  assert(tostring(master):match("^tcp{master}: "))
  assert(master:bind("127.0.0.1", 0) == 1)
  assert(master:listen(8) == 1)
  assert(tostring(master):match("^tcp{server}: "))
  local _, p = master:getsockname()
  local c = assert(socket.tcp())
  assert(c:setoption("tcp-nodelay", true) == 1)
  assert(c:setoption("keepalive", true) == 1)
  local none, why = c:setoption("no-such-option", true)
  assert(none == nil and why:find("unsupported option"), tostring(why))
  assert(c:connect("127.0.0.1", p) == 1)
  assert(tostring(c):match("^tcp{client}: "))
  local a = assert(master:accept())
  assert(a:setoption("linger", { on = true, timeout = 0 }) == 1)
  c:close(); a:close(); master:close()
  local t0 = s.clock()
  socket.sleep(0.02)
  assert(s.clock() - t0 >= 0.015)
end

-- Several processes wait in accept on one listener; each connection goes
-- to one of them.
do
  local shared = assert(socket.bind("127.0.0.1", 0))
  local _, p = shared:getsockname()
  for i = 1, 3 do
    s.spawn(function(l, me, i)
      local c = assert(l:accept())
      s.send(me, "accepted by", i)
      c:close()
    end, shared, me, i)
  end
  local clients = {}
  for i = 1, 3 do clients[i] = assert(socket.connect("127.0.0.1", p)) end
  local seen = {}
  for _ = 1, 3 do
    local tag, i = s.receive()
    assert(tag == "accepted by" and not seen[i])
    seen[i] = true
  end
  for _, c in ipairs(clients) do c:close() end
  shared:close()
end

-- Bad arguments raise, naming the call.
assert(not pcall(socket.connect))
local ok, msg = pcall(c.receive, c, "*x")
assert(not ok and msg:find("invalid receive pattern"), msg)
ok, msg = pcall(srv.accept, c)
assert(not ok and msg:find("tcp{server} expected"), msg)

-- LuaSocket's helpers.
assert(type(socket.gettime()) == "number" and socket.gettime() > 1.6e9)
assert(socket.dns.toip("localhost") == "127.0.0.1")
assert(socket.skip(1, "a", "b") == "b")
local protected = socket.protect(function() socket.try(nil, "failed here") end)
assert(select(2, protected()) == "failed here")

srv:close()
print("socket_tcp ok")
