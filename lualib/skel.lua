-- synodic.skel: algorithmic skeletons (SPEC §6), after Lithium. Farm,
-- pipeline, map and divide & conquer nest freely; a program is evaluated
-- as macro data flow: each task unfolds into instructions (apply a
-- function, split, gather, a divide & conquer step), and an instruction is
-- fireable once its inputs exist. Instructions run in the nodes' pools
-- (s._submit), and the evaluator, in the caller's process, hears of each
-- one's end by a note. Three optimisations, each of which can be turned off
-- to measure it (Lithium's "plain" evaluation is all three off):
--
-- 1. Lookahead (opts.lookahead = {min, max}, or false for one at a time):
--    each node has several instructions in flight, between min and max.
-- 2. Lazy binding (opts.lazy, default on): an instruction's result stays on
--    the node that computed it (a future); the next instruction of the
--    chain goes where its input is, and otherwise the input moves straight
--    from node to node; a gather goes where most of its inputs are. Off,
--    every result comes back to the caller and goes out again as a value.
-- 3. Load balancing (opts.balance, default on): every note carries the
--    node's load and how much of the task's time it could compute; a node
--    that computes less (loaded from outside) gets fewer in flight.
--
-- A node that is lost has its instructions run again elsewhere, and the
-- results that lived only there are computed again from their inputs
-- (each token remembers the instruction that made it). Every task's result
-- is delivered once.
local s = require "synodic"
local balance = require "synodic.skel.balance"
local watch = require "synodic.skel.watch"

local M = {}

-- Skeletons ------------------------------------------------------------

local Skeleton = {__name = "skeleton"}

local function skeleton(t) return setmetatable(t, Skeleton) end

local function check_function(f, what, n)
  if type(f) ~= "function" then
    error(("bad argument #%d to '%s' (function expected, got %s)"):format(n, what, type(f)), 3)
  end
end

-- A skeleton, or a function taken as seq(f).
local function as_skeleton(x, what, n)
  if getmetatable(x) == Skeleton then return x end
  if type(x) == "function" then return skeleton {kind = "seq", f = x} end
  error(("bad argument #%d to '%s' (skeleton or function expected, got %s)"):format(n, what, type(x)), 3)
end

function M.seq(f)
  check_function(f, "seq", 1)
  return skeleton {kind = "seq", f = f}
end

function M.farm(w, opts)
  local workers = opts and opts.workers
  if workers ~= nil and (math.type(workers) ~= "integer" or workers < 1) then
    error("farm: workers must be a positive integer", 2)
  end
  return skeleton {kind = "farm", w = as_skeleton(w, "farm", 1), workers = workers}
end

function M.pipeline(...)
  local stages = table.pack(...)
  if stages.n == 0 then error("pipeline: at least one stage", 2) end
  for i = 1, stages.n do stages[i] = as_skeleton(stages[i], "pipeline", i) end
  return skeleton {kind = "pipeline", stages = stages}
end

function M.map(split, w, merge)
  check_function(split, "map", 1)
  check_function(merge, "map", 3)
  return skeleton {kind = "map", split = split, w = as_skeleton(w, "map", 2), merge = merge}
end

function M.dc(trivial, solve, divide, combine)
  check_function(trivial, "dc", 1)
  check_function(solve, "dc", 2)
  check_function(divide, "dc", 3)
  check_function(combine, "dc", 4)
  return skeleton {kind = "dc", trivial = trivial, solve = solve, divide = divide, combine = combine}
end

-- What runs in the pools -----------------------------------------------

-- One instruction, in a pool worker (its future arguments resolved there).
-- A split keeps its parts on its node, one future each, and tells the
-- evaluator their futures; a dc step says whether it solved or divided. The
-- instruction that makes a task's result (`final`) sends it along with its
-- note: it goes to the caller anyway.
local function runner(kind, final, ...)
  local s = require "synodic"
  local reply = require("synodic.future").reply
  local function keep(parts, what)
    if type(parts) ~= "table" then error(what .. " must return a list of parts, got " .. type(parts), 0) end
    local futures = {}
    for i = 1, #parts do futures[i] = s._store(parts[i]) end
    return futures
  end
  local function result(r)
    if final then reply(r) end
    return r
  end
  if kind == "apply" then
    local f, x = ...
    return result((f(x)))
  elseif kind == "split" then
    local split, x = ...
    reply(keep(split(x), "map: split"))
  elseif kind == "gather" then
    local merge, n = ...
    local results = table.pack(select(3, ...))
    results.n = nil
    return result((merge(results, n)))
  elseif kind == "dc" then
    local trivial, solve, divide, x = ...
    if trivial(x) then
      local r = solve(x)
      reply("solved", r)
      return r
    end
    reply("divided", keep(divide(x), "dc: divide"))
  end
end

-- The evaluator ----------------------------------------------------------

local Evaluator = {}
Evaluator.__index = Evaluator

local evaluators = 0


local function check_options(opts)
  if type(opts) ~= "table" then error("skel: options must be a table", 3) end
  local la = opts.lookahead
  if la ~= nil and la ~= false then
    if type(la) ~= "table" then error("skel: lookahead must be {min = n, max = n} or false", 3) end
    local min, max = la.min or 2, la.max or 6
    if math.type(min) ~= "integer" or math.type(max) ~= "integer" or min < 1 or max < min then
      error("skel: lookahead needs integers 1 <= min <= max", 3)
    end
  end
  if opts.errors ~= nil and opts.errors ~= "raise" and opts.errors ~= "return" then
    error("skel: errors must be \"raise\" or \"return\"", 3)
  end
end

function M.evaluator(program, opts)
  program = as_skeleton(program, "evaluator", 1)
  opts = opts or {}
  check_options(opts)
  evaluators = evaluators + 1
  local la = opts.lookahead
  local min, max = 1, 1
  if la ~= false then min, max = (la and la.min) or 2, (la and la.max) or 6 end
  local ev = setmetatable({
    id = evaluators, program = program, me = s.self(),
    lazy = opts.lazy ~= false, balance = opts.balance ~= false,
    min = min, max = max, errors = opts.errors or "raise",
    progress = opts.progress and s._isatty(2) or false, drawn = -math.huge, shown = false,
    trace = opts.trace and {} or nil, started = s.clock(),
    nodes = {}, order = {},
    instructions = {}, next_instruction = 0,
    waiting = {}, waiting_head = 1, waiting_tail = 0, ready = {},
    tasks = {}, added = 0, started_tasks = 0, finished = 0,
    completed = {}, completed_head = 1, completed_tail = 0,
    farms = {}, -- farm skeleton -> its instructions in flight
  }, Evaluator)
  local live = {}
  for _, n in ipairs(s.nodes()) do live[n] = true end
  for _, name in ipairs(opts.nodes or s.nodes()) do
    if not live[name] then error("skel: no such node: " .. tostring(name), 2) end
    ev.nodes[name] = {name = name, in_flight = 0, limit = max, done = 0, bytes_caller = 0, bytes_nodes = 0, efficiency = 1, load = 0, alive = true}
    ev.order[#ev.order + 1] = name
    if name ~= s.node() then s.monitor_node(name) end
  end
  ev.filter = function(tag, note)
    return (tag == "$done" and type(note) == "table" and note[1] == ev.id) or tag == "nodedown"
  end
  watch.started(ev)
  return ev
end

-- Tokens: a value, or a future on a node; `producer` made it (its lineage).
local function value_token(v) return {value = v, ready = true} end

-- Tasks and instructions.

function Evaluator:add_task(x)
  self.added = self.added + 1
  local t = {index = self.added, input = x}
  self.tasks[t.index] = t
  self.waiting_tail = self.waiting_tail + 1
  self.waiting[self.waiting_tail] = t
  self:dispatch()
  return t.index
end

-- A new instruction of task `t`: `kind` runs `args` (functions) on `inputs`
-- (tokens); `k(token, how, parts)` carries its result on, once (a split's
-- and a divide's parts are tokens in `parts`; a dc step says `how`).
function Evaluator:emit(t, kind, args, inputs, k, farm, final)
  self.next_instruction = self.next_instruction + 1
  local ins = {id = self.next_instruction, task = t, kind = kind, args = args, inputs = inputs, k = k, farm = farm, final = final, state = "ready"}
  self.instructions[ins.id] = ins
  self.ready[#self.ready + 1] = ins
  return ins
end

-- Unfolds skeleton `sk` on `token` for task `t`; `k(token)` gets its
-- result, which is the task's when `final`.
function Evaluator:unfold(t, sk, token, k, farm, final)
  if sk.kind == "seq" then
    self:emit(t, "apply", {sk.f}, {token}, k, farm, final)
  elseif sk.kind == "farm" then
    self:unfold(t, sk.w, token, k, sk.workers and sk or farm, final)
  elseif sk.kind == "pipeline" then
    local n = #sk.stages
    local function stage(i, tok)
      if i > n then return k(tok) end
      self:unfold(t, sk.stages[i], tok, function(out) stage(i + 1, out) end, farm, final and i == n)
    end
    stage(1, token)
  elseif sk.kind == "map" then
    self:emit(t, "split", {sk.split}, {token}, function(_, _, parts)
      self:scatter(t, parts, sk.w, function(results)
        self:emit(t, "gather", {sk.merge, #results}, results, k, farm, final)
      end, farm)
    end, farm)
  elseif sk.kind == "dc" then
    self:emit(t, "dc", {sk.trivial, sk.solve, sk.divide}, {token}, function(out, how, parts)
      if how == "solved" then return k(out) end
      self:scatter(t, parts, sk, function(results)
        self:emit(t, "gather", {sk.combine, #results}, results, k, farm, final)
      end, farm)
    end, farm, final)
  end
end

-- Runs `sk` on every part (tokens), then `k(list of result tokens)`.
function Evaluator:scatter(t, parts, sk, k, farm)
  local results, left = {}, #parts
  if left == 0 then return k(results) end
  for i, part in ipairs(parts) do
    self:unfold(t, sk, part, function(out)
      results[i] = out
      left = left - 1
      if left == 0 then k(results) end
    end, farm)
  end
end

-- Placement and load balancing: synodic.skel.balance.
Evaluator.place = balance.place
Evaluator.has_room = balance.has_room

-- Inputs whose node was lost are made again from their lineage; true when
-- all of `ins`'s inputs are there.
function Evaluator:inputs_ready(ins)
  local ok = true
  for _, tok in ipairs(ins.inputs) do
    if not tok.ready then
      ok = false
      self:recompute(tok)
    end
  end
  return ok
end

function Evaluator:recompute(tok)
  local p = tok.producer
  if p.state ~= "done" then return end -- already running again
  p.state, p.refresh = "ready", true
  self.ready[#self.ready + 1] = p
end

-- Dispatches what can go: instructions under way first, then new tasks.
function Evaluator:dispatch()
  self:start_last_tasks()
  while true do
    local sent = false
    local i = 1
    while i <= #self.ready and self:has_room() do
      local ins = self.ready[i]
      local node = ins.kind ~= "fetch" and self:inputs_ready(ins) and self:place(ins)
      if node then
        table.remove(self.ready, i)
        sent = self:send(ins, node) or sent
      else
        i = i + 1
      end
    end
    if self.waiting_head > self.waiting_tail or not self:has_room() then return end
    if #self.ready > 0 and not sent then
      -- Start a new task only if nothing under way can use the room.
      if #self.ready >= #self.order * self.max then return end
    end
    self:start_task()
  end
end

function Evaluator:start_task()
  local t = self.waiting[self.waiting_head]
  self.waiting[self.waiting_head] = nil
  self.waiting_head = self.waiting_head + 1
  self.started_tasks = self.started_tasks + 1
  self:unfold(t, self.program, value_token(t.input), function(out) self:deliver(t, out) end, nil, true)
end

-- Near the end (no more tasks waiting than the nodes have room for), the
-- waiting tasks start at once, ahead of the work under way: their first
-- stages then overlap with the others' later ones, instead of the last
-- task's last stage running alone while the other workers idle.
function Evaluator:start_last_tasks()
  local left = self.waiting_tail - self.waiting_head + 1
  if left <= 0 then return end
  local room = 0
  for _, n in pairs(self.nodes) do
    if n.alive then room = room + n.limit end
  end
  if left > room then return end
  local before = #self.ready
  while self.waiting_head <= self.waiting_tail do self:start_task() end
  local new = table.move(self.ready, before + 1, #self.ready, 1, {})
  table.move(self.ready, 1, before, #new + 1)
  table.move(new, 1, #new, 1, self.ready)
end

function Evaluator:send(ins, node)
  local args = {}
  for _, a in ipairs(ins.args) do args[#args + 1] = a end
  for _, tok in ipairs(ins.inputs) do
    if tok.future then args[#args + 1] = tok.future else args[#args + 1] = tok.value end
  end
  local ok, fut, bytes = pcall(s._submit, node.name, self.me, {self.id, ins.id}, runner, ins.kind, ins.final or false, table.unpack(args, 1, #ins.args + #ins.inputs))
  if not ok then
    -- The node left s.nodes() before its nodedown reached this process:
    -- it is lost all the same, and the instruction waits for another.
    if type(fut) == "string" and (fut:match("no such node") or fut:match("node lost")) then
      self.ready[#self.ready + 1] = ins
      self:lost(node.name)
      return false
    end
    error(fut, 0)
  end
  ins.future, ins.node, ins.state = fut, node, "running"
  node.in_flight = node.in_flight + 1
  node.bytes_caller = node.bytes_caller + bytes
  self:count_farm(ins, 1)
  self:record(node)
  return true
end

function Evaluator:count_farm(ins, delta)
  if ins.farm then self.farms[ins.farm] = (self.farms[ins.farm] or 0) + delta end
end

-- Completion --------------------------------------------------------------

-- Brings a future's value to the caller, counting the bytes.
function Evaluator:fetch(fut, node)
  s._fetched()
  local got = table.pack(pcall(fut.get, fut))
  node.bytes_caller = node.bytes_caller + s._fetched()
  return table.unpack(got, 1, got.n)
end

function Evaluator:note(id, ok, load, fetched, efficiency, ...)
  local ins = self.instructions[id]
  if not ins or ins.state ~= "running" then return end -- from before a loss
  local node = ins.node
  node.in_flight = node.in_flight - 1
  node.done = node.done + 1
  node.load = load
  node.bytes_nodes = node.bytes_nodes + fetched
  self:count_farm(ins, -1)
  if self.balance then balance.noted(self, node, efficiency) end
  self:record(node)
  watch.noted(self, node, ins)
  if not ok then
    local err = ...
    local lost = type(err) == "string" and err:match("node lost: (%S+)")
    if lost and self.nodes[lost] then
      self:lost(lost)
      ins.state = "ready"
      self.ready[#self.ready + 1] = ins
      return
    end
    return self:fail(ins.task, err)
  end
  ins.state = "done"
  if ins.task.failed then return end
  local tok = ins.token or {producer = ins}
  tok.future, tok.node, tok.ready = ins.future, node.name, true
  local reply = table.pack(...)
  if ins.final and (ins.kind ~= "dc" or reply[1] == "solved") then
    -- The task's result came with the note.
    local value = reply[ins.kind == "dc" and 2 or 1]
    node.bytes_caller = node.bytes_caller + s._fetched()
    tok.value, tok.future, tok.node = value, nil, nil
  elseif not self.lazy then
    local got = table.pack(self:fetch(ins.future, node))
    if not got[1] then
      local lost = type(got[2]) == "string" and got[2]:match("node lost: (%S+)")
      if lost then self:lost(lost) return self:recompute(tok) end
      return self:fail(ins.task, got[2])
    end
    tok.value, tok.future, tok.node = got[2], nil, nil
  end
  ins.token = tok
  if ins.kind == "split" or ins.kind == "dc" then
    local parts = (ins.kind == "split" and reply[1]) or (reply[1] == "divided" and reply[2]) or nil
    self:part_tokens(ins, parts, node)
    if ins.refresh then ins.refresh = nil return end
    return ins.k(tok, ins.kind == "dc" and reply[1] or nil, ins.parts)
  end
  if ins.refresh then ins.refresh = nil return end
  ins.k(tok)
end

-- The tokens of a split's or divide's parts (made again, the same tokens
-- get the new futures).
function Evaluator:part_tokens(ins, futures, node)
  if not futures then return end
  ins.parts = ins.parts or {}
  for i, fut in ipairs(futures) do
    local tok = ins.parts[i] or {producer = ins}
    ins.parts[i] = tok
    if self.lazy then
      tok.future, tok.node = fut, node.name
    else
      local got = table.pack(self:fetch(fut, node))
      tok.value = got[2]
    end
    tok.ready = true
  end
end

-- A node is lost: what ran there runs again; its results are stale.
function Evaluator:lost(name)
  local node = self.nodes[name]
  if not node or not node.alive then return end
  node.alive, node.in_flight = false, 0
  for _, ins in pairs(self.instructions) do
    if ins.node == node then
      if ins.state == "running" then
        ins.state = "ready"
        self:count_farm(ins, -1)
        self.ready[#self.ready + 1] = ins
      end
      if ins.token and ins.token.node == name then ins.token.ready = false end
      for _, part in ipairs(ins.parts or {}) do
        if part.node == name then part.ready = false end
      end
    end
  end
  local alive = false
  for _, n in pairs(self.nodes) do alive = alive or n.alive end
  if not alive then error("skel: every node of the run was lost", 0) end
end

function Evaluator:deliver(t, tok)
  if t.failed then return end
  if not tok.ready then
    -- The result's node was lost before it was fetched: made again, then fetched.
    self:recompute(tok)
    self:emit(t, "fetch", {}, {tok}, function() end)
    return
  end
  local value
  if tok.future then
    local got = table.pack(self:fetch(tok.future, self.nodes[tok.node]))
    if not got[1] then
      local lost = type(got[2]) == "string" and got[2]:match("node lost: (%S+)")
      if lost then
        self:lost(lost)
        return self:deliver(t, tok)
      end
      return self:fail(t, got[2])
    end
    value = got[2]
  else
    value = tok.value
  end
  self:complete(t, value, nil)
end

function Evaluator:fail(t, err)
  if t.failed or t.done then return end
  t.failed = true
  if self.errors == "raise" then
    self:clear_progress()
    error(("skel: task %d failed: %s"):format(t.index, tostring(err)), 0)
  end
  self:complete(t, nil, err)
end

function Evaluator:complete(t, value, err)
  if t.done then return end
  t.done, t.result, t.error = true, value, err
  t.input = nil
  self.finished = self.finished + 1
  self.completed_tail = self.completed_tail + 1
  self.completed[self.completed_tail] = t.index
  for id, ins in pairs(self.instructions) do
    if ins.task == t then self.instructions[id] = nil end
  end
end

-- Waits for one note (or a node's loss) and acts on it.
function Evaluator:step()
  self:draw_progress()
  local msg = table.pack(s.receive_match(self.filter))
  if msg[1] == "nodedown" then
    self:lost(msg[2])
  else
    self:note(msg[2][2], table.unpack(msg, 3, msg.n))
  end
  self:dispatch()
end

-- Fetch instructions run in the caller: a result made again after a loss.
function Evaluator:run_fetches()
  for i = #self.ready, 1, -1 do
    local ins = self.ready[i]
    if ins.kind == "fetch" and self:inputs_ready(ins) then
      table.remove(self.ready, i)
      self.instructions[ins.id] = nil
      self:deliver(ins.task, ins.inputs[1])
    end
  end
end

function Evaluator:busy()
  return self.finished < self.added
end

-- Results in the order they complete: index, result (and error, when
-- errors = "return").
function Evaluator:results()
  return function()
    while true do
      local i = self.completed[self.completed_head]
      if i then
        self.completed[self.completed_head] = nil
        self.completed_head = self.completed_head + 1
        local t = self.tasks[i]
        self.tasks[i] = nil
        return i, t.result, t.error
      end
      if not self:busy() then
        self:clear_progress()
        watch.ended(self)
        return nil
      end
      self:run_fetches()
      if self.completed[self.completed_head] == nil then self:step() end
    end
  end
end

-- Per node: tasks done, in flight, bytes between the caller and the node,
-- bytes the node received from other nodes; and its in-flight limit.
function Evaluator:stats()
  local out = {}
  for name, n in pairs(self.nodes) do
    out[name] = {done = n.done, in_flight = n.in_flight, bytes_caller = n.bytes_caller, bytes_nodes = n.bytes_nodes, limit = n.limit, alive = n.alive}
  end
  return out
end

-- With opts.trace: every change of a node's in-flight count or limit, as
-- {time, node, in_flight, limit, done}.
function Evaluator:history()
  return self.trace
end

function Evaluator:record(node)
  if self.trace then
    self.trace[#self.trace + 1] = {s.clock() - self.started, node.name, node.in_flight, node.limit, node.done}
  end
end

-- Progress bar (only on a terminal) ----------------------------------------

function Evaluator:draw_progress()
  if not self.progress then return end
  local now = s.clock()
  if now - self.drawn < 0.1 then return end
  self.drawn, self.shown = now, true
  local done, all = self.finished, self.added
  local elapsed = now - self.started
  local rate = elapsed > 0 and done / elapsed or 0
  local eta = rate > 0 and (all - done) / rate or 0
  local width = 30
  local filled = all > 0 and math.floor(width * done / all) or 0
  io.stderr:write(("\r[%s%s] %d/%d tasks  %.1f/s  %ds left "):format(("#"):rep(filled), ("."):rep(width - filled), done, all, rate, math.ceil(eta)))
  io.stderr:flush()
end

function Evaluator:clear_progress()
  if self.progress and self.shown then
    io.stderr:write("\r" .. (" "):rep(70) .. "\r")
    io.stderr:flush()
  end
end

-- skel.run(program, tasks [, opts]): the results in task order; with
-- opts.errors = "return", failed tasks leave nil and their error in a
-- second list.
function M.run(program, tasks, opts)
  if type(tasks) ~= "table" then error("bad argument #2 to 'run' (list of tasks expected, got " .. type(tasks) .. ")", 2) end
  local ev = M.evaluator(program, opts)
  for i = 1, #tasks do ev:add_task(tasks[i]) end
  local results, errors = {}, {}
  for i, r, e in ev:results() do results[i], errors[i] = r, e end
  if ev.errors == "return" then return results, errors end
  return results
end

return M
