-- synodic.entity.loop: the body of an entity's process (SPEC §7). It is
-- kept apart from `synodic.entity`, the calls made to entities, and kept
-- small: its code is the node's, shared (crates/lua/src/shared.rs), but
-- every entity's Lua state holds the closures and upvalues its main chunk
-- makes (about 3.5 KB). What only errors need lives in `synodic.entity`,
-- loaded when one happens.
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
local send, receive, clock, self_pid = s.send, s.receive, s.clock, s.self
-- Taken now, so that an entity, which starts as a copy of a state that
-- has loaded this module (crates/lua/src/template.rs), finds them made.
-- (Not the table and math libraries: only some entities need them, and
-- each is a table of its own in every entity's state.)
local pairs, ipairs, pcall, xpcall, tostring = pairs, ipairs, pcall, xpcall, tostring

local loop = {}

-- Message tags. The NUL keeps them apart from a program's own messages;
-- they are short so that a call with a few small arguments fits in an
-- inline message (30 bytes: no allocation to send it). Constants, not
-- variables: the functions' shared code holds them, and an entity's state
-- needs no upvalue for each.
local SEND <const> = "\0e.s"    -- method, args...
local FLOW <const> = "\0e.f"    -- from, method, args... (acknowledged with DONE)
local CALL <const> = "\0e.c"    -- from, ref, method, args...
local REPLY <const> = "\0e.r"   -- ref, ok, results... | error
local DONE <const> = "\0e.d"    -- entity
local DEFINE <const> = "\0e.m"  -- method, f (nil: remove)
local PERSIST <const> = "\0e.p" -- name, f (nil: remove)
local KILL <const> = "\0e.k"
local READY <const> = "\0e.y"  -- ref, ok, why
-- The tags by name, for callers (`synodic.entity`). A function, not a
-- table: a table would be ~570 bytes of every entity's state.
function loop.tags()
  return {
    SEND = SEND, FLOW = FLOW, CALL = CALL, REPLY = REPLY, DONE = DONE, DEFINE = DEFINE, PERSIST = PERSIST, KILL = KILL,
    READY = READY,
  }
end

-- The running entity's state (in an entity's process only).
loop.running = nil

-- The call in progress, for its error: its kind (SEND, FLOW or CALL; nil
-- between calls), method, and caller and reference (CALL, FLOW).
local doing, method, caller, ref

-- The method `m` of `st`, or an error naming it.
local function lookup(st, m)
  local f = st.methods[m]
  if f == nil then error(string.format("no method '%s'", tostring(m)), 0) end
  return f
end
loop.lookup = lookup

local function on_send(st, m, ...)
  doing, method = SEND, m
  lookup(st, m)(st.self, ...)
  doing = nil
end

local function on_call(st, from, r, m, ...)
  doing, method, caller, ref = CALL, m, from, r
  send(from, REPLY, r, true, lookup(st, m)(st.self, ...))
  doing = nil
end

local function on_flow(st, from, m, ...)
  doing, method, caller = FLOW, m, from
  lookup(st, m)(st.self, ...)
  doing = nil
  send(from, DONE, st.id)
end

-- Changes persistent procedure `name` to `f` (nil: removes it).
local function persist(st, name, f)
  if f ~= nil and st.procs[name] == nil then st.order[#st.order + 1] = name end
  if f == nil and st.procs[name] ~= nil then
    for i, n in ipairs(st.order) do
      if n == name then table.remove(st.order, i) break end
    end
  end
  st.procs[name] = f
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
    st.methods[m] = f
  elseif tag == PERSIST then
    persist(st, ...)
  elseif tag == KILL then
    s.exit()
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
    while st.order[1] == nil do step(st, receive()) end
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
  if doing == CALL or (doing ~= nil and loop.running.methods[method] == nil) then return err end
  local trace = require("synodic.entity")._traced(err, on_send, on_call, on_flow)
  return trace -- not a tail call: _traced counts this frame
end

-- After `err` stopped a call: sends it back to a `call`'s caller, or
-- reports it (and acknowledges a `send_flow`).
local function failed(st, err)
  local kind = doing
  doing = nil
  if kind == CALL then
    if not pcall(send, caller, REPLY, ref, false, err) then send(caller, REPLY, ref, false, tostring(err)) end
    return
  end
  local what = kind and string.format("method '%s'", tostring(method)) or "message"
  require("synodic.entity")._report(st, what, err)
  if kind == FLOW then send(caller, DONE, st.id) end
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
  for _, name in ipairs(st.order) do
    local ok, err = xpcall(st.procs[name], traced, st.self)
    if not ok then require("synodic.entity")._report(st, string.format("procedure '%s'", tostring(name)), err) end
  end
  st.self.frame = st.self.frame + 1
end

-- Steps 1 to 3, for ever.
local function run(st)
  local next_frame = clock()
  while true do
    if st.order[1] == nil then
      serve(st, true)
    else
      serve(st, nil)
      frame(st)
      if st.period then
        next_frame = math.max(next_frame + st.period, clock() - st.period)
        serve(st, next_frame)
      end
    end
  end
end

-- Starts the entity that `code` (init, methods, persist, frame_rate) and
-- `own` (name, args, errors; nil when it has none) describe (see
-- entity.spawn), tells `parent` (READY with `r`) whether it could, and
-- runs it. The two arrive apart so that entities spawned with the same
-- code start alike: from the second, the process starts as a copy of a
-- state that has the code decoded (crates/lua/src/prefix.rs).
local function by_name(a, b) return tostring(a) < tostring(b) end

function loop.main(code, own, parent, r)
  local id = self_pid()
  local name, args, errors
  if own ~= nil then name, args, errors = own.name, own.args, own.errors end
  local st = {
    id = id, name = name, errors = errors,
    methods = code.methods or {}, procs = {}, order = {},
    period = code.frame_rate and 1 / code.frame_rate,
  }
  if code.persist ~= nil then
    for proc, f in pairs(code.persist) do persist(st, proc, f) end
    table.sort(st.order, by_name)
  end
  st.self = {id = id, name = name, frame = 0}
  loop.running = st
  local ok, why = true, nil
  if name ~= nil then ok, why = pcall(s.register, name, st.id) end
  if ok and code.init ~= nil then
    if args == nil then
      ok, why = xpcall(code.init, traced, st.self)
    else
      ok, why = xpcall(code.init, traced, st.self, table.unpack(args))
    end
    why = not ok and "init: " .. tostring(why) or nil
  end
  send(parent, READY, r, ok, why)
  if ok then run(st) end
end

return loop
