-- synodic-args: --nodes 2
-- monitor across nodes: DOWN with the remote process's reason (normal, an
-- error, an exit value), at once for one that has already ended; and
-- monitor_node on a live node says nothing.
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()

local function remote(f) return s.spawn_on(other, f, me) end

-- Each waits for a word before it ends, so the monitor comes first.
local normal = remote(function() require("synodic").receive() end)
local failing = remote(function() require("synodic").receive() error("bad thing") end)
local exiting = remote(function() local s = require "synodic" s.receive() s.exit({code = 7}) end)
for _, p in ipairs({normal, failing, exiting}) do s.monitor(p) end
s.monitor(normal) -- twice: two DOWNs, as on one node
for _, p in ipairs({normal, failing, exiting}) do s.send(p, "go") end

local downs = {}
for _ = 1, 4 do
  local tag, pid, reason = s.receive_match("DOWN", 5)
  assert(tag == "DOWN", "a DOWN for each monitor")
  downs[#downs + 1] = {pid, reason}
end
local count = {}
for _, d in ipairs(downs) do
  local pid, reason = d[1], d[2]
  count[pid] = (count[pid] or 0) + 1
  if pid == normal then assert(reason == "normal", tostring(reason))
  elseif pid == failing then assert(type(reason) == "string" and reason:find("bad thing"), tostring(reason))
  else assert(pid == exiting and type(reason) == "table" and reason.code == 7) end
end
assert(count[normal] == 2 and count[failing] == 1 and count[exiting] == 1)

-- An ended remote process: DOWN at once (noproc, or its remembered reason).
s.monitor(failing)
local tag, pid, reason = s.receive_match("DOWN", 5)
assert(tag == "DOWN" and pid == failing and reason ~= "noconnection", tostring(reason))

-- demonitor across nodes: of two monitors, one DOWN comes; a DOWN already
-- on its way for a removed monitor is dropped on arrival.
local kept = remote(function() require("synodic").receive() end)
s.monitor(kept)
s.monitor(kept)
assert(s.demonitor(kept) == true)
s.send(kept, "go")
assert(select(2, s.receive_match("DOWN", 5)) == kept)
assert(s.demonitor(kept) == false, "its DOWN has come: nothing to remove")
local raced = remote(function(parent) local s = require "synodic" s.receive() s.send(parent, "bye") end)
s.monitor(raced)
s.send(raced, "go")
s.receive_match("bye", 5) -- it is ending: its DOWN is (almost surely) on its way
if not s.demonitor(raced) then s.receive_match("DOWN", 5) end -- it came first
s.monitor(raced) -- one DOWN comes for this one, after the other's
assert(select(2, s.receive_match("DOWN", 5)) == raced)
local echo = remote(function(parent) local s = require "synodic" s.send(parent, "echo", s.receive()) end)
s.send(echo, "last") -- its answer comes after anything sent before
s.receive_match("echo", 5)
assert(s.receive_match("DOWN", 0) == nil, "no DOWN for removed monitors")

-- A live node: monitor_node says nothing while it stays up.
s.monitor_node(other)
assert(select("#", s.receive_match("nodedown", 0.1)) == 0)

print("remote_monitor ok")
