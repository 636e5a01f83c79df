-- synodic-args: --nodes 3
-- Tuple spaces across nodes (SPEC §5): every row with the caller on one
-- node and the space on another (named spaces homed on either node, a
-- private space made on another node); a blocked take on one node woken by
-- an out on a second, for a space on a third; takers on several nodes
-- served in arrival order; many producers and consumers on three nodes
-- with nothing lost or taken twice.
local s = require "synodic"
local linda = require "synodic.linda"
local testkit = require "testkit"
local rows = require "linda_rows"

local me = s.self()
local b, c = table.unpack(testkit.other_nodes())

-- Runs `f(boss, ...)` in a process on `node`, and waits for its "ok".
local function on(node, f, ...)
  s.spawn_on(node, function(boss, f, ...)
    s = require "synodic"
    f(boss, ...)
    s.send(boss, "ok", s.node())
  end, me, f, ...)
  local tag, from = s.receive_match("ok", 60)
  assert(tag == "ok" and from == node, "no ok from " .. node)
end

-- A named space claimed by its first user, on b: the rows from here.
on(b, function() require("synodic.linda").open("rows at b"):count("claim") end)
local at_b = linda.open("rows at b")
rows(at_b, c)
assert(tostring(at_b) == "space: rows at b")

-- A named space of this node, used from b.
linda.open("rows here"):count("claim")
on(b, function(_, far) require("linda_rows")(require("synodic.linda").open("rows here"), far) end, c)

-- A private space made on c, handed to this node in a message.
on(c, function(boss) require("synodic").send(boss, "private", require("synodic.linda").new()) end)
local _, private = s.receive_match("private", 10)
rows(private, b)
assert(tostring(private):find("private space"), tostring(private))
-- Handed back to its node, it is that node's own space again.
on(c, function(_, ts) ts:out("home", 1) assert(ts:count("home", 1) == 1) end, private)
assert(select(2, private:inp("home", linda.int)) == 1)

-- A blocked take on c woken by an out on b, for a space that lives here.
local relay = linda.open("relay")
relay:count("claim")
s.spawn_on(c, function(boss)
  local s, linda = require "synodic", require "synodic.linda"
  s.send(boss, "c taken", select(2, linda.open("relay"):take("msg", linda.string)))
end, me)
on(b, function() require("synodic.linda").open("relay"):out("msg", "from b") end)
assert(select(2, s.receive_match("c taken", 10)) == "from b")

-- Takers on b, c and here, blocked in that order, are served in that
-- order by outs from b. (The home's scope tells when each is queued.)
local turns = linda.open("turns")
turns:count("claim")
for i, node in ipairs({b, c, s.node()}) do
  s.spawn_on(node, function(boss, i)
    local s, linda = require "synodic", require "synodic.linda"
    s.send(boss, "turn", i, select(2, linda.open("turns"):take("turn", linda.int)))
  end, me, i)
  testkit.await_waiting("turns", i)
end
on(b, function() local ts = require("synodic.linda").open("turns") for k = 1, 3 do ts:out("turn", k * 10) end end)
local got = {}
for _ = 1, 3 do local _, who, v = s.receive_match("turn", 10) got[who] = v end
assert(got[1] == 10 and got[2] == 20 and got[3] == 30, "first come, first served across nodes")

-- Producers and consumers on three nodes: every item taken exactly once.
local P, EACH = 2, 300
local pc = linda.open("pc")
pc:count("claim")
local nodes = s.nodes()
for _, node in ipairs(nodes) do
  for p = 1, P do
    s.spawn_on(node, function(id)
      local ts = require("synodic.linda").open("pc")
      for i = 1, 300 do ts:out("item", id * 100000 + i, i) end
    end, _ * 10 + p)
    s.spawn_on(node, function(boss, n)
      local s, linda = require "synodic", require "synodic.linda"
      local ts, mine = linda.open("pc"), {}
      for _ = 1, n do mine[#mine + 1] = select(2, ts:take("item", linda.int, linda.int)) end
      s.send(boss, "consumed", mine)
    end, me, EACH)
  end
end
local seen, total, sum = {}, 0, 0
for _ = 1, #nodes * P do
  local _, mine = s.receive_match("consumed", 60)
  for _, x in ipairs(mine) do
    assert(not seen[x], "taken twice: " .. x)
    seen[x] = true
    total, sum = total + 1, sum + x % 100000
  end
end
assert(total == #nodes * P * EACH, total)
assert(sum == #nodes * P * EACH * (EACH + 1) / 2, "checksum")
assert(pc:count("item", linda.any, linda.any) == 0)
print("linda ok")
