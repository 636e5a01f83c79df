-- synodic-args: --workers 1
-- socket.select (LuaSocket's): which sockets are ready to read or write,
-- waiting (only this process) until one is or the timeout passes.
local s = require "synodic"
local socket = require "synodic.socket"
local me = s.self()

local srv = assert(socket.bind("127.0.0.1", 0))
local _, port = srv:getsockname()

-- Nothing ready: "timeout" after the time given, and others ran meanwhile.
local ticker = s.spawn(function(me) s.sleep(0.02) s.send(me, "tick") end, me)
local t0 = s.clock()
local r, w, err = socket.select({ srv }, nil, 0.1)
assert(#r == 0 and #w == 0 and err == "timeout" and s.clock() - t0 >= 0.08)
assert(s.receive(0) == "tick", "the only worker ran another process while select waited")
assert(ticker)

-- A connection coming makes the listener readable; select wakes for it.
s.spawn(function(port) s.sleep(0.02) require("synodic.socket").connect("127.0.0.1", port) s.receive() end, port)
r, w, err = socket.select({ srv }, {}, 5)
assert(err == nil and #r == 1 and r[1] == srv and r[srv] == true)
local conn = assert(srv:accept())

-- A connected socket is writable at once; readable once bytes come.
local c = assert(socket.connect("127.0.0.1", port))
local a = assert(srv:accept())
r, w = socket.select({ a }, { c }, 0)
assert(#r == 0 and #w == 1 and w[c])
c:send("two lines\nsecond\n")
r = socket.select({ conn, a }, nil, 5)
assert(#r == 1 and r[1] == a)
assert(a:receive() == "two lines")
-- The second line is read already (buffered): ready without waiting.
r = socket.select({ a }, nil, 5)
assert(#r == 1 and r[a])
assert(a:receive() == "second")

-- Not a socket: an error naming the call.
local ok, msg = pcall(socket.select, { "nope" }, nil, 0)
assert(not ok and msg:find("select"), msg)
-- A closed socket is never ready.
c:close()
r, w, err = socket.select({ c }, { c }, 0)
assert(#r == 0 and #w == 0 and err == "timeout")
print("socket_select ok")
