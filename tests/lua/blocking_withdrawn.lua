-- synodic-args: --workers 1
-- A blocking call in a coroutine resumed where it cannot yield (here from a
-- table.sort comparator) cannot wait: it fails with an error where it
-- blocked, and leaves nothing behind: a withdrawn send is not received
-- later, a withdrawn receive swallows nothing, a withdrawn rd or take
-- neither loses nor duplicates a tuple. What is already there, it gets.
local s = require "synodic"
local chan = require "synodic.chan"
local linda = require "synodic.linda"
local me = s.self()

-- Runs `body` in a coroutine resumed from inside table.sort; returns what
-- pcall(body) returned there.
local function unyieldable(body)
  local results
  local co = coroutine.wrap(function() results = table.pack(pcall(body)) end)
  table.sort({2, 1}, function(a, b) if not results then co() end return a < b end)
  return table.unpack(results, 1, results.n)
end

local function fails(body, what)
  local ok, err = unyieldable(body)
  assert(not ok and err:find("cannot block here"), what .. ": " .. tostring(err))
end

-- Channels.
chan.new("c")
fails(function() return chan.send("c", "withdrawn") end, "chan.send")
assert(select("#", chan.receive("c", true)) == 0, "a withdrawn send is not received later")
fails(function() return chan.receive("c") end, "chan.receive")
local sender = s.spawn(function() s.send(me, "sent", chan.send("c", "kept")) end)
assert(chan.receive("c") == "kept", "a withdrawn receive swallowed the next message")
local tag, told = s.receive()
assert(tag == "sent" and told == true)
-- A sender already waiting: the receive completes. (On one worker, the
-- sender's notice reaches this process only once the sender has blocked.)
s.spawn(function() s.send(me, "sending") chan.send("c", "waiting") end)
assert(s.receive() == "sending")
local got_ok, got = unyieldable(function() return chan.receive("c") end)
assert(got_ok and got == "waiting", tostring(got))

-- Tuple spaces.
local ts = linda.new()
fails(function() return ts:rd("t", linda.any) end, "rd")
fails(function() return ts:take("t", linda.any) end, "take")
ts:out("t", 1)
assert(ts:count("t", linda.any) == 1, "a withdrawn rd or take leaves no waiter behind")
local ok, tag2, v = unyieldable(function() return ts:rd("t", linda.int) end)
assert(ok and tag2 == "t" and v == 1 and ts:count("t", linda.any) == 1, "an rd that finds its tuple reads it, once")
ok, tag2, v = unyieldable(function() return ts:take("t", linda.int) end)
assert(ok and v == 1 and ts:count("t", linda.any) == 0, "a take that finds its tuple takes it")
fails(function() return ts:take("w", linda.where(function() return true end)) end, "take with where")

-- The mailbox and the clock.
fails(function() return s.receive() end, "receive")
fails(function() return s.receive_match("x") end, "receive_match")
fails(function() return s.sleep(0.01) end, "sleep")
s.send(me, "already here")
assert(select(2, unyieldable(function() return s.receive() end)) == "already here")
print("blocking_withdrawn ok")
