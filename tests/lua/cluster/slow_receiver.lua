-- synodic-args: --nodes 2
-- A process that takes messages slower than a sender on another node sends
-- them (here: it waits for "go", leaving them queued) is *busy*: its node
-- tells the sender's node, and the sender waits in `send` (SPEC §9) instead
-- of the receiving node's memory growing without bound. Other processes
-- of the same two nodes go on meanwhile. Once the receiver takes its
-- messages, the sender goes on: everything arrives, in order, once.
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()

local sink = s.spawn_on(other, function(boss)
  local s = require "synodic"
  s.receive_match("go")
  for expected = 1, 200 do
    local i, bytes = s.receive()
    assert(i == expected and #bytes == 1 << 20, "in order, whole, once")
  end
  s.send(boss, "all taken")
end, me)
local echo = testkit.echo_on(other)
local rss = s.spawn_on(other, function()
  local s = require "synodic"
  while true do
    local from = s.receive()
    s.send(from, "rss", require("testkit").rss_kb())
  end
end)
s.send(rss, me)
local _, rss_before = s.receive_match("rss", 10)

s.spawn(function(boss, sink)
  local s = require "synodic"
  local block = string.rep("x", 1 << 20)
  for i = 1, 200 do
    s.send(sink, i, block)
    s.send(boss, "sent", i)
  end
end, me, sink)

-- Progress: the last "sent" seen once none has come for `quiet` seconds.
local function settle(quiet)
  local last = 0
  while true do
    local tag, i = s.receive_match(function(t) return t == "sent" end, quiet)
    if not tag then return last end
    last = i
  end
end
local stalled_at = settle(0.5)
assert(stalled_at < 40, ("a busy receiver let %d MB pile up"):format(stalled_at))

-- Others go on: a round trip between the same two nodes.
s.send(echo, me, "still flowing")
assert(s.receive_match("still flowing", 10))
s.send(rss, me)
local _, rss_stalled = s.receive_match("rss", 10)
assert(rss_stalled - rss_before < 80 * 1024, ("the receiving node grew by %d KB"):format(rss_stalled - rss_before))

s.send(sink, "go")
assert(s.receive_match("all taken", 30))
assert(settle(0.2) == 200)
print("slow_receiver ok")
