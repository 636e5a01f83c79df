-- synodic.alua: event-driven agents (the ALua model) on Synodic processes.
--
-- An agent is a process that receives chunks of Lua source and runs each one
-- as an event, to completion, in its own global environment. Agent ids are
-- registered names, so any process can address any agent. The main script is
-- the agent "main": once it has used this module, it goes on handling events
-- after its chunk returns, until alua.exit() or alua.exit_all().
--
-- Native primitives used: synodic.spawn, send, receive, register, whereis,
-- self, exit, halt.

local s = require "synodic"

local alua = {}

-- Tags of the messages this module sends; the NUL keeps them apart from
-- anything a program would send itself.
local EVENT = "\0alua.event"

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

-- Handles events forever (until the agent or the run ends). Messages that are
-- not events go to alua.on_message, which ignores them by default.
local function loop()
  while true do
    local tag, code = s.receive()
    if tag == EVENT then
      handle(code)
    else
      alua.on_message(tag, code)
    end
  end
end

function alua.on_message() end

-- The id of an agent spawned without a name: from its pid, so unique.
local function anonymous_id(pid)
  return "agent" .. tostring(pid):sub(2, -2)
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

--- Starts n agents, or one agent per name in a list; returns their ids once
--- every one of them can receive.
function alua.spawn(what)
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
  local ids = {}
  for i, name in ipairs(names) do
    -- The new process runs its own copy of this module's agent loop.
    local pid = s.spawn(function(name) require("synodic.alua")._agent(name) end, name)
    local id = name or anonymous_id(pid)
    s.register(id, pid) -- messages to the id queue up from here on
    ids[i] = id
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

--- Ends every agent and the run, status 0.
function alua.exit_all()
  s.halt(0)
end

-- Entry point of a spawned agent.
function alua._agent(name)
  alua.id = name or anonymous_id(s.self())
  loop()
end

-- For other event loops built on this one (the console agent).
alua._EVENT = EVENT
alua._run = run

-- Loaded in the main process: this is the agent "main".
if s.self() == s.main() then alua.id = "main" end

return alua
