-- synodic-args: --nodes 2
-- A node's only link leaves the links' poller while a worker spins reading
-- it, and must be back in it before any worker waits there: a message
-- from the other node wakes a node whose workers all sleep. Round trips
-- with pauses long enough for both nodes to park between them, first
-- with nothing else watched, then with a socket waited on beside the link
-- on each node (the links' poller nested in the sockets' one, waited on
-- through it).
local s = require "synodic"
local testkit = require "testkit"

local me = s.self()
local other = testkit.other_node()
local echo = testkit.echo_on(other)

-- Rounds of a round trip, then a pause (parked: the spin lasts 30 us).
local function rounds(label)
  for i = 1, 20 do
    s.send(echo, me, label, i)
    local got_label, got = s.receive(5)
    assert(got_label == label and got == i, ("%s: round %d got %s %s (nothing within 5 s: a parked node was not woken)"):format(label, i, tostring(got_label), tostring(got)))
    s.sleep(0.005)
  end
end

rounds("plain")

-- A process on each node waits on a socket of its own meanwhile.
local function wait_on_a_socket(boss)
  local s = require "synodic"
  local socket = require "synodic.socket"
  local srv = assert(socket.bind("127.0.0.1", 0))
  srv:settimeout(10)
  s.send(boss, "waiting")
  srv:accept()
end
local waiters = { s.spawn(wait_on_a_socket, me), s.spawn_on(other, wait_on_a_socket, me) }
for _ = 1, #waiters do assert(s.receive_match("waiting", 5), "a socket waiter did not start") end

rounds("beside a socket")

for _, w in ipairs(waiters) do s.kill(w) end
print("parked_link_wakes ok")
