-- synodic.entity.loop: the body of an entity's process (SPEC §7). It is
-- kept apart from `synodic.entity`, the calls made to entities.
--
-- This module is the node's, not a process's: its main chunk runs once,
-- when the node starts, and the closures it makes are shared by every
-- process, as its code is (crates/lua/src/vm/shared.rs, "frozen modules"). An
-- entity's state then holds none of them, where it held 16 closures and 29
-- upvalues (~3.5 KB of every entity). So that they can be shared:
--
-- - its functions keep nothing of their own between calls (no upvalue is
--   assigned after the main chunk: the node checks), and what an entity
--   changes lives in its state table `st`;
-- - their upvalues hold only C functions without upvalues, other functions
--   of this module, strings and numbers (the node checks): no table, not
--   even the globals (no global is read) or the `synodic` module. What a
--   process's own globals offer (`require`) is reached through its
--   registry (`debug.getregistry`, whose C function is the same in every
--   process);
-- - a process's `require "synodic.entity.loop"` gets a table of its own
--   holding the shared functions.
--
-- What only errors need lives in `synodic.entity`.
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
-- So a frame sees every update sent to the entity before it began.
-- Methods and procedures are called as `f(self, ...)`. Calls are handled
-- in one protected call until one of them fails (not one protected call
-- each: that made a call and its reply 20% slower); the failed call's
-- error is reported with the entity's id (on stderr, and to the `errors`
-- process if one was given) or, for a `call`, sent back to the caller,
-- and the entity goes on.
--
-- Native primitives used: synodic.send, receive, register, self, clock, exit.

local s = require "synodic"
local send, receive, clock, self_pid, register, exit, set_role = s.send, s.receive, s.clock, s.self, s.register, s.exit, s._role
local pairs, ipairs, pcall, xpcall, tostring, error = pairs, ipairs, pcall, xpcall, tostring, error
local format, remove, sort, unpack, max = string.format, table.remove, table.sort, table.unpack, math.max
local registry = debug.getregistry

local loop = {}

-- Message tags. The NUL keeps them apart from a program's own messages;
-- they are short so that a call with a few small arguments fits in an
-- inline message (30 bytes: no allocation to send it).
local SEND <const> = "\0e.s"    -- method, args...
local FLOW <const> = "\0e.f"    -- from, method, args... (acknowledged with DONE)
local CALL <const> = "\0e.c"    -- from, ref, method, args...
local REPLY <const> = "\0e.r"   -- ref, ok, results... | error
local DONE <const> = "\0e.d"    -- entity
local DEFINE <const> = "\0e.m"  -- method, f (nil: remove)
local PERSIST <const> = "\0e.p" -- name, f (nil: remove)
local KILL <const> = "\0e.k"
local READY <const> = "\0e.y"  -- ref, ok, why
-- Where a process's registry holds the state table of the entity it runs.
local RUNNING <const> = "synodic.entity.running"
-- An entity's state table `st` is an array (a hash of its ten fields took
-- 256 bytes and a lookup each). Its slots:
-- the call in progress, for its error: its kind (SEND, FLOW or CALL; false
-- between calls), method, and caller and reference (CALL, FLOW);
local DOING <const>, METHOD <const>, CALLER <const>, REF <const> = 1, 2, 3, 4
-- the entity's id, name and `errors` process (false: none), and the
-- `self` its methods get;
local ID <const>, NAME <const>, ERRORS <const>, SELF <const> = 5, 6, 7, 8
-- its methods, its persistent procedures (false until it has one: name ->
-- procedure, and their names in the order they run), the seconds between
-- frames (false: no frame rate) and its `init` (false: none).
local METHODS <const>, PROCS <const>, ORDER <const>, PERIOD <const>, INIT <const> = 9, 10, 11, 12, 13
-- when its frames began (its clock; false: none yet), for the dashboard's
-- frame rate.
local STARTED <const> = 14

-- The tags and `st`'s slots by name, for callers (`synodic.entity`). A
-- function, not a table: this module's values are shared by the node's
-- processes, and a table among them could be written by one and seen by
-- another.
function loop.tags()
  return {
    SEND = SEND, FLOW = FLOW, CALL = CALL, REPLY = REPLY, DONE = DONE, DEFINE = DEFINE, PERSIST = PERSIST, KILL = KILL,
    READY = READY, RUNNING = RUNNING, ID = ID, NAME = NAME, ERRORS = ERRORS, SELF = SELF,
  }
end

-- The registry's index of a process's globals (LUA_RIDX_GLOBALS).
local GLOBALS <const> = 2

-- `synodic.entity` as this process's `require` finds it.
local function entity_module()
  return registry()[GLOBALS].require("synodic.entity")
end

-- The method `m` of `st`, or an error naming it.
local function lookup(st, m)
  local f = st[METHODS][m]
  if f == nil then error(format("no method '%s'", tostring(m)), 0) end
  return f
end
loop.lookup = lookup

local function on_send(st, m, ...)
  st[DOING], st[METHOD] = SEND, m
  lookup(st, m)(st[SELF], ...)
  st[DOING] = false
end

local function on_call(st, from, r, m, ...)
  st[DOING], st[METHOD], st[CALLER], st[REF] = CALL, m, from, r
  send(from, REPLY, r, true, lookup(st, m)(st[SELF], ...))
  st[DOING] = false
end

local function on_flow(st, from, m, ...)
  st[DOING], st[METHOD], st[CALLER] = FLOW, m, from
  lookup(st, m)(st[SELF], ...)
  st[DOING] = false
  send(from, DONE, st[ID])
end

-- Changes persistent procedure `name` to `f` (nil: removes it).
local function persist(st, name, f)
  local procs, order = st[PROCS], st[ORDER]
  if not procs then
    if f == nil then return end
    procs, order = {}, {}
    st[PROCS], st[ORDER] = procs, order
  end
  if f ~= nil and procs[name] == nil then order[#order + 1] = name end
  if f == nil and procs[name] ~= nil then
    for i, n in ipairs(order) do
      if n == name then remove(order, i) break end
    end
  end
  procs[name] = f
end

-- Whether the entity has no persistent procedure.
local function no_procedures(st)
  local order = st[ORDER]
  return not order or order[1] == nil
end

-- Step 1: one message to the entity; false when there was none.
local function step(st, tag, ...)
  if tag == SEND then
    on_send(st, ...)
  elseif tag == nil then
    return false
  elseif tag == CALL then
    on_call(st, ...)
  elseif tag == FLOW then
    on_flow(st, ...)
  elseif tag == DEFINE then
    local m, f = ...
    st[METHODS][m] = f
  elseif tag == PERSIST then
    persist(st, ...)
  elseif tag == KILL then
    exit()
  end
  return true
end

-- Handles calls: until none is waiting (`until_` nil), until the clock
-- reaches `until_`, or, with `until_` true, while the entity has no
-- persistent procedures.
local function calls(st, until_)
  if until_ == nil then
    while step(st, receive(0)) do end
  elseif until_ == true then
    while no_procedures(st) do step(st, receive()) end
  else
    while true do
      local left = until_ - clock()
      if left <= 0 then return end
      step(st, receive(left))
    end
  end
end

-- The message handler of protected calls: a failed call's error as it is
-- (a `call`'s goes back to its caller unchanged, and a missing method
-- needs no traceback), any other with its traceback.
local function traced(err)
  local st = registry()[RUNNING]
  local doing = st[DOING]
  if doing == CALL or (doing and st[METHODS][st[METHOD]] == nil) then return err end
  local trace = entity_module()._traced(err, on_send, on_call, on_flow)
  return trace -- not a tail call: _traced counts this frame
end

-- After `err` stopped a call: sends it back to a `call`'s caller, or
-- reports it (and acknowledges a `send_flow`).
local function failed(st, err)
  local kind, caller = st[DOING], st[CALLER]
  st[DOING] = false
  if kind == CALL then
    local ref = st[REF]
    if not pcall(send, caller, REPLY, ref, false, err) then send(caller, REPLY, ref, false, tostring(err)) end
    return
  end
  local what = kind and format("method '%s'", tostring(st[METHOD])) or "message"
  entity_module()._report(st, what, err)
  if kind == FLOW then send(caller, DONE, st[ID]) end
end

-- `calls`, going on after one fails.
local function serve(st, until_)
  while true do
    local ok, err = xpcall(calls, traced, st, until_)
    if ok then return end
    failed(st, err)
  end
end

-- Step 2: one frame, each procedure to completion, in turn.
local function frame(st)
  local procs, self = st[PROCS], st[SELF]
  for _, name in ipairs(st[ORDER]) do
    local ok, err = xpcall(procs[name], traced, self)
    if not ok then entity_module()._report(st, format("procedure '%s'", tostring(name)), err) end
  end
  self.frame = self.frame + 1
end

-- Steps 1 to 3, for ever.
local function run(st)
  local next_frame -- the clock when the entity first has procedures
  while true do
    if no_procedures(st) then
      serve(st, true)
    else
      if not next_frame then
        next_frame = clock()
        st[STARTED] = next_frame
      end
      serve(st, nil)
      frame(st)
      local period = st[PERIOD]
      if period then
        next_frame = max(next_frame + period, clock() - period)
        serve(st, next_frame)
      end
    end
  end
end

local function by_name(a, b) return tostring(a) < tostring(b) end

-- What the entity's description (a probe: the dashboard) says of it:
-- `registry["synodic.stats"]` (see `synodic._role`).
local function stats()
  local st = registry()[RUNNING]
  local frames, period = st[SELF].frame, st[PERIOD]
  local took = st[STARTED] and clock() - st[STARTED] or 0
  return format("entity %s: %d frames, %.1f frames/s%s", tostring(st[NAME] or st[ID]), frames, took > 0 and frames / took or 0,
    period and format(" (rate %.1f/s)", 1 / period) or "")
end

-- The state table of an entity that `code` (init, methods, persist,
-- frame_rate) describes, all but what is its own (id, name and errors),
-- made the running entity's. Entities spawned alike start from a copy of
-- a state where this has run already (crates/lua/src/vm/prefix.rs,
-- "prepared"), so their start only fills in what is their own.
local function prepare(code)
  local st = {
    false, false, false, false, -- DOING...
    false, false, false, {id = false, frame = 0}, -- ID, NAME, ERRORS, SELF
    code.methods or {}, false, false, code.frame_rate and 1 / code.frame_rate or false, code.init or false,
    false, -- STARTED
  }
  if code.persist ~= nil then
    for proc, f in pairs(code.persist) do persist(st, proc, f) end
    if st[ORDER] then sort(st[ORDER], by_name) end
  end
  local reg = registry()
  reg[RUNNING], reg["synodic.stats"] = st, stats
  return st
end
loop.prepare = prepare

-- Starts the entity that `st` describes (what `prepare` made, or the
-- `code` to make it from) with `own` (name, args, errors; nil when it has
-- none), tells `parent` (READY with `r`) whether it could, and runs it.
-- The two arrive apart (see entity.spawn) so that entities spawned with
-- the same code start alike.
function loop.main(st, own, parent, r)
  if st[DOING] == nil then st = prepare(st) end
  local id = self_pid()
  local self = st[SELF]
  st[ID], self.id = id, id
  set_role("entity")
  local name, args
  if own ~= nil then
    name, args = own.name, own.args
    st[NAME], st[ERRORS], self.name = name or false, own.errors or false, name
  end
  local ok, why = true, nil
  if name ~= nil then ok, why = pcall(register, name, id) end
  local init = st[INIT]
  if ok and init then
    if args == nil then
      ok, why = xpcall(init, traced, self)
    else
      ok, why = xpcall(init, traced, self, unpack(args))
    end
    why = not ok and "init: " .. tostring(why) or nil
  end
  send(parent, READY, r, ok, why)
  -- A tail call: `run` takes main's frame, whose 17 slots the entity's
  -- stack then need not hold under every call (crates/lua/src/vm/template.rs).
  if ok then return run(st) end
end

return loop
