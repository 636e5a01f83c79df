-- synodic-args: --nodes 2
-- The largest messages between nodes: one of 700 MiB arrives whole (its
-- copies are made outside the link's lock, so the node's I/O, membership
-- included, goes on meanwhile: it used to be declared down, and the message
-- lost without a word); one over the limit raises `message too large` at
-- the sender, and nothing is sent.
local s = require "synodic"
local buffer = require "synodic.buffer"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local sink = s.spawn_on(other, function(parent)
  local s = require "synodic"
  while true do
    local x = s.receive()
    s.send(parent, "arrived", #x, x:sub(-3))
  end
end, me)

local huge = string.rep("x", 700 << 20) .. "end"
s.send(sink, huge)
huge = nil
collectgarbage()
local _, n, tail = s.receive_match("arrived", 60)
assert(n == (700 << 20) + 3 and tail == "end", tostring(n))

local too_large = buffer.new((1 << 30) + 1, "u8")
local ok, err = pcall(s.send, sink, too_large)
assert(not ok and err:match("message too large"), tostring(err))
assert(s.receive(0.5) == nil, "nothing was sent")
print("huge_message ok")
