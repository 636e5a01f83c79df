-- synodic-args: --nodes 3
-- A supervisor over nodes: children placed with node = NODE or "any"; a
-- child whose node is lost ends with "noconnection" and is restarted on a
-- live node ("any"), while a child bound to the lost node waits for it
-- (pid nil, which_children says so); the others are left alone.
local s = require "synodic"
local supervisor = require "synodic.supervisor"
local testkit = require "testkit"

local me = s.self()
local doomed, kept = table.unpack(testkit.other_nodes())

local function worker(name, boss)
  local s = require "synodic"
  s.send(boss, "started", name, s.self(), s.node())
  while true do
    if s.receive() == "die" then os.exit(3) end
  end
end

local children = {{id = "bound", start = worker, args = {"bound", me}, node = doomed}}
for i = 1, 6 do
  children[#children + 1] = {id = "any" .. i, start = worker, args = {"any" .. i, me}, node = "any"}
end
children[#children + 1] = {id = "kept", start = worker, args = {"kept", me}, node = kept}
local sup = supervisor.start{strategy = "one_for_one", intensity = 20, children = children}

local where, pid_of = {}, {}
for _ = 1, #children do
  local _, name, pid, node = s.receive_match("started", 10)
  where[name], pid_of[name] = node, pid
end
assert(where.bound == doomed and where.kept == kept)
local lost = {}
for i = 1, 6 do
  if where["any" .. i] == doomed then lost[#lost + 1] = "any" .. i end
end
print(("%d of 6 'any' children were on the node to be lost"):format(#lost))

s.send(pid_of.bound, "die")
-- Every "any" child that was on the lost node starts again on a live one.
for _ = 1, #lost do
  local _, name, pid, node = s.receive_match("started", 15)
  assert(node ~= doomed and pid ~= pid_of[name], name)
  where[name] = node
end
testkit.wait_until("the bound child waiting", 10, function()
  for _, c in ipairs(supervisor.which_children(sup)) do
    if c.id == "bound" then return c.pid == nil and c.node == doomed end
  end
end)
-- The others kept their pids.
for _, c in ipairs(supervisor.which_children(sup)) do
  if c.id ~= "bound" then
    assert(c.pid and c.node ~= doomed, c.id)
  end
  if c.id == "kept" then assert(c.pid == pid_of.kept) end
end
print("supervisor ok")
