-- synodic.alua: event-driven agents (the ALua model) on Synodic processes.
--
-- An agent is a process that receives chunks of Lua source and runs each one
-- as an event, to completion, in its own global environment. Agent ids are
-- registered names, so any process can address any agent. The main script is
-- the agent "main": once it has used this module, it goes on handling events
-- after its chunk returns, until alua.exit() or alua.exit_all().
--
-- In a cluster, agents can be placed on other nodes (`opts.on`); such an
-- agent registers its id on its own node (a name is given by the node of
-- the process that holds it) and reports to a local helper process, so the
-- caller's mailbox sees no monitor messages. Ids of agents without a name
-- carry their node's name there, so they are unique cluster-wide.
--
-- Native primitives used: synodic.spawn, spawn_on, send, receive,
-- receive_match, monitor, register, whereis, self, main, node, exit, halt.

local s = require "synodic"

local alua = {}

-- Tags of the messages this module sends; the NUL keeps them apart from
-- anything a program would send itself.
local EVENT = "\0alua.event"
local READY = "\0alua.ready"   -- a placed agent to its helper: registered (or why not)
local PLACED = "\0alua.placed" -- the helper to the caller of spawn: the ids, or an error
local EXIT_ALL = "\0alua.exit_all"

local function report(err)
  io.stderr:write(string.format("synodic: agent %s: %s\n", tostring(alua.id), tostring(err)))
end

-- Runs one chunk as an event in this agent's global environment; returns
-- true, or false and the error with its traceback.
local function run(code)
  local chunk, err = load(code, "=(event)", "t", _G)
  if not chunk then return false, err end
  return xpcall(chunk, debug.traceback)
end

local function handle(code)
  local ok, err = run(code)
  if not ok then report(err) end
end

-- Handles one message of the event loop.
local function dispatch(tag, code, ...)
  if tag == EVENT then
    handle(code)
  elseif tag == EXIT_ALL then
    s.halt(0)
  elseif tag == "DOWN" and alua._run_main ~= nil and code == alua._run_main then
    s.exit()
  else
    alua.on_message(tag, code, ...)
  end
end

-- Handles events forever (until the agent or the run ends). Messages that are
-- not events go to alua.on_message, which ignores them by default.
local function loop()
  while true do dispatch(s.receive()) end
end

function alua.on_message() end

-- An id made on this node, unique cluster-wide: in a cluster (where node
-- names are NAME@HOST) it carries this node's name.
local function qualified(id)
  if s.node():find("@", 1, true) then return id .. "@" .. s.node() end
  return id
end

-- The id of an agent spawned without a name, from its pid on its own node.
local function anonymous_id(pid)
  return qualified("agent" .. tostring(pid):sub(2, -2))
end

local function check_code(code, fname)
  if type(code) ~= "string" then
    error(string.format("bad argument #2 to '%s' (Lua source text expected, got %s)", fname, type(code)), 3)
  end
  if code:byte(1) == 27 then
    error(fname .. ": binary chunks are not accepted, send Lua source text", 3)
  end
end

-- The main script becomes the agent "main" when it first uses this module
-- (spawns, sends): from then on it keeps handling events after its chunk
-- returns (SPEC §3). Merely loading the module (a traversal of the globals,
-- a traceback) does not make it an agent.
local function used()
  if alua.id == "main" and alua._main_loop == nil then
    if s.whereis("main") == nil then s.register("main", s.self()) end
    alua._main_loop = loop
  end
end

-- Where agent i goes: nil for this node, else a node name or "any".
local function placement(opts)
  local on = opts and opts.on
  if on == nil then return function() return nil end end
  if type(on) == "string" then on = {on} end
  if type(on) ~= "table" or #on == 0 then
    error("alua.spawn: opts.on must be a node name, \"any\" or a list of node names", 3)
  end
  for _, node in ipairs(on) do
    if type(node) ~= "string" then error("alua.spawn: opts.on lists node names (strings)", 3) end
  end
  return function(i)
    local node = on[(i - 1) % #on + 1]
    if node ~= s.node() then return node end
  end
end

-- Starts the agents of `placed` (index -> {node =, name =}) on their nodes
-- from a helper process, and returns their ids by index; raises the first
-- failure (a node not in the cluster, a name taken, a node lost meanwhile).
local placements = 0
local function place(placed)
  placements = placements + 1
  local token = placements
  s.spawn(function(...) require("synodic.alua")._place(...) end, s.self(), token, placed, s.whereis("main"))
  local _, _, ok, result = s.receive_match(function(tag, t) return tag == PLACED and t == token end)
  if not ok then error(result, 0) end
  return result
end

--- Starts n agents, or one agent per name in a list; returns their ids once
--- every one of them can receive. opts.on places them on other nodes.
function alua.spawn(what, opts)
  used()
  local names = {}
  if math.type(what) == "integer" and what >= 0 then
    for i = 1, what do names[i] = false end
  elseif type(what) == "table" then
    for i, name in ipairs(what) do
      if type(name) ~= "string" then error("alua.spawn: agent names must be strings", 2) end
      if s.whereis(name) then error(string.format("alua.spawn: the name '%s' is taken", name), 2) end
      names[i] = name
    end
  else
    error("bad argument #1 to 'spawn' (a count or a list of names expected)", 2)
  end
  local where = placement(opts)
  local ids, placed = {}, {}
  for i, name in ipairs(names) do
    local node = where(i)
    if node then
      placed[i] = {node = node, name = name}
    else
      -- The new process runs its own copy of this module's agent loop.
      local pid = s.spawn(function(name) require("synodic.alua")._agent(name) end, name)
      local id = name or anonymous_id(pid)
      s.register(id, pid) -- messages to the id queue up from here on
      ids[i] = id
    end
  end
  if next(placed) then
    local ok, placed_ids = pcall(place, placed)
    if not ok then error("alua.spawn: " .. tostring(placed_ids), 2) end
    for i, id in pairs(placed_ids) do ids[i] = id end
  end
  return ids
end

--- Sends code to run as one event in agent id.
function alua.send(id, code)
  used()
  check_code(code, "alua.send")
  if not s.whereis(id) then error(string.format("alua.send: no agent '%s'", tostring(id)), 2) end
  s.send(id, EVENT, code)
end

--- Sends code to each agent of a list.
function alua.mcast(ids, code)
  check_code(code, "alua.mcast")
  for _, id in ipairs(ids) do alua.send(id, code) end
end

-- Lua source for a value: numbers through %q are exact (hex floats, 1e9999,
-- (0/0)) and strings through %q take any bytes.
local function source_of(v, out, seen)
  local t = type(v)
  if t == "number" or t == "string" then
    out[#out + 1] = string.format("%q", v)
  elseif t == "boolean" or t == "nil" then
    out[#out + 1] = tostring(v)
  elseif t == "table" then
    if seen[v] then error("alua.tostring: cannot write a table that contains itself", 0) end
    seen[v] = true
    out[#out + 1] = "{"
    for k, x in pairs(v) do
      out[#out + 1] = "["
      source_of(k, out, seen)
      out[#out + 1] = "]="
      source_of(x, out, seen)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
    seen[v] = nil
  else
    error("alua.tostring: cannot write a " .. t, 0)
  end
end

--- Lua source text that rebuilds v.
function alua.tostring(v)
  local out = {}
  local ok, err = pcall(source_of, v, out, {})
  if not ok then error(err, 2) end
  return table.concat(out)
end

--- Ends this agent; in the main script, ends the run (status 0).
function alua.exit()
  if alua.id == "main" then s.halt(0) end
  s.exit()
end

--- Ends every agent and the run, status 0. On a node that runs no program
--- of its own, the run's main agent ends it.
function alua.exit_all()
  if s.main() == nil then
    pcall(s.send, "main", EXIT_ALL)
    s.exit()
  end
  s.halt(0)
end

-- Entry point of a spawned agent.
function alua._agent(name)
  alua.id = name or anonymous_id(s.self())
  loop()
end

-- Entry point of an agent placed on another node by `helper`: it takes its
-- id here and says so. It ends with the run's main agent (`main`), as the
-- agents of the main's own node do.
function alua._placed_agent(name, helper, main)
  alua.id = name or anonymous_id(s.self())
  local ok, err = pcall(s.register, alua.id, s.self())
  s.send(helper, READY, s.self(), ok, ok and alua.id or tostring(err))
  if not ok then return end
  if main then
    alua._run_main = main
    s.monitor(main)
  end
  loop()
end

-- Body of the helper process of `place`: reports to `caller` with
-- (PLACED, token, true, ids) or (PLACED, token, false, error).
function alua._place(caller, token, placed, main)
  local ok, result = pcall(function()
    local pending, ids, failure = {}, {}, nil
    for i, p in pairs(placed) do
      local pid = s.spawn_on(p.node, function(...) require("synodic.alua")._placed_agent(...) end, p.name, s.self(), main)
      s.monitor(pid)
      pending[pid] = {node = p.node, index = i}
    end
    while next(pending) do
      local tag, pid, a, b = s.receive()
      local p = pending[pid]
      if p and tag == READY then
        pending[pid] = nil
        if a then ids[p.index] = b else failure = failure or b end
      elseif p and tag == "DOWN" then
        pending[pid] = nil
        failure = failure or string.format("the agent placed on %s ended before it could receive (%s)", p.node, tostring(a))
      end
    end
    if failure then error(failure, 0) end
    return ids
  end)
  s.send(caller, PLACED, token, ok, result)
end

-- For other event loops built on this one (the console agent).
alua._EVENT = EVENT
alua._run = run
alua._qualified = qualified

-- Loaded in the main process: this is the agent "main".
if s.self() == s.main() then alua.id = "main" end

return alua
