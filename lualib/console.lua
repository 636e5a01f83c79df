-- synodic.console: the agent behind one `synodic console` connection.
--
-- Every line the user types arrives as a message ("console.line", code) and
-- runs as one event in this agent's global environment; what the event prints
-- and any error (with the frames of the event only) go back to the user, then
-- a "done" mark. The agent is an ALua agent like any other (id "console<n>"),
-- so it can alua.send and alua.mcast to every agent, and the events other
-- agents send it run here too.
--
-- Tools for the user, as globals:
--   processes()        lists the live processes (pid, state, queued messages, names)
--   inspect(who)       shows what a process (pid or name) is doing, and where
--   inspect(who, expr) evaluates expr in agent `who` and prints the value
--
-- Native primitives used: synodic.control.write (a line to the user),
-- processes, probe.

local s = require "synodic"
local control = require "synodic.control"
local alua = require "synodic.alua"

local console = {}

local LINE, CLOSED, REPLY = "console.line", "console.closed", "console.reply"

local function output(port, kind, ...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  control.write(port, kind, table.concat(parts, "\t", 1, parts.n))
end

-- The traceback of an error in a line the user typed, without the frames
-- of this agent that ran it.
local function traceback(e)
  local tb = debug.traceback(tostring(e), 2)
  return (tb:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
end

-- Runs a line the user typed; a line that is an expression prints its
-- values, as in the lua prompt.
local function run_line(port, code)
  local chunk, err
  if load("return " .. code, "=(console)", "t") then
    chunk = load("local v = table.pack(" .. code .. ") if v.n > 0 then print(table.unpack(v, 1, v.n)) end", "=(console)", "t")
  end
  if not chunk then chunk, err = load(code, "=(console)", "t") end
  if not chunk then return output(port, "e", err) end
  local ok, failure = xpcall(chunk, traceback)
  if not ok then output(port, "e", failure) end
end

-- An event another agent sent: run as any agent runs it.
local function run_event(port, code)
  local ok, err = alua._run(code)
  if not ok then output(port, "e", err) end
end

local function pid_of(who)
  if type(who) == "string" then return s.whereis(who) end
  return who
end

--- Entry point: serves the console whose output port is `port` until the
--- user leaves.
function console.main(port)
  -- The id the endpoint announced (`synodic_net::console::agent_id`).
  alua.id = alua._qualified("console" .. port)
  s.register(alua.id, s.self())
  _G.print = function(...) output(port, "o", ...) end

  _G.processes = function()
    for _, p in ipairs(control.processes()) do
      print(string.format("%-14s %-9s %5d queued  %s", tostring(p.pid), p.state, p.mailbox, table.concat(p.names, " ")))
    end
  end

  local asked = 0
  _G.inspect = function(who, expr)
    local pid = pid_of(who)
    if pid == nil then error("inspect: no process " .. tostring(who), 2) end
    if expr == nil then
      if not control.probe(pid) then
        error(string.format("inspect: no process %s on this node (inspect(who, expr) reaches an agent on any node)", tostring(who)), 2)
      end
      local _, _, text = s.receive_match(function(tag, p) return tag == "probe" and p == pid end, 5)
      if not text then error("inspect: no answer from " .. tostring(who), 2) end
      print(text)
      return
    end
    asked = asked + 1
    local token = asked
    s.send(pid, alua._EVENT, string.format("require('synodic').send(%q, %q, %d, (%s))", alua.id, REPLY, token, expr))
    local tag, _, value = s.receive_match(function(tag, t) return tag == REPLY and t == token end, 5)
    if tag == nil then
      error("inspect: no reply from " .. tostring(who) .. " (expressions run in agents; inspect(who) shows any process)", 2)
    end
    print((type(value) == "table") and alua.tostring(value) or value)
  end

  while true do
    local tag, code = s.receive()
    if tag == LINE then
      run_line(port, code)
      control.write(port, "d", "")
    elseif tag == alua._EVENT then
      run_event(port, code)
    elseif tag == CLOSED then
      return
    end
  end
end

return console
