-- synodic.dashboard.data: what the dashboard shows, gathered from every
-- node when asked (nothing is sampled while nobody asks), as Lua tables
-- ready for JSON (`/api/...`) and as Prometheus text (`/metrics`).
--
-- Each node computes its own part with synodic.control (its top
-- processes, its spaces, its figures), so a page over 100,000 processes
-- moves only the top ones. Pids are shown as this node prints them; the
-- same text names them back (kill, inspect).

local s = require "synodic"
local gather = require "synodic.gather"

local M = {}

-- JSON ------------------------------------------------------------------------

-- Marks a table to encode as an array even when it is empty.
local ARRAY = {}
function M.array(t) return setmetatable(t or {}, ARRAY) end

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function quote(text)
  return '"' .. text:gsub('[%c"\\]', function(c) return ESCAPES[c] or string.format("\\u%04x", c:byte()) end) .. '"'
end

local function encode(v, out)
  local t = type(v)
  if v == nil then out[#out + 1] = "null"
  elseif t == "boolean" then out[#out + 1] = tostring(v)
  elseif t == "number" then
    if math.type(v) == "integer" then out[#out + 1] = tostring(v)
    elseif v ~= v or v == math.huge or v == -math.huge then out[#out + 1] = "null"
    else out[#out + 1] = string.format("%.6g", v) end
  elseif t == "string" then out[#out + 1] = quote(v)
  elseif t == "table" and (getmetatable(v) == ARRAY or #v > 0) then
    out[#out + 1] = "["
    for i = 1, #v do
      if i > 1 then out[#out + 1] = "," end
      encode(v[i], out)
    end
    out[#out + 1] = "]"
  elseif t == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    out[#out + 1] = "{"
    for i, k in ipairs(keys) do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = quote(k) .. ":"
      encode(v[k], out)
    end
    out[#out + 1] = "}"
  else out[#out + 1] = quote(tostring(v)) end
end

function M.json(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
end

-- Views -----------------------------------------------------------------------

local function on_nodes(f, ...) return gather.on_nodes(s.nodes(), 5, f, ...) end

-- What a field of a tuple looks like in a page.
local function shown(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

-- A node's state in membership, as the serving node sees it: "up" (live,
-- a member of the gossip, linked), "joining" (a member not live yet),
-- "suspected" (live, but the gossip has lost it), or what it is of the three.
local function membership_state(m)
  if m.live and m.member and m.linked then return "up" end
  if m.member and not m.live then return "joining" end
  if m.live and not m.member then return "suspected" end
  local parts = {}
  for _, k in ipairs { "live", "member", "linked" } do if m[k] then parts[#parts + 1] = k end end
  return table.concat(parts, ", ")
end

-- Every node's figures, and its state in membership.
function M.nodes()
  local list, views = M.array(), {}
  for _, at in ipairs(on_nodes(function() return require("synodic.control").node_stats() end)) do
    local n = { node = at.node, up = at.ok, time = s.clock() }
    if at.ok then
      for k, v in pairs(at.value) do n[k] = v end
      n.links, n.membership = M.array(n.links), M.array(n.membership)
    else
      n.error = tostring(at.value)
    end
    list[#list + 1] = n
    if at.node == s.node() and at.ok then
      for _, m in ipairs(n.membership) do views[m.node] = m end
    end
  end
  local shown = {}
  for _, n in ipairs(list) do
    shown[n.node] = true
    n.state = views[n.node] and membership_state(views[n.node]) or (n.up and "up" or "no answer")
  end
  -- Nodes the gossip knows that are not live (yet) have no figures.
  for name, m in pairs(views) do
    if not shown[name] then list[#list + 1] = { node = name, up = false, state = membership_state(m), time = s.clock() } end
  end
  return list
end

local SORTS = { cpu = true, memory = true, mailbox = true }

-- The cluster's top processes by `by`: {total =, processes = {...}}, from
-- `offset` (0-based), at most `limit`.
function M.processes(by, limit, offset)
  by = SORTS[by] and by or "cpu"
  limit, offset = math.max(1, math.min(limit or 50, 1000)), math.max(0, offset or 0)
  local all, total = {}, 0
  for _, at in ipairs(on_nodes(function(n, by)
    local list, count = require("synodic.control").processes(n, by)
    return { list = list, count = count }
  end, offset + limit, by)) do
    if at.ok then
      total = total + at.value.count
      for _, p in ipairs(at.value.list) do
        p.node, p.raw, p.pid, p.names = at.node, p.pid, tostring(p.pid), M.array(p.names)
        all[#all + 1] = p
      end
    end
  end
  table.sort(all, function(a, b)
    if a[by] ~= b[by] then return a[by] > b[by] end
    if a.node ~= b.node then return a.node < b.node end
    return a.pid < b.pid
  end)
  local page = M.array()
  for i = offset + 1, math.min(#all, offset + limit) do page[#page + 1] = all[i] end
  M.current_functions(page)
  return { total = total, by = by, offset = offset, processes = page }
end

-- Sets `fn` of each listed process: where it is now (the first Lua line of
-- its stack), asked of the processes of the page only, each node its own,
-- half a second at most.
function M.current_functions(list)
  local by_node, nodes = {}, {}
  for _, p in ipairs(list) do
    if not by_node[p.node] then by_node[p.node] = {}; nodes[#nodes + 1] = p.node end
    table.insert(by_node[p.node], p.raw)
  end
  local found = {}
  for _, node in ipairs(nodes) do
    local at = gather.on_nodes({ node }, 2, function(pids)
      local s, control = require "synodic", require "synodic.control"
      local asked, out = 0, {}
      for _, p in ipairs(pids) do
        if p ~= s.self() and control.probe(p) then asked = asked + 1 end
      end
      local deadline = s.clock() + 0.5
      for _ = 1, asked do
        local left = deadline - s.clock()
        if left <= 0 then break end
        local tag, pid, text = s.receive_match("probe", left)
        if not tag then break end
        local trace = text:match("stack traceback:\n(.*)$") or ""
        for line in trace:gmatch("[^\n]+") do
          line = line:match("^%s*(.-)%s*$")
          if not line:match("^%[C%]") then out[#out + 1] = { pid, line }; break end
        end
      end
      return out
    end, by_node[node])[1]
    if at.ok then
      for _, pf in ipairs(at.value) do found[node .. " " .. tostring(pf[1])] = pf[2] end
    end
  end
  for _, p in ipairs(list) do p.fn, p.raw = found[p.node .. " " .. p.pid] or "", nil end
end

-- `f(...)` run on the node named `node` (from the page): its value, or
-- nil and why.
local function on_node(node, f, ...)
  if type(node) ~= "string" then return nil, "which node? (node=NODE is missing)" end
  local at = gather.on_nodes({ node }, 5, f, ...)[1]
  if not at.ok then return nil, tostring(at.value) end
  return at.value
end

-- The pid the page wrote as `text` (as this node prints it; a pid value
-- carries its node across, the text would not), or nil and why.
local function pid_of(text)
  local p = require("synodic.control").pid(text or "")
  if not p then return nil, "no pid " .. tostring(text) end
  return p
end

-- The stack of `pid` (text) on `node`, or nil and why.
function M.stack(node, pid)
  local p, why = pid_of(pid)
  if not p then return nil, why end
  local text
  text, why = on_node(node, function(p)
    local s, control = require "synodic", require "synodic.control"
    if not control.probe(p) then return nil end
    local _, _, text = s.receive_match(function(tag, q) return tag == "probe" and q == p end, 3)
    return text
  end, p)
  if not text then return nil, why or ("no process " .. pid .. " on " .. node) end
  return text
end

-- Every space of the cluster, with its classes and waiters.
function M.spaces()
  local list = M.array()
  for _, at in ipairs(on_nodes(function() return require("synodic.control").spaces() end)) do
    for _, sp in ipairs(at.ok and at.value or {}) do
      sp.node = at.node
      sp.name = sp.name or ("private space " .. sp.id)
      for _, c in ipairs(sp.classes) do c.first = c.first ~= nil and shown(c.first) or "?" end
      for _, w in ipairs(sp.waiters) do w.pid = tostring(w.pid) end
      sp.classes, sp.waiters = M.array(sp.classes), M.array(sp.waiters)
      list[#list + 1] = sp
    end
  end
  return list
end

-- A string as `%q` wrote it, read back without running anything (the text
-- comes from the page: a reader with no session); nil if it is not one.
local ESCAPED = { n = "\n", r = "\r", t = "\t", ["\n"] = "\n" }
local function unquote(text)
  if #text < 2 or text:sub(1, 1) ~= '"' or text:sub(-1) ~= '"' then return nil end
  local out, i, last = {}, 2, #text - 1
  while i <= last do
    local c = text:sub(i, i)
    if c == '"' then return nil end
    if c == "\\" then
      local digits = text:match("^%d%d?%d?", i + 1)
      if digits then
        out[#out + 1], i = string.char(tonumber(digits) % 256), i + 1 + #digits
      else
        local e = text:sub(i + 1, i + 1)
        out[#out + 1], i = ESCAPED[e] or e, i + 2
      end
    else
      out[#out + 1], i = c, i + 1
    end
  end
  return table.concat(out)
end

-- Up to `max` (at most 1,000) tuples of a class (`first` as the page shows
-- it: a quoted string, a number, true/false, or "?" for the other first fields).
function M.tuples(node, id, arity, first, max)
  local value = first
  if first == "?" then value = nil
  elseif first and first:sub(1, 1) == '"' then value = unquote(first)
  elseif first == "true" or first == "false" then value = first == "true"
  elseif tonumber(first) then value = math.tointeger(tonumber(first)) or tonumber(first) end
  if value == nil and first ~= "?" then return nil, "no class " .. tostring(first) end
  max = math.max(1, math.min(math.tointeger(max) or 100, 1000))
  local found, why = on_node(node, function(...) return require("synodic.control").tuples(...) end, id, arity, value, max)
  if not found then return nil, why end
  local list = M.array()
  for _, t in ipairs(found) do
    local fields = {}
    for i = 1, #t do fields[i] = shown(t[i]) end
    list[#list + 1] = "(" .. table.concat(fields, ", ") .. ")"
  end
  return list
end

-- The processes of every node that said what they are (skeleton runs,
-- entities), each with what it says of itself: {skeletons = {...},
-- entities = {...}}, each {pid =, node =, stats =}. At most `max` (default
-- 200) per node are asked, each given a second to answer.
function M.runs(max)
  max = math.max(1, math.min(math.tointeger(max) or 200, 1000))
  local out = { skeletons = M.array(), entities = M.array() }
  for _, at in ipairs(on_nodes(function(max)
    local s, control = require "synodic", require "synodic.control"
    local asked, found = {}, {}
    for _, r in ipairs(control.roles()) do
      if #asked >= max then break end
      if control.probe(r.pid) then asked[#asked + 1] = r end
    end
    local deadline = s.clock() + 1
    for _ = 1, #asked do
      local left = deadline - s.clock()
      if left <= 0 then break end
      local tag, pid, text = s.receive_match("probe", left)
      if not tag then break end
      found[tostring(pid)] = text:match("\nstats: (.*)$") or ""
    end
    local list = {}
    for _, r in ipairs(asked) do list[#list + 1] = { pid = tostring(r.pid), role = r.role, stats = found[tostring(r.pid)] or "(no answer)" } end
    return list
  end, max)) do
    for _, r in ipairs(at.ok and at.value or {}) do
      r.node = at.node
      local list = r.role == "skeleton" and out.skeletons or out.entities
      list[#list + 1] = r
    end
  end
  return out
end

-- The tuple scope's hold on every node: `what` ("view", "stop",
-- "continue", "break") on each; "step" on the node holding the oldest
-- operation (or `pid`'s, on `node`).
function M.scope(what, arg, node)
  if what == "step" then
    local view = M.scope("view")
    local first = view.held[1]
    if node == nil and first then node, arg = first.node, first.pid end
    if node == nil then return view end
    local p
    if arg ~= nil then
      local why
      p, why = pid_of(arg)
      if not p then return nil, why end
    end
    local _, why = on_node(node, function(p) return require("synodic.control").scope("step", p) or true end, p)
    if why then return nil, why end
    return M.scope("view")
  end
  local out = { stopped = false, held = M.array(), steps = 0, nodes = M.array() }
  for _, at in ipairs(on_nodes(function(what, arg) return require("synodic.control").scope(what, arg) end, what, arg)) do
    if at.ok then
      local v = at.value
      out.stopped = out.stopped or v.stopped
      out.condition = out.condition or v.condition
      out.steps = out.steps + v.steps
      for _, h in ipairs(v.held) do
        h.node, h.pid = at.node, tostring(h.pid)
        out.held[#out.held + 1] = h
      end
      if v.hit then
        v.hit.node, v.hit.pid = at.node, tostring(v.hit.pid)
        out.hit = v.hit
      end
      out.nodes[#out.nodes + 1] = { node = at.node, stopped = v.stopped }
    end
  end
  -- A break met on one node stops the others too (as the page looks, so
  -- within a refresh).
  if what == "view" and out.hit then
    local running = {}
    for _, n in ipairs(out.nodes) do
      if not n.stopped then running[#running + 1] = n.node; n.stopped = true end
    end
    if #running > 0 then gather.on_nodes(running, 5, function() return require("synodic.control").scope("stop") end) end
  end
  return out
end

-- Prometheus -----------------------------------------------------------------

local function label(v) return '"' .. tostring(v):gsub('[\\"\n]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" }) .. '"' end

-- The cluster's metrics in Prometheus's text format (counters end in
-- _total; seconds and bytes as base units).
function M.metrics()
  local families = {
    { "synodic_node_up", "gauge", "1 when the node answered the dashboard" },
    { "synodic_processes", "gauge", "Live processes" },
    { "synodic_resident_memory_bytes", "gauge", "Resident memory of the node's OS process" },
    { "synodic_cpu_seconds_total", "counter", "Processor time of the node's OS process" },
    { "synodic_messages_delivered_total", "counter", "Messages delivered to processes of the node" },
    { "synodic_load", "gauge", "Live processes per worker thread" },
    { "synodic_pool_tasks_queued", "gauge", "Tasks waiting in the node's task pool" },
    { "synodic_link_sent_bytes_total", "counter", "Bytes written to a linked node" },
    { "synodic_link_received_bytes_total", "counter", "Bytes read from a linked node" },
    { "synodic_space_tuples", "gauge", "Tuples held by a tuple space" },
    { "synodic_space_waiting", "gauge", "Processes blocked on a tuple space" },
    { "synodic_space_operations_total", "counter", "Tuple operations done on a tuple space" },
  }
  local rows = {}
  for _, f in ipairs(families) do rows[f[1]] = {} end
  local function add(name, labels, value) local r = rows[name]; r[#r + 1] = name .. "{" .. labels .. "} " .. tostring(value) end
  for _, n in ipairs(M.nodes()) do
    local l = "node=" .. label(n.node)
    add("synodic_node_up", l, n.up and 1 or 0)
    if n.up then
      add("synodic_processes", l, n.processes)
      add("synodic_resident_memory_bytes", l, n.rss)
      add("synodic_cpu_seconds_total", l, string.format("%.3f", n.cpu))
      add("synodic_messages_delivered_total", l, n.messages)
      add("synodic_load", l, string.format("%.3f", n.load / 1000))
      add("synodic_pool_tasks_queued", l, n.pool_queued)
      for _, link in ipairs(n.links) do
        local ll = l .. ",peer=" .. label(link.node)
        add("synodic_link_sent_bytes_total", ll, link.sent)
        add("synodic_link_received_bytes_total", ll, link.received)
      end
    end
  end
  for _, sp in ipairs(M.spaces()) do
    local l = "node=" .. label(sp.node) .. ",space=" .. label(sp.name)
    add("synodic_space_tuples", l, sp.tuples)
    add("synodic_space_waiting", l, sp.waiting)
    for op, n in pairs({ out = sp.outs, take = sp.takes, rd = sp.reads }) do
      add("synodic_space_operations_total", l .. ",op=" .. label(op), n)
    end
  end
  local out = {}
  for _, f in ipairs(families) do
    out[#out + 1] = "# HELP " .. f[1] .. " " .. f[3]
    out[#out + 1] = "# TYPE " .. f[1] .. " " .. f[2]
    table.sort(rows[f[1]])
    for _, r in ipairs(rows[f[1]]) do out[#out + 1] = r end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
