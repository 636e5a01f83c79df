-- synodic-args: --workers 1
-- Channels (SPEC §4): new, rendezvous send/receive, async receive, delete.
-- On one worker, a process's "ready" notice reaches the main process only
-- once that process has blocked: that is how this script knows a sender or
-- a receiver is waiting, without sleeping.
local s = require "synodic"
local chan = require "synodic.chan"
local me = s.self()

assert(chan.new("c") == true)
local ok, why = chan.new("c")
assert(ok == nil and why == "exists")

-- A send blocks until a receiver has taken the message.
local sender = s.spawn(function()
  s.send(me, "ready")
  assert(chan.send("c", "hello", 42) == true)
  s.send(me, "sent")
end)
assert(s.receive() == "ready")
assert(select("#", s.receive(0)) == 0, "the sender is still blocked: nobody received")
local a, b = chan.receive("c")
assert(a == "hello" and b == 42)
assert(s.receive() == "sent")

-- A receiver waiting first gets the next message.
s.spawn(function() s.send(me, "ready") s.send(me, chan.receive("c")) end)
assert(s.receive() == "ready")
assert(chan.send("c", "to a waiting receiver") == true)
assert(s.receive() == "to a waiting receiver")

-- Asynchronous receive returns nothing at once when no one is sending.
assert(select("#", chan.receive("c", true)) == 0)

-- Order of senders is kept.
for i = 1, 5 do
  s.spawn(function() s.send(me, "ready") chan.send("c", i) end)
  assert(s.receive() == "ready")
end
for i = 1, 5 do assert(chan.receive("c") == i) end

-- Delete releases blocked senders and receivers with nil, "deleted".
chan.new("receivers")
chan.new("senders")
for _ = 1, 2 do s.spawn(function() s.send(me, "ready") s.send(me, chan.receive("receivers")) end) end
s.spawn(function() s.send(me, "ready") s.send(me, chan.send("senders", "never taken")) end)
for _ = 1, 3 do assert(s.receive() == "ready") end
assert(chan.delete("receivers") == true)
assert(chan.delete("senders") == true)
for _ = 1, 3 do
  local r, msg = s.receive()
  assert(r == nil and msg == "deleted", tostring(msg))
end

-- Unknown names.
local r1, m1 = chan.send("nope", 1)
assert(r1 == nil and m1 == "no such channel")
local r2, m2 = chan.receive("nope")
assert(r2 == nil and m2 == "no such channel")
local r3, m3 = chan.delete("nope")
assert(r3 == nil and m3 == "no such channel")
local okv, errv = pcall(chan.send, "c", coroutine.create(print))
assert(not okv and errv:find("cannot send value of type thread"), errv)
-- A receive that cannot block fails and leaves nothing queued behind it.
chan.new("u")
local okr, errr = pcall(table.sort, {1, 2}, function() chan.receive("u") return false end)
assert(not okr and errr:find("cannot block here"), errr)
s.spawn(function() chan.send("u", "for the real receiver") end)
assert(chan.receive("u") == "for the real receiver")
print("channels ok")
