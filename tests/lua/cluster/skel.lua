-- synodic-args: --nodes 3 --workers 2
-- Skeletons over three nodes (SPEC §6): work goes to every node; with lazy
-- binding the buffers a pipeline passes between its stages never come to
-- the caller (stats: bytes between caller and nodes stay small), without
-- it they all do; a node killed in the middle of a run loses nothing: its
-- tasks run again elsewhere, the results that lived only there are
-- computed again from their inputs, and every result arrives once.
local s = require "synodic"
local skel = require "synodic.skel"
local testkit = require "testkit"

local SIZE = 256 * 1024
local N = 24
local tasks = {}
for i = 1, N do tasks[i] = i end

local make = function(x)
  local b = require("synodic.buffer").new(256 * 1024, "u8")
  b[1] = x
  return b
end
local double = function(b)
  local c = require("synodic.buffer").new(#b, "u8")
  c[1] = b[1] * 2
  return c
end
local first = function(b) return b[1] end
local program = skel.pipeline(make, double, first)

-- Runs the tasks through `ev`: every result right, and once.
local function evaluate(ev)
  for i = 1, N do ev:add_task(tasks[i]) end
  local results, count = {}, 0
  for i, r in ev:results() do
    assert(results[i] == nil, "task " .. i .. " came twice")
    results[i], count = r, count + 1
  end
  assert(count == N)
  for i = 1, N do assert(results[i] == 2 * i, ("task %d: %s"):format(i, tostring(results[i]))) end
end

local function run(opts)
  local ev = skel.evaluator(program, opts)
  evaluate(ev)
  local caller, busy = 0, 0
  for _, st in pairs(ev:stats()) do
    caller = caller + st.bytes_caller
    if st.done > 0 then busy = busy + 1 end
  end
  return caller, busy
end

local lazy, busy = run({})
assert(busy == 3, "every node computed: " .. busy)
assert(lazy < N * SIZE / 8, "lazy binding kept the buffers off the caller: " .. lazy)
local plain = run({lazy = false})
assert(plain > N * 2 * SIZE, "without it every buffer came back: " .. plain)

-- A node killed in the middle of a run: at its first second stage, with
-- first stages done there whose results must be computed again.
local victim = testkit.other_nodes()[1]
local doomed = skel.pipeline(make, function(b)
  local s = require "synodic"
  if s.node() == victim then os.exit(3) end
  return b
end, double, first)
local ev = skel.evaluator(doomed, {lookahead = {min = 2, max = 4}})
evaluate(ev)
local done = 0
for _, st in pairs(ev:stats()) do done = done + st.done end
assert(not ev:stats()[victim].alive)
assert(done > 4 * N, "results that lived on the lost node were computed again: " .. done)

-- A node that leaves s.nodes() before the evaluator has heard its nodedown
-- (between two of its checks) is lost like any other, not an error.
local second = testkit.other_nodes()[1]
local ev2 = skel.evaluator(program, {})
local killer = s.spawn_on(second, function() require("synodic").receive() os.exit(3) end)
s.send(killer, "die")
while #s.nodes() > 1 do s.sleep(0.01) end
evaluate(ev2)
assert(not ev2:stats()[second].alive)
print("skel ok")
