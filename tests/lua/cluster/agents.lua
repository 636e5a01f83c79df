-- synodic-args: --nodes 3
-- Agents placed on other nodes (SPEC §3): alua.spawn(n, {on = ...}) deals
-- them over the listed nodes, "any" picks the least loaded; ids are names
-- valid on every node, so agents on different nodes send each other code;
-- names taken and nodes unknown are errors naming them; alua.exit_all()
-- from an agent on another node ends the run.
local s = require "synodic"
local me = s.self()
local nodes = s.nodes()
assert(#nodes == 3)

-- Events that answer the main script with a plain message.
local function ask(id, what)
  alua.send(id, string.format("require('synodic').send(require('synodic').whereis('main'), %q, alua.id, %s)", id, what))
  local _, who, value = s.receive_match(id, 5)
  assert(who == id, "no answer from agent " .. id)
  return value
end

-- Dealt in turn: agent i on nodes[(i - 1) % 3 + 1], each knows its node.
local ids = alua.spawn(6, {on = nodes})
assert(#ids == 6)
for i, id in ipairs(ids) do
  assert(s.whereis(id), "the id is known here once spawn returns: " .. id)
  assert(ask(id, "require('synodic').node()") == nodes[(i - 1) % 3 + 1], id)
end
-- Anonymous ids are unique cluster-wide: they carry their node's name.
local seen = {}
for _, id in ipairs(ids) do assert(not seen[id]) seen[id] = true end

-- A named agent on one node; another on a third node sends it code that
-- answers back to main: code goes node to node, not through main.
local far, other = nodes[1] == s.node() and nodes[2] or nodes[1], nodes[3] == s.node() and nodes[2] or nodes[3]
assert(alua.spawn({"far"}, {on = far})[1] == "far")
assert(alua.spawn({"relay"}, {on = other})[1] == "relay")
alua.send("far", "x = 41")
-- Order holds per sender and receiver only: far has x before relay's code comes.
assert(ask("far", "x") == 41)
alua.send("relay", [[alua.send("far", "x = x + 1 require('synodic').send(require('synodic').whereis('main'), 'far', 'far', x)")]])
local _, _, x = s.receive_match("far", 5)
assert(x == 42, tostring(x))

-- "any": the least loaded nodes.
for _, id in ipairs(alua.spawn(2, {on = "any"})) do assert(ask(id, "1 + 1") == 2) end

-- Errors name what was wrong; nothing is left half-registered by them.
local ok, err = pcall(alua.spawn, {"far"}, {on = other})
assert(not ok and err:find("the name 'far' is taken", 1, true), err)
ok, err = pcall(alua.spawn, 1, {on = "nowhere@nohost"})
assert(not ok and err:find("no such node: nowhere@nohost", 1, true), err)
ok, err = pcall(alua.spawn, 1, {on = 42})
assert(not ok and err:find("opts.on must be", 1, true), err)
ok, err = pcall(alua.spawn, 1, {on = {far, 7}})
assert(not ok and err:find("node names", 1, true), err)

-- An event error on another node: the agent goes on.
alua.send("far", "error('bad event')")
assert(ask("far", "x") == 42)

-- exit_all from an agent on another node ends the run, status 0 (a run
-- that goes on instead is a hang, reported as such).
print("agents ok")
alua.send("relay", "alua.exit_all()")
