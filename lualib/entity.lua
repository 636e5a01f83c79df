-- synodic.entity: VEOS's entities on Synodic processes (SPEC §7).
--
-- An entity is a process that owns a state table (`self`), a table of
-- methods and a list of persistent procedures. It runs in frames:
--
-- 1. it handles every call that has arrived (each method to completion, in
--    arrival order per caller);
-- 2. it runs its persistent procedures once each, in turn, each to
--    completion (a frame);
-- 3. with a frame rate, it waits for the next frame's time, handling calls
--    as they come meanwhile; without one it goes on at once. An entity
--    without persistent procedures just waits for calls.
--
-- So a frame sees every update sent to the entity before it began. An id
-- is the entity's pid (or its registered name): it works from every node.
-- Methods and procedures are called as `f(self, ...)`; a method's
-- arguments may be data or functions, which cross like any message value.
-- An error in a method or a procedure is reported with the entity's id
-- (on stderr, and to the `errors` process if one was given) and the entity
-- goes on; for `call`, the error is raised in the caller instead.
--
-- Native primitives used: synodic.spawn, spawn_on, send, receive,
-- receive_match, register, whereis, monitor, self, node, clock, exit.

local s = require "synodic"

local entity = {}

-- Message tags; the NUL keeps them apart from a program's own messages.
local SEND = "\0entity.send"       -- method, args...
local FLOW = "\0entity.flow"       -- from, method, args... (acknowledged with DONE)
local CALL = "\0entity.call"       -- from, ref, method, args...
local REPLY = "\0entity.reply"     -- ref, ok, results... | error
local DONE = "\0entity.done"       -- entity
local DEFINE = "\0entity.define"   -- method, f (nil: remove)
local PERSIST = "\0entity.persist" -- name, f (nil: remove)
local KILL = "\0entity.kill"
local READY = "\0entity.ready"     -- ref, ok, why

--- How many of one caller's `send_flow` calls to one entity may be
--- unprocessed before the caller waits.
entity.flow_limit = 16

-- The running entity's state (in an entity's process only).
local running

-- The text errors name an entity by.
local function describe(st)
  return st.name and string.format("%s (%s)", tostring(st.id), st.name) or tostring(st.id)
end

local function report(st, what, err)
  local text = string.format("entity %s: %s: %s", describe(st), what, tostring(err))
  io.stderr:write("synodic: ", text, "\n")
  if st.errors then s.send(st.errors, "entity.error", st.id, text) end
end

-- The message handler of reported errors: the error with its traceback
-- (the debug library is touched only when something fails).
local function traced_error(err)
  return debug.traceback(tostring(err), 2)
end

-- Runs method `m` of the entity with `...`: true and its results, or false
-- and the error (`traced`: with its traceback, for a report).
local function invoke(st, traced, m, ...)
  local f = st.methods[m]
  if f == nil then return false, string.format("no method '%s'", tostring(m)) end
  if traced then return xpcall(f, traced_error, st.self, ...) end
  return pcall(f, st.self, ...)
end

-- Step 1: one message to the entity; false when there was none.
local function handle(st, tag, ...)
  if tag == nil then return false end
  if tag == SEND then
    local ok, err = invoke(st, true, ...)
    if not ok then report(st, string.format("method '%s'", tostring((...))), err) end
  elseif tag == FLOW then
    local from, m = ...
    local ok, err = invoke(st, true, m, select(3, ...))
    if not ok then report(st, string.format("method '%s'", tostring(m)), err) end
    s.send(from, DONE, st.id)
  elseif tag == CALL then
    local from, ref, m = ...
    s.send(from, REPLY, ref, invoke(st, false, m, select(4, ...)))
  elseif tag == DEFINE then
    local m, f = ...
    st.methods[m] = f
  elseif tag == PERSIST then
    local name, f = ...
    if f ~= nil and st.procs[name] == nil then st.order[#st.order + 1] = name end
    if f == nil and st.procs[name] ~= nil then
      for i, n in ipairs(st.order) do
        if n == name then table.remove(st.order, i) break end
      end
    end
    st.procs[name] = f
  elseif tag == KILL then
    s.exit()
  end
  return true
end

-- Handles what has arrived, without waiting.
local function drain(st)
  while handle(st, s.receive(0)) do end
end

-- Step 2: one frame, each procedure to completion, in turn.
local function frame(st)
  for _, name in ipairs(st.order) do
    local ok, err = xpcall(st.procs[name], traced_error, st.self)
    if not ok then report(st, string.format("procedure '%s'", tostring(name)), err) end
  end
  st.self.frame = st.self.frame + 1
end

-- The procedures of `persist` (a table name -> function), in name order.
local function procedures(persist)
  local procs, order = {}, {}
  for name, f in pairs(persist or {}) do
    procs[name] = f
    order[#order + 1] = name
  end
  table.sort(order, function(a, b) return tostring(a) < tostring(b) end)
  return procs, order
end

--- The body of an entity's process (entity.spawn starts it).
function entity._main(spec, parent, ref)
  local procs, order = procedures(spec.persist)
  local st = {
    id = s.self(), name = spec.name, errors = spec.errors,
    methods = spec.methods or {}, procs = procs, order = order,
    period = spec.frame_rate and 1 / spec.frame_rate,
  }
  st.self = {id = st.id, name = spec.name, frame = 0}
  running = st
  if spec.name ~= nil then
    local ok, why = pcall(s.register, spec.name, st.id)
    if not ok then
      s.send(parent, READY, ref, false, why)
      return
    end
  end
  if spec.init ~= nil then
    local ok, err = xpcall(spec.init, traced_error, st.self, table.unpack(spec.args or {}))
    if not ok then
      s.send(parent, READY, ref, false, "init: " .. tostring(err))
      return
    end
  end
  s.send(parent, READY, ref, true)
  local next_frame = s.clock()
  while true do
    if #st.order == 0 then
      -- Nothing to run each frame: wait for calls.
      handle(st, s.receive())
    else
      drain(st)
      frame(st)
      if st.period then
        next_frame = math.max(next_frame + st.period, s.clock() - st.period)
        while true do
          local left = next_frame - s.clock()
          if left <= 0 then break end
          handle(st, s.receive(left))
        end
      end
    end
  end
end

local spawned = 0

--- Starts an entity: `opts` has `name`, `node`, `init` (called as
--- `init(self, table.unpack(args))` before anything else), `args`,
--- `methods`, `persist` (name -> procedure), `frame_rate` (frames per
--- second at most; none: as fast as they run), `errors` (a pid told of
--- every error). Returns its id (its pid) once it has started.
function entity.spawn(opts)
  opts = opts or {}
  local spec = {
    name = opts.name, init = opts.init, args = opts.args, methods = opts.methods,
    persist = opts.persist, frame_rate = opts.frame_rate, errors = opts.errors,
  }
  if spec.frame_rate ~= nil and not (type(spec.frame_rate) == "number" and spec.frame_rate > 0) then
    error("entity.spawn: frame_rate must be a positive number", 2)
  end
  spawned = spawned + 1
  local ref = spawned
  local body = function(spec, parent, ref) require("synodic.entity")._main(spec, parent, ref) end
  local id
  if opts.node ~= nil and opts.node ~= s.node() then
    id = s.spawn_on(opts.node, body, spec, s.self(), ref)
  else
    id = s.spawn(body, spec, s.self(), ref)
  end
  local _, _, ok, why = s.receive_match(function(tag, r) return tag == READY and r == ref end)
  if not ok then error("entity.spawn: " .. tostring(why), 2) end
  return id
end

--- Asynchronous call of method `m`.
function entity.send(e, m, ...)
  s.send(e, SEND, m, ...)
end

-- Per target: this process's send_flow calls not yet acknowledged.
local unprocessed = {}

--- Asynchronous call that waits while more than `entity.flow_limit` of this
--- process's calls to `e` are unprocessed.
function entity.send_flow(e, m, ...)
  s.send(e, FLOW, s.self(), m, ...)
  local n = (unprocessed[e] or 0) + 1
  while n > entity.flow_limit do
    s.receive_match(function(tag, who) return tag == DONE and who == e end)
    n = n - 1
  end
  unprocessed[e] = n
end

local calls, awaited = 0, 0

-- The reply to the call in progress (a process makes one call at a time).
local function answer(tag, ref) return tag == REPLY and ref == awaited end

-- The results of a reply, or its error raised in the caller (as the method
-- raised it: no position is added).
local function results(tag, _, ok, ...)
  if not ok then error((...), 0) end
  return ...
end

-- A call with no answer after a second: watches `e` while waiting on.
local function watched(e)
  local pid = type(e) == "string" and s.whereis(e) or e
  if pid == nil then error(string.format("entity.call: no entity %s", tostring(e)), 0) end
  s.monitor(pid)
  local reply = table.pack(s.receive_match(function(tag, r) return answer(tag, r) or (tag == "DOWN" and r == pid) end))
  if reply[1] == "DOWN" then
    error(string.format("entity.call: entity %s ended before answering (%s)", tostring(e), tostring(reply[3])), 0)
  end
  return results(table.unpack(reply, 1, reply.n))
end

local function replied(e, tag, ...)
  if tag == nil then return watched(e) end
  return results(tag, ...)
end

--- Synchronous call: the method's results; its error is raised here. A
--- call that has no answer within a second starts watching the entity, so
--- that one which ended meanwhile is an error, not a wait forever.
function entity.call(e, m, ...)
  if running ~= nil and (e == running.id or e == running.name) then
    -- An entity calling itself: at once (a message would wait for itself).
    return results(REPLY, nil, invoke(running, false, m, ...))
  end
  calls = calls + 1
  awaited = calls
  s.send(e, CALL, s.self(), calls, m, ...)
  return replied(e, s.receive_match(answer, 1))
end

--- Installs, replaces (f) or removes (nil) method `m` of `e`.
function entity.define(e, m, f)
  if f ~= nil and type(f) ~= "function" then error("entity.define: a function expected", 2) end
  s.send(e, DEFINE, m, f)
end

function entity.undefine(e, m)
  s.send(e, DEFINE, m, nil)
end

--- Installs or replaces (f), or removes (nil), the persistent procedure `p` of `e`.
function entity.persist(e, p, f)
  if f ~= nil and type(f) ~= "function" then error("entity.persist: a function expected", 2) end
  s.send(e, PERSIST, p, f)
end

function entity.unpersist(e, p)
  s.send(e, PERSIST, p, nil)
end

--- Disposes of `e` once it has handled what was sent to it before.
function entity.kill(e)
  s.send(e, KILL)
end

--- The calling entity's id (nil outside an entity).
function entity.self()
  return running and running.id
end

return entity
