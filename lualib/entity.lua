-- synodic.entity: VEOS's entities on Synodic processes (SPEC §7): the
-- calls made to entities. An entity is a process running
-- `synodic.entity.loop` (its frames are described there); an id is the
-- entity's pid (or its registered name) and works from every node. A
-- method's arguments may be data or functions, which cross like any
-- message value.
--
-- Native primitives used: synodic.spawn, spawn_on, send, receive_match,
-- whereis, monitor, demonitor, self, node.

local s = require "synodic"
local send, receive_match, spawn, self_pid = s.send, s.receive_match, s.spawn, s.self

local loop = require "synodic.entity.loop"
local main = loop.main
local tags = loop.tags()
local SEND, FLOW, CALL, REPLY = tags.SEND, tags.FLOW, tags.CALL, tags.REPLY
local DONE, DEFINE, PERSIST, KILL, READY = tags.DONE, tags.DEFINE, tags.PERSIST, tags.KILL, tags.READY
-- This process's registry, where the loop keeps the state table of the
-- entity the process runs (see loop.main).
local registry, RUNNING = require("debug").getregistry(), tags.RUNNING
-- Slots of that state table.
local ID, NAME, ERRORS, SELF = tags.ID, tags.NAME, tags.ERRORS, tags.SELF

local entity = {}

--- How many of one caller's `send_flow` calls to one entity may be
--- unprocessed before the caller waits.
entity.flow_limit = 16

-- What the loop needs when something fails, kept here so that an entity's
-- state holds it only once it is needed.

--- Reports `err` of the running entity `st` (in `what`): on stderr and to
--- its `errors` process.
function entity._report(st, what, err)
  local id = st[NAME] and string.format("%s (%s)", tostring(st[ID]), st[NAME]) or tostring(st[ID])
  local text = string.format("entity %s: %s: %s", id, what, tostring(err))
  io.stderr:write("synodic: ", text, "\n")
  if st[ERRORS] then s.send(st[ERRORS], "entity.error", st[ID], text) end
end

--- The traceback of `err`, from where it was raised down to the method or
--- procedure: the frames from the first call of one of `...` (the loop's
--- functions that call methods) or of `xpcall` on are the loop's own.
--- Called by the loop's message handler.
function entity._traced(err, ...)
  local msg, loop_frames, keep = tostring(err), {...}, 0
  while true do
    local info = debug.getinfo(3 + keep, "f")
    if info == nil or info.func == xpcall then break end
    for _, f in ipairs(loop_frames) do
      if info.func == f then info = nil break end
    end
    if info == nil then break end
    keep = keep + 1
  end
  local trace = debug.traceback(msg, 3)
  local head = msg .. "\nstack traceback:"
  -- Lua leaves out the middle of a long traceback: such a one stays whole.
  if keep >= 20 or trace:sub(1, #head) ~= head then return trace end
  local out = {head}
  for line in trace:sub(#head + 1):gmatch("\n[^\n]*") do
    if #out > keep then break end
    out[#out + 1] = line
  end
  return table.concat(out)
end

local spawned = 0

-- The slow way to wait for what a process `pid` sends (a call's reply, an
-- entity's start): watching it meanwhile. Returns the message `wanted`
-- matches, packed, or nil and the reason `pid` ended first.
local function awaited_from(pid, wanted)
  s.monitor(pid)
  local m = table.pack(receive_match(function(tag, r, ...) return wanted(tag, r, ...) or (tag == "DOWN" and r == pid) end))
  if m[1] == "DOWN" then return nil, m[3] end
  if not s.demonitor(pid) then
    -- It ended meanwhile: its DOWN is here or on its way, and is no one else's.
    receive_match(function(tag, r) return tag == "DOWN" and r == pid end)
  end
  return m
end

--- Starts an entity: `opts` has `name`, `node`, `init` (called as
--- `init(self, table.unpack(args))` before anything else), `args`,
--- `methods`, `persist` (name -> procedure), `frame_rate` (frames per
--- second at most; none: as fast as they run), `errors` (a pid told of
--- every error). Returns its id (its pid) once it has started.
function entity.spawn(opts)
  opts = opts or {}
  if opts.frame_rate ~= nil and not (type(opts.frame_rate) == "number" and opts.frame_rate > 0) then
    error("entity.spawn: frame_rate must be a positive number", 2)
  end
  -- What entities spawned alike share, and what is this one's own (see loop.main).
  local code = {init = opts.init, methods = opts.methods}
  -- (Set only when given: storing a nil is a lookup for nothing.)
  if opts.persist ~= nil then code.persist = opts.persist end
  if opts.frame_rate ~= nil then code.frame_rate = opts.frame_rate end
  local own
  if opts.name ~= nil or opts.args ~= nil or opts.errors ~= nil then
    own = {name = opts.name, args = opts.args, errors = opts.errors}
  end
  spawned = spawned + 1
  local ref = spawned
  -- loop.main crosses by name: the new process starts as a copy of a
  -- state that has loaded the loop (crates/lua/src/vm/template.rs).
  local id
  if opts.node ~= nil and opts.node ~= s.node() then
    id = s.spawn_on(opts.node, main, code, own, self_pid(), ref)
  else
    id = spawn(main, code, own, self_pid(), ref)
  end
  -- Matched by tag alone (no predicate to call for each message); a
  -- READY of another reference was left by a spawn that stopped waiting.
  local tag, r, ok, why = receive_match(READY, 1)
  while tag ~= nil and r ~= ref do
    tag, r, ok, why = receive_match(READY, 1)
  end
  if tag == nil then
    local m, reason = awaited_from(id, function(t, r) return t == READY and r == ref end)
    if m == nil then
      error(string.format("entity.spawn: entity %s ended before it was ready (%s)", tostring(id), tostring(reason)), 2)
    end
    ok, why = m[3], m[4]
  end
  if not ok then error("entity.spawn: " .. tostring(why), 2) end
  return id
end

--- Asynchronous call of method `m`.
function entity.send(e, m, ...)
  send(e, SEND, m, ...)
end

-- Per target: this process's send_flow calls not yet acknowledged.
local unprocessed = {}

--- Asynchronous call that waits while more than `entity.flow_limit` of this
--- process's calls to `e` are unprocessed.
function entity.send_flow(e, m, ...)
  send(e, FLOW, self_pid(), m, ...)
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
  local reply, reason = awaited_from(pid, answer)
  if reply == nil then
    error(string.format("entity.call: entity %s ended before answering (%s)", tostring(e), tostring(reason)), 0)
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
  local running = registry[RUNNING]
  if running ~= nil and (e == running[ID] or e == running[NAME]) then
    -- An entity calling itself: at once (a message would wait for itself).
    return loop.lookup(running, m)(running[SELF], ...)
  end
  calls = calls + 1
  awaited = calls
  send(e, CALL, self_pid(), calls, m, ...)
  return replied(e, receive_match(answer, 1))
end

-- Tells `e` to install or replace (f), or remove (nil), its method or
-- persistent procedure (`tag`) `name`; `api` names the caller's function.
local function change(tag, api, e, name, f)
  if f ~= nil and type(f) ~= "function" then error(api .. ": a function expected", 3) end
  send(e, tag, name, f)
end

--- Installs, replaces (f) or removes (nil) method `m` of `e`.
function entity.define(e, m, f) change(DEFINE, "entity.define", e, m, f) end
function entity.undefine(e, m) change(DEFINE, "entity.undefine", e, m, nil) end

--- Installs or replaces (f), or removes (nil), the persistent procedure `p` of `e`.
function entity.persist(e, p, f) change(PERSIST, "entity.persist", e, p, f) end
function entity.unpersist(e, p) change(PERSIST, "entity.unpersist", e, p, nil) end

--- Disposes of `e` once it has handled what was sent to it before.
function entity.kill(e)
  send(e, KILL)
end

--- The calling entity's id (nil outside an entity).
function entity.self()
  local running = registry[RUNNING]
  return running and running[ID]
end

return entity
