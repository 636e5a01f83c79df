-- synodic.repl: what a prompt does with the lines typed at it, shared by
-- the console agents (lualib/console.lua) and `synodic`'s own prompt
-- (lualib/cli.lua). Lines gather until they form a statement (as `lua`'s
-- prompt does: input ending in "<eof>" asks for more); an expression
-- prints its values; values print readably: strings quoted, tables nested
-- to a depth with their keys in order, pids, futures and spaces as they
-- name themselves.
local repl = {}

local MAX_ITEMS = 40

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta < tb end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

local show

local function show_table(t, depth, seen)
  if seen[t] then return "<cycle>" end
  local mt = getmetatable(t)
  if mt and mt.__tostring then return tostring(t) end
  if depth <= 0 then return next(t) == nil and "{}" or "{...}" end
  seen[t] = true
  local parts, n = {}, #t
  for i = 1, math.min(n, MAX_ITEMS) do parts[#parts + 1] = show(t[i], depth - 1, seen) end
  local keys = {}
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, key_order)
  for _, k in ipairs(keys) do
    if #parts >= MAX_ITEMS then break end
    local shown = type(k) == "string" and k:match("^[%a_][%w_]*$") and k or "[" .. show(k, 0, seen) .. "]"
    parts[#parts + 1] = shown .. " = " .. show(t[k], depth - 1, seen)
  end
  if n + #keys > MAX_ITEMS then parts[#parts + 1] = "..." end
  seen[t] = nil
  return "{" .. table.concat(parts, ", ") .. "}"
end

function show(v, depth, seen)
  local t = type(v)
  if t == "string" then return string.format("%q", v):gsub("\\\n", "\\n") end
  if t == "table" then return show_table(v, depth, seen) end
  return tostring(v)
end

--- `v` as a reader would like to see it (tables to `depth` levels, default 3).
function repl.show(v, depth)
  return show(v, depth or 3, {})
end

--- Values as one line: each shown, separated by tabs.
function repl.line(...)
  local parts = table.pack(...)
  for i = 1, parts.n do parts[i] = repl.show(parts[i]) end
  return table.concat(parts, "\t", 1, parts.n)
end

--- The chunk for `code`: an expression's (returning its values) if it is
--- one, else a statement's; or nil, the error, and whether more input
--- could complete it.
function repl.compile(code, chunkname)
  -- An expression's values are packed, not returned by a tail call, so
  -- that an error it raises names the line (error(msg, 2) included).
  if load("return " .. code, chunkname, "t") then
    local chunk = load("local v = table.pack(" .. code .. "\n) return table.unpack(v, 1, v.n)", chunkname, "t")
    if chunk then return chunk end
  end
  local chunk, err
  chunk, err = load(code, chunkname, "t")
  if chunk then return chunk end
  return nil, err, err:sub(-5) == "<eof>"
end

-- The traceback of an error in a typed line, without the prompt's frames.
local function traceback(e)
  if type(e) ~= "string" then e = repl.show(e) end
  local tb = debug.traceback(e, 2)
  return (tb:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
end

--- Runs `chunk`; `out(text)` gets its values' line (if any), `err(text)`
--- its error with a traceback.
function repl.run(chunk, out, err)
  local results = table.pack(xpcall(chunk, traceback))
  if not results[1] then return err(results[2]) end
  if results.n > 1 then out(repl.line(table.unpack(results, 2, results.n))) end
end

--- A prompt's state: lines typed so far of a statement not yet complete.
--- `feed(line)` returns "more" while it waits for the rest, else runs it.
function repl.new(out, err, chunkname)
  local pending
  local self = {}
  function self.feed(line)
    if line == "\24" then -- Ctrl-C at a continuation prompt: drop the statement
      pending = nil
      return
    end
    local code = pending and (pending .. "\n" .. line) or line
    local chunk, e, incomplete = repl.compile(code, chunkname or "=stdin")
    if not chunk and incomplete then
      pending = code
      return "more"
    end
    pending = nil
    if not chunk then return err(e) end
    repl.run(chunk, out, err)
  end
  function self.cancel() pending = nil end
  return self
end

--- The pid printed as `text` ("<0.4.0>"), so a pasted pid names a process.
function repl.pid(text)
  local pid = require("synodic.control").pid(tostring(text))
  if not pid then error("pid: not a pid: " .. tostring(text), 2) end
  return pid
end

return repl
