-- synodic.console: the agent behind one `synodic console` connection.
--
-- Every line the user types arrives as a message ("console.line", code) and
-- runs as one event in this agent's global environment; what the event prints
-- and any error (with the frames of the event only) go back to the user, then
-- a "done" mark. The agent is an ALua agent like any other (id "console<n>"),
-- so it can alua.send and alua.mcast to every agent, and the events other
-- agents send it run here too.
--
-- Lines gather until they form a statement, and values print readably
-- (synodic.repl, shared with `synodic`'s own prompt). Ctrl-C at the client
-- stops the line running ("interrupted!"); the client leaving ends the
-- agent, even in the middle of a line.
--
-- Tools for the user, as globals:
--   processes([max] [, by])
--                      lists the live processes of every node (pid, node,
--                      state, processor time, memory, queued messages,
--                      names), sorted by "cpu" (default), "memory" or
--                      "mailbox", at most max (default 50)
--   pid(text)          the pid printed as text ("<0.4.0>")
--   kill(pid [, why])  ends a process, on any node
--   inspect(who)       shows what a process (pid or name) is doing, and where
--   inspect(who, expr) evaluates expr in agent `who` and prints the value
--   scope([space])     the tuple scope: every tuple space of the cluster (or
--                      the one named), where it lives, its classes of tuples
--                      (arity and first field) and their counts, and how many
--                      callers wait on it
--   dump(space, first [, arity [, max]])
--                      the tuples of one class, oldest first
--
-- Native primitives used: synodic.control.write (a line to the user),
-- processes, probe, spaces, tuples.

local s = require "synodic"
local control = require "synodic.control"
local alua = require "synodic.alua"
local repl = require "synodic.repl"

local console = {}

local LINE, CLOSED, REPLY = "console.line", "console.closed", "console.reply"

local function output(port, kind, ...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  control.write(port, kind, table.concat(parts, "\t", 1, parts.n))
end

-- An event another agent sent: run as any agent runs it.
local function run_event(port, code)
  local ok, err = alua._run(code)
  if not ok then output(port, "e", err) end
end

local function pid_of(who)
  if type(who) == "string" then
    if who:match("^%s*<[%d.]+>%s*$") then return repl.pid(who) end
    return s.whereis(who)
  end
  return who
end

local on_nodes = require("synodic.gather").on_nodes

-- What a class's first field looks like in a pane.
local function shown(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

-- The spaces of every node, named or private, as control.spaces() gives them.
local function spaces_of_cluster()
  return on_nodes(s.nodes(), function() return require("synodic.control").spaces() end)
end

local function scope(name)
  local any = false
  for _, at in ipairs(spaces_of_cluster()) do
    if not at.ok then
      print(string.format("%s: %s", at.node, tostring(at.value)))
    else
      for _, sp in ipairs(at.value) do
        if name == nil or sp.name == name then
          any = true
          print(string.format("%s on %s: %d tuples, %d waiting", sp.name and string.format("%q", sp.name) or ("private space " .. sp.id), at.node, sp.tuples, sp.waiting))
          for _, c in ipairs(sp.classes) do
            print(string.format("  (%s, ...) x%d  %d", c.first == nil and "?" or shown(c.first), c.arity, c.count))
          end
        end
      end
    end
  end
  if not any then print(name and ("no space named " .. name) or "no tuple spaces") end
end

local function dump(name, first, arity, max)
  for _, at in ipairs(spaces_of_cluster()) do
    for _, sp in ipairs(at.ok and at.value or {}) do
      if sp.name == name or (type(name) == "number" and sp.id == name) then
        for _, c in ipairs(sp.classes) do
          if c.first == first and (arity == nil or c.arity == arity) then
            local got = on_nodes({at.node}, function(...) return require("synodic.control").tuples(...) end, sp.id, c.arity, first, max)
            for _, r in ipairs(got) do
              for _, t in ipairs(r.ok and r.value or {}) do
                local parts = {}
                for i = 1, #t do parts[i] = shown(t[i]) end
                print("(" .. table.concat(parts, ", ") .. ")")
              end
            end
          end
        end
        return
      end
    end
  end
  print("no space " .. tostring(name))
end

--- Entry point: serves the console whose output port is `port` until the
--- user leaves.
function console.main(port)
  -- The id the endpoint announced (`synodic_net::console::agent_id`).
  alua.id = alua._qualified("console" .. port)
  s.register(alua.id, s.self())
  _G.print = function(...) output(port, "o", ...) end

  _G.processes = function(max, by)
    if type(max) == "string" then max, by = nil, max end
    max = max or 50
    if by and by ~= "cpu" and by ~= "memory" and by ~= "mailbox" then error("processes: sort by cpu, memory or mailbox", 2) end
    local all = {}
    for _, at in ipairs(on_nodes(s.nodes(), function() return require("synodic.control").processes() end)) do
      if not at.ok then print(string.format("%s: %s", at.node, tostring(at.value))) end
      for _, p in ipairs(at.ok and at.value or {}) do
        p.node = at.node
        all[#all + 1] = p
      end
    end
    local key = by or "cpu"
    table.sort(all, function(a, b)
      if a[key] ~= b[key] then return a[key] > b[key] end
      if a.mailbox ~= b.mailbox then return a.mailbox > b.mailbox end
      return a.node < b.node
    end)
    print(string.format("%-12s %-20s %-9s %9s %9s %7s  %s", "pid", "node", "state", "cpu ms", "KiB", "queued", "names"))
    for i = 1, math.min(#all, max) do
      local p = all[i]
      print(string.format("%-12s %-20s %-9s %9d %9d %7d  %s", tostring(p.pid), p.node, p.state, p.cpu * 1000, p.memory // 1024, p.mailbox, table.concat(p.names, " ")))
    end
    if #all > max then print(string.format("... and %d more (processes(%d) shows them)", #all - max, #all)) end
  end
  _G.pid = repl.pid
  _G.kill = function(who, why)
    local p = pid_of(who)
    if p == nil then error("kill: no process " .. tostring(who), 2) end
    return s.kill(p, why)
  end

  _G.scope, _G.dump = scope, dump

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

  local prompt = repl.new(function(text) output(port, "o", text) end, function(text) output(port, "e", text) end, "=(console)")
  while true do
    -- (A Ctrl-C that comes once its line is done interrupts this wait: no harm.)
    local ok, tag, code = pcall(s.receive)
    if not ok then tag = nil end
    if tag == LINE then
      if prompt.feed(code) == "more" then
        control.write(port, "m", "")
      else
        control.write(port, "d", "")
      end
    elseif tag == alua._EVENT then
      run_event(port, code)
    elseif tag == CLOSED then
      return
    end
  end
end

return console
