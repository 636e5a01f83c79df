-- A chat server that `nc` or `telnet` users join: a process per client
-- reads its lines, another writes what the room says to it, and a room
-- process keeps who is there and passes each line to everyone.
--
--   synodic run examples/net/chat.lua [PORT]        then: nc 127.0.0.1 PORT
--
-- The first line a user types is their name; `/quit` leaves. It prints its
-- port, then serves until killed.
local s = require "synodic"
local socket = require "synodic.socket"

-- The room: joins, leaves and lines, each passed to every member.
local function room()
  local members = {}
  local function say(text)
    for _, writer in pairs(members) do s.send(writer, "line", text) end
  end
  while true do
    local what, who, arg = s.receive()
    if what == "join" then
      members[who] = arg
      say("* " .. who .. " joined")
    elseif what == "leave" and members[who] then
      s.send(members[who], "close")
      members[who] = nil
      say("* " .. who .. " left")
    elseif what == "say" then
      say(who .. ": " .. arg)
    end
  end
end

-- A client's writer: what the room says goes to its connection.
local function writer(conn)
  while true do
    local what, text = s.receive()
    if what == "close" or not conn:send(text .. "\n") then break end
  end
  conn:close()
end

-- A client's reader: its name, then its lines, to the room.
local function client(conn, the_room)
  conn:send("name? ")
  local name = conn:receive()
  if not name or name == "" then conn:close() return end
  s.send(the_room, "join", name, s.spawn(writer, conn:dup()))
  while true do
    local line = conn:receive()
    if not line or line == "/quit" then break end
    s.send(the_room, "say", name, line)
  end
  s.send(the_room, "leave", name)
  conn:close()
end

local server = assert(socket.bind("127.0.0.1", tonumber(arg[1]) or 0))
local _, port = server:getsockname()
print(port)
io.stdout:flush()
local the_room = s.spawn(room)
while true do
  local conn = server:accept()
  if conn then s.spawn(client, conn, the_room) end
end
