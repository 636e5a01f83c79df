-- synodic-args: --nodes 3
-- Links and kill across nodes: an abnormal end travels both ways over a
-- link, trap_exit gets "EXIT", spawn_link_on links at once, kill reaches a
-- computing process on another node, and a lost node gives every local
-- end of a link to it the reason "noconnection".
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local there, doomed = table.unpack(testkit.other_nodes())

local function down(pid)
  local _, who, why = s.receive_match(function(tag, who) return tag == "DOWN" and who == pid end, 10)
  assert(who == pid, "no DOWN for " .. tostring(pid))
  return why
end

-- Here to there: a local process linked to a remote one ends with its reason.
local remote = s.spawn_on(there, function() local s = require "synodic"; s.receive(); error("remote fell") end)
local loc = s.spawn(function(r, me) local s = require "synodic"; s.link(r); s.send(me, "linked"); s.receive() end, remote, me)
s.receive_match("linked", 10)
s.monitor(loc)
s.send(remote, "go")
assert(down(loc):find("remote fell"))

-- There to here, trapping: spawn_link_on, then EXIT with the remote reason.
s.trap_exit(true)
local child = s.spawn_link_on(there, function() local s = require "synodic"; s.receive(); s.exit({code = 9}) end)
assert(s.node(child) == there)
s.send(child, "go")
local _, who, why = s.receive_match("EXIT", 10)
assert(who == child and type(why) == "table" and why.code == 9)

-- A remote process that ended before the link: its reason, once known.
local quick = s.spawn_on(there, function() require("synodic").exit("quick") end)
s.monitor(quick); down(quick)
s.link(quick)
_, who, why = s.receive_match("EXIT", 10)
assert(who == quick and why == "quick", tostring(why))

-- kill reaches a computing process on another node.
local spinner = s.spawn_on(there, function() while true do end end)
s.monitor(spinner)
local t = s.clock()
assert(s.kill(spinner, "stop spinning"))
assert(down(spinner) == "stop spinning")
print(("a computing process on another node ended %.1f ms after kill"):format((s.clock() - t) * 1000))

-- The remote end of a link to here: killing ours ends theirs.
local watcher = s.spawn_on(there, function(me)
  local s = require "synodic"
  local ours = s.spawn_on(s.nodes()[1] == s.node() and s.nodes()[2] or s.nodes()[1], function() end)
  s.send(me, "ready")
  s.receive()
end, me)
s.receive_match("ready", 10)
local target = s.spawn(function() s.receive() end)
local linker = s.spawn_on(there, function(target, me) local s = require "synodic"; s.link(target); s.send(me, "linker ready"); s.receive() end, target, me)
s.receive_match("linker ready", 10)
s.monitor(linker)
s.kill(target, "cut here")
assert(down(linker) == "cut here", "the kill's reason travels over the link")
s.kill(watcher)

-- send_after to a process of another node, and a cancelled one that never goes.
local echo = s.spawn_on(there, function(me) local s = require "synodic"; while true do s.send(me, "echoed", s.receive()) end end, me)
s.send_after(0.02, echo, "later")
local never = s.send_after(0.05, echo, "never")
assert(s.cancel_timer(never))
assert(select(2, s.receive_match("echoed", 10)) == "later")
assert(select("#", s.receive_match("echoed", 0.2)) == 0, "the cancelled one never went")
s.kill(echo)

-- A lost node: every local end of a link to it gets "noconnection".
local on_doomed = s.spawn_link_on(doomed, function() local s = require "synodic"; s.receive(); os.exit(3) end)
local plain = s.spawn(function(r, me) local s = require "synodic"; s.link(r); s.send(me, "plain linked"); s.receive() end, on_doomed, me)
s.receive_match("plain linked", 10)
s.monitor(plain)
s.send(on_doomed, "die")
_, who, why = s.receive_match("EXIT", 15)
assert(who == on_doomed and why == "noconnection", tostring(why))
assert(down(plain) == "noconnection")
print("links ok")
