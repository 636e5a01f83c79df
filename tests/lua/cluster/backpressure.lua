-- synodic-args: --nodes 2
-- A node that stops reading (its OS process stopped with SIGSTOP) slows
-- its senders in `send`: what this node holds for it stays bounded, and
-- once it reads again everything arrives, in order, once. A sender slowed
-- for a node that is then killed (SIGKILL) goes on: its sends return and
-- its monitor says "noconnection".
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()

local sink = s.spawn_on(other, function(boss)
  local s = require "synodic"
  local f = assert(io.open("/proc/self/stat"))
  s.send(boss, "os pid", f:read("n"))
  f:close()
  local expected = 1
  while true do
    local i, bytes = s.receive()
    assert(i == expected and #bytes == 1 << 20, "in order, whole, once")
    expected = i + 1
    s.send(boss, "got", i)
  end
end, me)
local _, os_pid = s.receive_match("os pid", 10)
s.monitor(sink)

local function signal(name)
  assert(os.execute(("kill -%s %d"):format(name, os_pid)), "kill -" .. name)
end

-- One megabyte per message; the sender says how far it has come.
local function sender(boss, sink, first, last)
  local s = require "synodic"
  local block = string.rep("x", 1 << 20)
  for i = first, last do
    s.send(sink, i, block)
    s.send(boss, "sent", i)
  end
  s.send(boss, "sender done")
end

-- Progress: the last "sent" seen once none has come for `quiet` seconds.
local function settle(quiet)
  local last = 0
  while true do
    local tag, i = s.receive_match(function(t) return t == "sent" end, quiet)
    if not tag then return last end
    last = i
  end
end

signal("STOP")
local N = 200
s.spawn(sender, me, sink, 1, N)
local stalled_at = settle(0.3)
signal("CONT")
assert(stalled_at < 60, ("a stopped reader let %d MB pile up here"):format(stalled_at))
for i = 1, N do
  local _, got = s.receive_match("got", 10)
  assert(got == i, got)
end
assert(s.receive_match("sender done", 10))

-- Stopped again, then killed while the sender waits for room.
signal("STOP")
s.spawn(sender, me, sink, N + 1, 2 * N)
local second = settle(0.3)
assert(second < N + 60, second)
signal("KILL")
local tag, who, why = s.receive_match("DOWN", 10)
assert(tag == "DOWN" and who == sink and why == "noconnection", tostring(why))
assert(s.receive_match("sender done", 10), "a slowed sender goes on once the node is lost")

print("backpressure ok")
