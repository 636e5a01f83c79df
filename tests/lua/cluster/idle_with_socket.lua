-- synodic-args: --nodes 2
-- A node that waits on a socket, with one link, rests while nothing comes:
-- its poll nests the links' poller in the sockets' one, and a link read
-- without that poller once left it reported ready for good, so two of the
-- node's threads spun (two processors busy on an idle node). Each node
-- waits for a connection for a second; the processor time its OS process
-- spends meanwhile (all its threads, from /proc) stays far below what one
-- spinning thread would spend.
local s = require "synodic"
local testkit = require "testkit"

-- The processor time of this node's OS process so far, in seconds (its
-- user and system clock ticks, at the usual 100 a second).
local function node_clock()
  local f = assert(io.open("/proc/self/stat"))
  local stat = f:read("a")
  f:close()
  -- The fields after the command's closing parenthesis; utime and stime
  -- are the 14th and 15th of the line, the 12th and 13th of these.
  local rest = stat:match("%) (.*)")
  local fields = {}
  for field in rest:gmatch("%S+") do fields[#fields + 1] = field end
  return (tonumber(fields[12]) + tonumber(fields[13])) / 100
end

-- On this node: a second waiting for a connection that never comes.
local function idle_with_a_socket(me, node_clock)
  local s = require "synodic"
  local socket = require "synodic.socket"
  local srv = assert(socket.bind("127.0.0.1", 0))
  srv:settimeout(1)
  local c0 = node_clock()
  local conn, err = srv:accept()
  assert(conn == nil and err == "timeout", err)
  s.send(me, "spent", s.node(), node_clock() - c0)
end

local me = s.self()
s.spawn(idle_with_a_socket, me, node_clock)
s.spawn_on(testkit.other_node(), idle_with_a_socket, me, node_clock)
for _ = 1, 2 do
  local _, node, spent = s.receive_match("spent")
  -- Spinning spends ~1 s a thread here; resting, a few ms.
  assert(spent < 0.25, string.format("node %s spent %.3f s of processor time in an idle second", node, spent))
end
print("idle_with_socket ok")
