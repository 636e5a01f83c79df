-- synodic.console: the agent behind one `synodic console` connection.
--
-- Every line the user types arrives as a message ("console.line", code) and
-- runs as one event in this agent's global environment; what the event prints
-- and any error go back to the user, then a "done" mark. The agent is an ALua
-- agent like any other (id "console<n>"), so it can alua.send and alua.mcast
-- to every agent, and the events other agents send it run here too.
--
-- Native primitives used: synodic.control.write (one line to the user).

local s = require "synodic"
local control = require "synodic.control"
local alua = require "synodic.alua"

local console = {}

local LINE, CLOSED, REPLY = "console.line", "console.closed", "console.reply"

local function output(conn, kind, ...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = tostring(parts[i]) end
  control.write(conn, kind, table.concat(parts, "\t", 1, parts.n))
end

-- Runs code as an event and reports an error to the user.
local function event(conn, code)
  -- A line that is an expression prints its values, as in the lua prompt.
  local ok, err
  if load("return " .. code, "=(console)", "t") then
    ok, err = alua._run("local v = table.pack(" .. code .. ") if v.n > 0 then print(table.unpack(v, 1, v.n)) end")
  else
    ok, err = alua._run(code)
  end
  if not ok then output(conn, "e", err) end
end

--- Entry point: serves connection `conn` until the user leaves.
function console.main(conn)
  alua.id = "console" .. conn
  s.register(alua.id, s.self())
  _G.print = function(...) output(conn, "o", ...) end

  --- inspect(id, expr): evaluates expr in agent id and prints the value.
  local asked = 0
  _G.inspect = function(id, expr)
    asked = asked + 1
    alua.send(id, string.format("require('synodic').send(%q, %q, %d, (%s))", alua.id, REPLY, asked, expr))
    while true do
      local tag, token, value = s.receive(5)
      if tag == nil then error("inspect: no reply from agent " .. tostring(id), 2) end
      if tag == REPLY and token == asked then
        print((type(value) == "table") and alua.tostring(value) or value)
        return
      elseif tag == alua._EVENT then
        event(conn, token)
      end
    end
  end

  while true do
    local tag, code = s.receive()
    if tag == LINE then
      event(conn, code)
      control.write(conn, "d", "")
    elseif tag == alua._EVENT then
      event(conn, code)
    elseif tag == CLOSED then
      return
    end
  end
end

return console
