-- synodic-args: --nodes 2
-- send across nodes: messages of one sender to one receiver arrive in
-- order; every kind of value crosses; a name held by a remote process
-- (whereis) and a message to a dead remote process (dropped).
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local echo = testkit.echo_on(other)

-- Values: numbers keep their type, strings are binary-safe, tables keep
-- shared references and cycles, functions keep their upvalues.
local t = {1, 2.0, "three", nested = {deep = {true}}}
t.self = t
local k = 10
local f = function(x) return x + k end
s.send(echo, me, 3, 3.0, "a\0b", t, f, nil, false)
local n = select("#", s.receive(5))
assert(n == 7, n)
s.send(echo, me, 3, 3.0, "a\0b", t, f, nil, false)
local i, fl, str, tt, ff, nl, fa = s.receive(5)
assert(math.type(i) == "integer" and math.type(fl) == "float")
assert(str == "a\0b" and #str == 3)
assert(tt.self == tt and tt.nested.deep[1] == true and tt[3] == "three")
assert(ff(1) == 11)
assert(nl == nil and fa == false)

-- Order per sender-receiver pair, many messages in a burst.
local N = 20000
for j = 1, N do s.send(echo, me, j) end
for j = 1, N do
  local got = s.receive(5)
  assert(got == j, ("message %d arrived as %s"):format(j, tostring(got)))
end

-- Several senders on the other node to one receiver here: each in order.
local senders = 4
for w = 1, senders do
  s.spawn_on(other, function(parent, w)
    local s = require "synodic"
    for j = 1, 1000 do s.send(parent, w, j) end
  end, me, w)
end
local last = {}
for _ = 1, senders * 1000 do
  local w, j = s.receive(5)
  assert(j == (last[w] or 0) + 1, "in order per sender")
  last[w] = j
end

-- A message to a remote process that has ended is dropped; nothing breaks.
s.monitor(echo)
s.send(echo, me, "stop")
local tag = s.receive_match("DOWN", 5)
assert(tag == "DOWN")
s.send(echo, me, "into the void")
assert(select("#", s.receive(0.05)) == 0)

-- A value that cannot be sent is an error at the sending side.
local ok, err = pcall(s.send, echo, io.stdout)
assert(not ok and err:find("cannot send"), err)

print("remote_send ok")
