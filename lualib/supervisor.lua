-- synodic.supervisor: Erlang's supervisors, written on the kernel's links
-- (SPEC §11). A supervisor is a process that traps exits and starts each
-- child with spawn_link_on; when a child ends it applies the restart type
-- (permanent, transient, temporary) and the strategy (one_for_one,
-- one_for_all, rest_for_one), and gives up with reason "shutdown" after
-- more than `intensity` restarts within `period` seconds, ending its
-- children first. Children may be placed with `node = NODE | "any"`; a
-- child whose node is lost ends with "noconnection" and is restarted on a
-- live node ("any"), or on its own node once that is back (the
-- supervisor asks again every half second).
--
-- Requests to a supervisor are messages "$sup", from, ref, op, arg; it
-- answers "$sup.reply", ref, ok, value. Native primitives used: spawn,
-- spawn_link_on, trap_exit, kill, receive_match, send, send_after, self,
-- clock, node, nodes, exit.
local s = require "synodic"

local supervisor = {}

local REQUEST, REPLY, RETRY = "$sup", "$sup.reply", "$sup.retry"
local RESTARTS = {permanent = true, transient = true, temporary = true}
local STRATEGIES = {one_for_one = true, one_for_all = true, rest_for_one = true}
local SHUTDOWN_WAIT = 5 -- seconds a child is given to end when told to

-- A child spec, checked; returns it (with defaults) or raises naming the fault.
local function checked(spec, where)
  if type(spec) ~= "table" then error(where .. ": a child spec must be a table, got " .. type(spec), 3) end
  if spec.id == nil then error(where .. ": a child spec needs an id", 3) end
  if type(spec.start) ~= "function" then error(where .. ": child '" .. tostring(spec.id) .. "' needs a start function", 3) end
  local restart = spec.restart or "permanent"
  if not RESTARTS[restart] then error(where .. ": child '" .. tostring(spec.id) .. "': restart must be permanent, transient or temporary, got " .. tostring(restart), 3) end
  if spec.args ~= nil and type(spec.args) ~= "table" then error(where .. ": child '" .. tostring(spec.id) .. "': args must be a list", 3) end
  if spec.node ~= nil and type(spec.node) ~= "string" then error(where .. ": child '" .. tostring(spec.id) .. "': node must be a node name or \"any\"", 3) end
  return {id = spec.id, start = spec.start, args = spec.args or {}, restart = restart, node = spec.node}
end

-- The supervisor process. `children` is the ordered list of child states:
-- {spec =, pid =}; `pid` nil while it waits to be started again.
local function run(boss, tag, strategy, intensity, period, specs)
  local s = require "synodic"
  s.trap_exit(true)
  local children, restarts = {}, {}
  local retry_armed = false

  local function start(child)
    local node = child.spec.node or s.node()
    local ok, pid = pcall(s.spawn_link_on, node, child.spec.start, table.unpack(child.spec.args))
    if ok then
      child.pid = pid
      return true
    end
    child.pid = nil
    if not retry_armed then
      retry_armed = true
      s.send_after(0.5, s.self(), RETRY)
    end
    return false, pid
  end

  -- Ends a running child and waits for its end (its EXIT, taken here).
  local function stop(child)
    local pid = child.pid
    if not pid then return end
    child.pid = nil
    s.kill(pid, "shutdown")
    s.receive_match(function(t, who) return t == "EXIT" and who == pid end, SHUTDOWN_WAIT)
  end

  local function stop_all(from)
    for i = #children, from or 1, -1 do stop(children[i]) end
  end

  local function index_of(id)
    for i, c in ipairs(children) do
      if c.spec.id == id then return i end
    end
  end

  -- Counts a restart; false when that is one too many.
  local function allowed()
    local now = s.clock()
    restarts[#restarts + 1] = now
    while restarts[1] and restarts[1] < now - period do table.remove(restarts, 1) end
    return #restarts <= intensity
  end

  local function give_up()
    stop_all()
    s.exit("shutdown")
  end

  -- A child ended with `reason`: restart what the strategy says.
  local function ended(i, reason)
    local child = children[i]
    child.pid = nil
    local restart = child.spec.restart
    if restart == "temporary" or (restart == "transient" and (reason == "normal" or reason == "shutdown")) then
      table.remove(children, i)
      return
    end
    if not allowed() then return give_up() end
    local from = i
    if strategy == "one_for_all" then from = 1 end
    if strategy ~= "one_for_one" then
      for j = #children, from, -1 do
        if j ~= i then stop(children[j]) end
      end
    end
    for j = from, (strategy == "one_for_one") and i or #children do
      if not children[j].pid then start(children[j]) end
    end
  end

  local function listing()
    local list = {}
    for _, c in ipairs(children) do
      list[#list + 1] = {id = c.spec.id, pid = c.pid, node = c.pid and s.node(c.pid) or c.spec.node or s.node()}
    end
    return list
  end

  local requests = {
    which_children = function() return true, listing() end,
    start_child = function(spec)
      if index_of(spec.id) then return false, "start_child: a child with id '" .. tostring(spec.id) .. "' exists" end
      local child = {spec = spec}
      local ok, err = start(child)
      if not ok and spec.restart == "temporary" then return false, "start_child: " .. tostring(err) end
      children[#children + 1] = child
      return true, child.pid
    end,
    terminate_child = function(id)
      local i = index_of(id)
      if not i then return false, "terminate_child: no child '" .. tostring(id) .. "'" end
      stop(children[i])
      table.remove(children, i)
      return true, true
    end,
  }

  for _, spec in ipairs(specs) do
    local child = {spec = spec}
    children[#children + 1] = child
    local ok, err = start(child)
    if not ok and not spec.node then
      stop_all()
      s.send(boss, tag, false, "child '" .. tostring(spec.id) .. "' did not start: " .. tostring(err))
      return
    end
  end
  s.send(boss, tag, true)

  while true do
    local kind, a, b, c, d = s.receive()
    if kind == "EXIT" then
      for i, child in ipairs(children) do
        if child.pid == a then ended(i, b) break end
      end
    elseif kind == REQUEST then
      local handler = requests[c]
      if handler then
        s.send(a, REPLY, b, handler(d))
      else
        s.send(a, REPLY, b, false, "unknown request " .. tostring(c))
      end
    elseif kind == RETRY then
      retry_armed = false
      for _, child in ipairs(children) do
        if not child.pid then start(child) end
      end
    end
  end
end

--- Starts a supervisor and its children; returns its pid once they run.
function supervisor.start(opts)
  if type(opts) ~= "table" then error("supervisor.start: options table expected, got " .. type(opts), 2) end
  local strategy = opts.strategy or "one_for_one"
  if not STRATEGIES[strategy] then error("supervisor.start: strategy must be one_for_one, one_for_all or rest_for_one, got " .. tostring(strategy), 2) end
  local intensity, period = opts.intensity or 3, opts.period or 5
  if type(intensity) ~= "number" or intensity < 0 then error("supervisor.start: intensity must be a number of restarts, at least 0", 2) end
  if type(period) ~= "number" or period <= 0 then error("supervisor.start: period must be a positive number of seconds", 2) end
  local specs, ids = {}, {}
  for i, spec in ipairs(opts.children or {}) do
    specs[i] = checked(spec, "supervisor.start")
    if ids[specs[i].id] then error("supervisor.start: two children with id '" .. tostring(specs[i].id) .. "'", 2) end
    ids[specs[i].id] = true
  end
  local tag = "$sup.started." .. tostring(s.self()) .. "." .. tostring(s.clock())
  local pid = s.spawn(run, s.self(), tag, strategy, intensity, period, specs)
  s.monitor(pid)
  while true do
    local t, a, b = s.receive_match(function(t, who) return t == tag or (t == "DOWN" and who == pid) end)
    if t == tag then
      s.demonitor(pid)
      if not a then error("supervisor.start: " .. b, 2) end
      return pid
    end
    error("supervisor.start: the supervisor ended: " .. tostring(b), 2)
  end
end

local serial = 0

-- Asks the supervisor `sup` for `op` and waits for its answer.
local function call(sup, op, arg)
  serial = serial + 1
  local ref = tostring(s.self()) .. "." .. serial
  s.monitor(sup)
  s.send(sup, REQUEST, s.self(), ref, op, arg)
  local t, a, ok, value = s.receive_match(function(t, a) return (t == REPLY and a == ref) or (t == "DOWN" and a == sup) end)
  if t == "DOWN" then error(op .. ": the supervisor is not running (" .. tostring(ok) .. ")", 3) end
  s.demonitor(sup)
  if not ok then error(value, 3) end
  return value
end

--- The children of `sup`: a list of {id =, pid =, node =} (pid nil while restarting).
function supervisor.which_children(sup)
  return call(sup, "which_children")
end

--- Adds a child to `sup` and starts it; returns its pid.
function supervisor.start_child(sup, spec)
  return call(sup, "start_child", checked(spec, "start_child"))
end

--- Ends the child `id` of `sup` and forgets it.
function supervisor.terminate_child(sup, id)
  return call(sup, "terminate_child", id)
end

return supervisor
