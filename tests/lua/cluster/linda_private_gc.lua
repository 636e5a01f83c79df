-- synodic-args: --nodes 2
-- A private space whose handles went to another node lives while any of
-- them does, wherever it is (a process there, a message on its way), and
-- goes once the last is gone: that node returns its hold when its last
-- handle goes. A service that makes a space per request and hands it to a
-- worker on another node does not grow in proportion (each one used to
-- stay for good: +1.1 KB a space).
local s = require "synodic"
local linda = require "synodic.linda"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local function rss() collectgarbage() collectgarbage() return testkit.rss_kb() end

-- The handle over there keeps the space alive after this node forgot it.
local keeper = s.spawn_on(other, function(boss)
  local s = require "synodic"
  local ts = s.receive()
  collectgarbage()
  s.send(boss, "stored")
  s.receive_match("now")
  s.send(boss, "took", select(2, ts:take("kept", require("synodic.linda").any)))
end, me)
do
  local ts = linda.new()
  ts:out("kept", "over there")
  s.send(keeper, ts)
end
assert(s.receive_match("stored", 10))
collectgarbage(); collectgarbage()
s.send(keeper, "now")
local _, got = s.receive_match("took", 10)
assert(got == "over there", tostring(got))

-- A space per request, used and forgotten by a worker on the other node.
local worker = s.spawn_on(other, function(boss)
  local s = require "synodic"
  while true do
    local ts = s.receive()
    local _, job = ts:take("job", require("synodic.linda").string)
    ts:out("done", #job)
    s.send(boss, "ok")
  end
end, me)
local function round()
  for _ = 1, 5000 do
    local ts = linda.new()
    ts:out("job", string.rep("x", 100))
    s.send(worker, ts)
    s.receive_match("ok", 10)
    assert(select(2, ts:take("done", linda.int)) == 100)
  end
end
round()
local settled = rss()
for _ = 1, 2 do round() end
local after_10k = rss() - settled
for _ = 1, 6 do round() end
local after_40k = rss() - settled
print(string.format("grew %d KB over 10,000 spaces, %d KB over 40,000", after_10k, after_40k))
assert(after_40k < after_10k + 16 * 1024, "spaces whose handles went to another node stay")
print("linda_private_gc ok")
