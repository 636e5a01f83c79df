-- Parallel LU factorisation with partial pivoting, as in the Linda paper's
-- Linpack port: the master puts the columns of A in the tuple space, workers
-- take the columns dealt to them like cards, the owner of column k finds the
-- pivot and puts it out, every worker reads it (rd) and updates its own
-- columns, and the master collects the factored columns (in). Columns travel
-- as f64 buffers. "blocked" deals and moves groups of columns instead of
-- single ones (the paper's larger aggregates). The result is checked against
-- a sequential factorisation and by its residual. With "spread", the
-- workers are dealt over the nodes of the cluster (the paper's machines A,
-- B, C), the master and its space on this one.
-- usage: synodic run [--nodes K] examples/linda/linpack.lua [order] [workers] [unblocked|blocked] [group] [spread]
local s = require "synodic"
local linda = require "synodic.linda"
local buffer = require "synodic.buffer"

local N = math.tointeger(tonumber(arg[1])) or 1000
local P = math.tointeger(tonumber(arg[2])) or 2
local MODE = arg[3] or "unblocked"
local GROUP = MODE == "blocked" and (math.tointeger(tonumber(arg[4])) or 8) or 1
local NODES = arg[5] == "spread" and s.nodes() or {s.node()}

-- A random matrix, by columns: A[j][i] is row i of column j.
math.randomseed(1000)
local A = {}
for j = 1, N do
  local c = {}
  for i = 1, N do c[i] = math.random() - 0.5 end
  A[j] = c
end

-- Columns travel in groups of GROUP (1 when unblocked); groups are dealt
-- to workers like cards.
local GROUPS = math.ceil(N / GROUP)
local function dealt_to(g) return ((g - 1) % P) + 1 end

-- One buffer holding the columns of group g, taken from cols[j].
local function pack(cols, g)
  local all = {}
  for j = (g - 1) * GROUP + 1, math.min(g * GROUP, N) do
    table.move(cols[j], 1, N, #all + 1, all)
  end
  return buffer.fromtable(all)
end

-- The columns of group g, from its buffer, into cols[j].
local function unpack(b, g, cols)
  local all, at = b:totable(), 1
  for j = (g - 1) * GROUP + 1, math.min(g * GROUP, N) do
    cols[j] = table.move(all, at, at + N - 1, 1, {})
    at = at + N
  end
end

-- The elimination step shared by both versions: apply pivot k to column c.
local function apply(c, k, p, l)
  c[k], c[p] = c[p], c[k]
  local ck = c[k]
  if ck ~= 0 then
    for i = k + 1, N do c[i] = c[i] - l[i] * ck end
  end
end

-- Turns column k into the pivot: swap the largest element up, scale below.
local function pivot(c, k)
  local p, big = k, math.abs(c[k])
  for i = k + 1, N do
    local a = math.abs(c[i])
    if a > big then p, big = i, a end
  end
  c[k], c[p] = c[p], c[k]
  local d = c[k]
  for i = k + 1, N do c[i] = c[i] / d end
  return p
end

local function worker(ts, me)
  -- Take my columns, a group at a time.
  local cols = {}
  for g = 1, GROUPS do
    if dealt_to(g) == me then unpack(select(3, ts:take("col", g, linda.buffer)), g, cols) end
  end
  for k = 1, N do
    if cols[k] then
      local p = pivot(cols[k], k)
      ts:out("pivot", k, p, buffer.fromtable(cols[k]))
    end
    local _, _, p, lb = ts:rd("pivot", k, linda.int, linda.buffer)
    local l = lb:totable()
    for j, c in pairs(cols) do
      if j > k then apply(c, k, p, l) end
    end
  end
  -- Hand the factored columns back, a group at a time.
  for g = 1, GROUPS do
    if dealt_to(g) == me then ts:out("result", g, pack(cols, g)) end
  end
end

local t0 = s.clock()
local ts = linda.new()
for w = 1, P do s.spawn_on(NODES[(w - 1) % #NODES + 1], worker, ts, w) end
for g = 1, GROUPS do ts:out("col", g, pack(A, g)) end
local LU, piv = {}, {}
for g = 1, GROUPS do unpack(select(3, ts:take("result", g, linda.buffer)), g, LU) end
for k = 1, N do piv[k] = select(3, ts:take("pivot", k, linda.int, linda.buffer)) end
local parallel = s.clock() - t0

-- The sequential factorisation, with the same steps.
local t1 = s.clock()
local S = {}
for j = 1, N do S[j] = table.move(A[j], 1, N, 1, {}) end
for k = 1, N do
  local p = pivot(S[k], k)
  assert(p == piv[k], "pivot " .. k .. " differs")
  for j = k + 1, N do apply(S[j], k, p, S[k]) end
end
local sequential = s.clock() - t1

-- Same factors; then, as Linpack does, solve A x = b with them (b made so
-- that x is all ones) and check the normalised residual |A x - b| / (n |A| |x| eps).
local worst_diff = 0
for j = 1, N do
  for i = 1, N do worst_diff = math.max(worst_diff, math.abs(LU[j][i] - S[j][i])) end
end
assert(worst_diff == 0, "parallel factors differ from the sequential ones")
local b, norm = {}, 0
for i = 1, N do b[i] = 0 end
for j = 1, N do
  for i = 1, N do
    b[i] = b[i] + A[j][i]
    norm = math.max(norm, math.abs(A[j][i]))
  end
end
local x = table.move(b, 1, N, 1, {})
for k = 1, N - 1 do -- forward: the interchanges and multipliers, in order
  local p = piv[k]
  local t = x[p]
  x[p], x[k] = x[k], t
  local l = LU[k]
  for i = k + 1, N do x[i] = x[i] - t * l[i] end
end
for k = N, 1, -1 do -- back substitution with U
  local u = LU[k]
  x[k] = x[k] / u[k]
  local t = x[k]
  for i = 1, k - 1 do x[i] = x[i] - t * u[i] end
end
local r, xmax = 0, 0
for i = 1, N do xmax = math.max(xmax, math.abs(x[i])) end
local ax = {}
for i = 1, N do ax[i] = -b[i] end
for j = 1, N do
  local xj, c = x[j], A[j]
  for i = 1, N do ax[i] = ax[i] + c[i] * xj end
end
for i = 1, N do r = math.max(r, math.abs(ax[i])) end
local residual = r / (N * norm * xmax * 2.220446049250313e-16)
assert(residual < 100, "normalised residual too large: " .. residual)
print(string.format("LU %s order %d, %d workers on %d node%s: same factors as sequential, normalised residual %.2f; %.2fs parallel, %.2fs sequential",
  MODE, N, P, #NODES, #NODES == 1 and "" or "s", residual, parallel, sequential))
