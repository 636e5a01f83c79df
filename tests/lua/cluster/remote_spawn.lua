-- synodic-args: --nodes 3
-- spawn_on another node: the function's code and upvalues cross, the pid
-- comes back at once and works from everywhere; "any" spreads processes
-- over the least loaded nodes; a node not in s.nodes() is an error.
local s = require "synodic"

local me = s.self()
local nodes = s.nodes()
assert(#nodes == 3, #nodes)
for i = 2, #nodes do assert(nodes[i - 1] < nodes[i], "sorted") end

-- Upvalues (a table shared by two closures) and arguments cross with the code.
local shared = {count = 40}
local function bump() shared.count = shared.count + 1 end
local function worker(parent, extra)
  bump()
  bump()
  local s = require "synodic"
  s.send(parent, s.self(), s.node(), shared.count + extra.n, math.type(extra.f))
end
for _, node in ipairs(nodes) do
  local pid = s.spawn_on(node, worker, me, {n = 0, f = 1.0})
  local who, where, answer, ftype = s.receive(5)
  assert(who == pid, "the pid spawn_on returned is the process's self()")
  assert(where == node, where)
  assert(answer == 42 and ftype == "float", tostring(answer))
  assert(shared.count == 40, "the caller's upvalue is not touched")
end

-- A remote pid crosses back and forth and stays equal to itself.
local other = nodes[1] == s.node() and nodes[2] or nodes[1]
local relay = s.spawn_on(other, function()
  local s = require "synodic"
  local from, pid = s.receive()
  s.send(from, pid, {[pid] = "keyed"}, s.self())
end)
s.send(relay, me, me)
local back, keyed, relay_self = s.receive(5)
assert(back == me and keyed[me] == "keyed", "our pid came back as itself")
assert(relay_self == relay)

-- Errors: no such node; a function is required; what cannot be sent.
local ok, err = pcall(s.spawn_on, "nowhere@nohost", function() end)
assert(not ok and err:find("no such node: nowhere@nohost", 1, true), err)
ok, err = pcall(s.spawn_on, other, 42)
assert(not ok and err:find("function expected"), err)
ok, err = pcall(s.spawn_on, other, function() end, io.stdout)
assert(not ok and err:find("cannot send"), err)

-- A remote process that fails ends alone; its node goes on.
local failing = s.spawn_on(other, function() error("remote boom") end)
s.monitor(failing)
local tag, pid, reason = s.receive(5)
assert(tag == "DOWN" and pid == failing and reason:find("remote boom"), tostring(reason))
assert(s.spawn_on(other, function() end), "the node still spawns")

-- "any": idle nodes get new processes in turn, counted as they start.
local placed = {}
local holders = {}
for i = 1, 9 do
  local p = s.spawn_on("any", function(parent)
    local s = require "synodic"
    s.send(parent, "placed", s.node())
    s.receive()
  end, me)
  holders[i] = p
end
for _ = 1, 9 do
  local tag, node = s.receive_match("placed", 5)
  assert(tag == "placed")
  placed[node] = (placed[node] or 0) + 1
end
local used = 0
for _, n in pairs(placed) do used = used + 1 assert(n <= 5, n) end
assert(used >= 2, "\"any\" spread processes over more than one node")
for _, p in ipairs(holders) do s.send(p, "done") end

print("remote_spawn ok")
