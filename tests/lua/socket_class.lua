-- A socket's class (its metatable and methods) is the node's: every
-- process shares it, so a socket costs a process its userdata alone, and
-- no program can reach the class to change it (getmetatable and
-- debug.getmetatable give "socket").
local s = require "synodic"
local socket = require "synodic.socket"
local me = s.self()

local t, u = socket.tcp(), socket.udp()
for _, x in ipairs({t, u}) do
  assert(getmetatable(x) == "socket", "getmetatable gives the class's name")
  assert(debug.getmetatable(x) == "socket", "and so does debug.getmetatable")
  assert(not pcall(function() getmetatable(x).close = nil end))
end
-- Nor as a C function's temporary, which debug.getlocal reads: io.type
-- holds a socket's class on its stack while it looks the registry up,
-- and a registry with an __index sees that frame.
io.type(t)
local registry = debug.getregistry()
local file_class = registry["FILE*"]
registry["FILE*"] = nil
local classes_seen, frames_read = 0, 0
setmetatable(registry, {__index = function()
  for level = 2, 3 do
    for i = 1, 10 do
      local name, v = debug.getlocal(level, i)
      if not name then break end
      frames_read = frames_read + 1
      if type(v) == "table" and rawget(v, "__metatable") == "socket" then classes_seen = classes_seen + 1 end
    end
  end
end})
io.type(t)
setmetatable(registry, nil)
registry["FILE*"] = file_class
assert(frames_read > 0, "the lookup's frames were read")
assert(classes_seen == 0, "a socket's class reached a program through debug.getlocal")
assert(t.receive and t.accept and not t.sendto, "TCP methods")
assert(u.sendto and u.receivefrom and not u.accept, "UDP methods")
assert(tostring(t):match("^tcp{master}: ") and tostring(u):match("^udp{unconnected}: "))
local ok, err = pcall(t.receive, u)
assert(not ok and err:find("tcp{client} expected", 1, true), err)
ok, err = pcall(t.getsockname, {})
assert(not ok and err:find("socket expected, got table", 1, true), err)

-- What a process holds for a socket it receives: its userdata (~64 bytes),
-- against ~0.9 KB when each process made its own class.
local l = assert(socket.bind("127.0.0.1", 0))
local _, port = l:getsockname()
local c = assert(socket.connect("127.0.0.1", port))
local a = assert(l:accept())
local function held(value)
  s.spawn(function(me, v)
    local s = require "synodic"
    -- (The string metatable, which `:match` below uses, is made on first
    -- use: made here, it is not counted as the socket's.)
    getmetatable("")
    collectgarbage() collectgarbage()
    local before = collectgarbage("count") * 1024
    -- The value's methods, class and state are all in use.
    if v ~= 0 then assert(v:settimeout(1) == 1 and tostring(v):match("^tcp{client}")) end
    collectgarbage() collectgarbage()
    s.send(me, "held", before, collectgarbage("count") * 1024)
  end, me, value)
  local _, before, after = s.receive_match("held")
  return before, after
end
local base = held(0)
-- (Sent, a socket is handed over: this one is the other process's now.)
local c2 = assert(socket.connect("127.0.0.1", port))
local with, used = held(assert(l:accept()))
c2:close()
assert(with - base <= 128, ("a received socket took %d bytes"):format(with - base))
assert(used - with <= 320, ("its methods and state took %d bytes"):format(used - with))

-- Used by another process, the socket works there as here.
s.spawn(function(me, conn)
  local s = require "synodic"
  assert(conn:send("ping\n") == 5)
  s.send(me, "sent")
end, me, c)
s.receive_match("sent")
a:settimeout(5)
assert(a:receive() == "ping")
for _, x in ipairs({t, u, l, c, a}) do x:close() end
do local x <close> = socket.tcp() end
print("socket_class ok")
