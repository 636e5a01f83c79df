-- synodic-args: --nodes 3
-- A space whose node is lost (SPEC §5): pending operations on every node
-- fail with "space lost: NAME" at once, never hang, and so do later ones
-- on handles to it; named and private spaces alike. Spaces elsewhere go on.
local s = require "synodic"
local linda = require "synodic.linda"
local testkit = require "testkit"

local me = s.self()
local doomed, survivor = table.unpack(testkit.other_nodes())

-- On the doomed node: a named space, a private one, and a process to kill the node.
local killer = s.spawn_on(doomed, function(boss)
  local s, linda = require "synodic", require "synodic.linda"
  linda.open("doomed"):out("x", 1)
  s.send(boss, "made", linda.new())
  s.receive()
  os.exit(3)
end, me)
local _, private = s.receive_match("made", 10)
local named = linda.open("doomed")
assert(named:count("x", linda.int) == 1)
private:out("p", 1)

-- Waiting: one taker on the survivor, one here (in a process), each on one space.
s.spawn_on(survivor, function(boss)
  local s, linda = require "synodic", require "synodic.linda"
  s.send(boss, "waiting")
  s.send(boss, "survivor", pcall(linda.open("doomed").take, linda.open("doomed"), "never"))
end, me)
s.spawn(function()
  s.send(me, "waiting")
  s.send(me, "here", pcall(private.take, private, "never"))
end)
assert(s.receive_match("waiting", 10) and s.receive_match("waiting", 10))
-- The space elsewhere that must go on.
local safe = linda.open("safe")
safe:out("ok", 1)

s.monitor_node(doomed)
s.send(killer, "die")
assert(s.receive_match("nodedown", 30))
for _, who in ipairs({"survivor", "here"}) do
  local tag, ok, err = s.receive_match(who, 30)
  assert(tag == who and not ok, who .. " got no error")
  assert(err:find("space lost: ", 1, true), err)
end
local ok, err = pcall(named.count, named, "x", linda.int)
assert(not ok and err:find("count: space lost: doomed", 1, true), err)
ok, err = pcall(private.out, private, "p", 2)
assert(not ok and err:find("out: space lost: private space", 1, true), err)
assert(select(2, safe:take("ok", linda.int)) == 1, "other spaces go on")
print("linda_lost ok")
