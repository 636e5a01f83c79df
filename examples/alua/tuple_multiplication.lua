-- Tuple Multiplication (paper §4.2): c[i][j] = f(row i of a, column j of b).
-- One sequential and one parallel skeleton run the same application
-- functions: f is a dot product for matrix multiplication, and a min-plus
-- step for all-pairs shortest paths by repeated squaring. The parallel
-- skeleton deals rows out to agents and collects them by events; both give
-- the same results.
-- usage: synodic run [--nodes 3] examples/alua/tuple_multiplication.lua [n] [agents]
local N = math.tointeger(tonumber(arg[1])) or 24
local AGENTS = math.tointeger(tonumber(arg[2])) or 3
local INF = math.huge

local function transpose(m)
  local t = {}
  for i = 1, #m do
    t[i] = {}
    for j = 1, #m do t[i][j] = m[j][i] end
  end
  return t
end

-- Application code, the same for both skeletons (sent to agents as text).
local matmul_f = [[
  function f(ai, bj)
    local c = 0
    for k = 1, #ai do c = c + ai[k] * bj[k] end
    return c
  end
]]
local paths_f = [[
  function f(ai, bj)
    local c = math.huge
    for k = 1, #ai do
      local via = ai[k] + bj[k]
      if via < c then c = via end
    end
    return c
  end
]]

-- The sequential skeleton.
local function multiply_seq(a, b)
  local c = {}
  for i = 1, #a do
    c[i] = {}
    for j = 1, #b do c[i][j] = f(a[i], b[j]) end
  end
  return c
end

-- The parallel skeleton: each agent gets its rows of a and all of b
-- (as columns); it sends every row of c back as soon as it is computed.
local node_code = [[
  function node(r, s)
    for i = r, s do
      local c = {}
      for j = 1, #column do c[j] = f(row[i], column[j]) end
      alua.send("main", string.format("master_receive(%s, %d)", alua.tostring(c), i))
    end
  end
]]

-- The agents are dealt over every node of the cluster (this one alone when
-- the program runs on one node).
local nodes = require("synodic").nodes()
local procs = alua.spawn(AGENTS, {on = nodes})
print(string.format("%d agents over %d node(s)", #procs, math.min(#procs, #nodes)))
alua.mcast(procs, node_code)

local master_c, master_i, finish
local function multiply_par(a, b, done)
  local bstr = alua.tostring(b)
  local per = math.ceil(#a / #procs)
  for k, id in ipairs(procs) do
    local first, last = (k - 1) * per + 1, math.min(k * per, #a)
    if first <= last then
      local parts = {string.format("column = %s row = {}", bstr)}
      for i = first, last do parts[#parts + 1] = string.format(" row[%d] = %s", i, alua.tostring(a[i])) end
      parts[#parts + 1] = string.format(" node(%d, %d)", first, last)
      alua.send(id, table.concat(parts))
    end
  end
  master_c, master_i, finish = {}, 0, done
end

function master_receive(row, i)
  master_c[i] = row
  master_i = master_i + 1
  if master_i == N then finish(master_c) end
end

-- The problems: a random integer matrix; a random weighted digraph.
math.randomseed(7)
local A, B, G = {}, {}, {}
for i = 1, N do
  A[i], B[i], G[i] = {}, {}, {}
  for j = 1, N do
    A[i][j], B[i][j] = math.random(-9, 9), math.random(-9, 9)
    G[i][j] = (i == j) and 0 or (math.random() < 0.2 and math.random(1, 20) or INF)
  end
end

local function same(x, y)
  for i = 1, N do
    for j = 1, N do
      if x[i][j] ~= y[i][j] then return false end
    end
  end
  return true
end

-- Sequential runs, with f defined here.
load(matmul_f)()
local product_seq = multiply_seq(A, transpose(B))
load(paths_f)()
local paths_seq, m = G, 1
while m < N - 1 do
  paths_seq = multiply_seq(paths_seq, transpose(paths_seq))
  m = 2 * m
end

-- Parallel runs: the same functions, in the agents; all-pairs shortest
-- paths squares again from `finish` until the paths may use every node.
alua.mcast(procs, matmul_f)
multiply_par(A, transpose(B), function(product_par)
  assert(same(product_par, product_seq), "parallel matrix product differs")
  print(string.format("matrix multiplication %dx%d: parallel = sequential (c[1][1] = %d)", N, N, product_par[1][1]))
  alua.mcast(procs, paths_f)
  local m = 1 -- paths so far use at most m edges; as in the sequential loop
  local function square(d)
    m = 2 * m
    if m >= N - 1 then
      assert(same(d, paths_seq), "parallel shortest paths differ")
      local reachable = 0
      for i = 1, N do for j = 1, N do if d[i][j] < INF then reachable = reachable + 1 end end end
      print(string.format("all-pairs shortest paths on %d nodes: parallel = sequential (%d reachable pairs)", N, reachable))
      alua.exit_all()
    else
      multiply_par(d, transpose(d), square)
    end
  end
  multiply_par(G, transpose(G), square)
end)
