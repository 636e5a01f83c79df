-- synodic-args: --workers 2
-- Skeletons on one node (SPEC §6): each constructor, nested freely;
-- functions stand for seq; run returns results in task order; the
-- streaming evaluator gives them as they complete and takes tasks while it
-- runs; lookahead, lazy binding and load balancing can each be turned
-- off and change no result; lookahead and farm workers bound what is in
-- flight; a failing task ends the run naming its index, or is returned;
-- bad arguments say what is wrong.
local s = require "synodic"
local skel = require "synodic.skel"

local function sq(x) return x * x end
local function inc(x) return x + 1 end
local function range(n) local t = {} for i = 1, n do t[i] = i end return t end
local function sum(list) local n = 0 for _, v in ipairs(list) do n = n + v end return n end
local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- Each skeleton, and nesting.
assert(same(skel.run(skel.seq(sq), {1, 2, 3}), {1, 4, 9}))
assert(same(skel.run(skel.pipeline(sq, inc, skel.seq(sq)), {1, 2, 3}), {4, 25, 100}))
assert(same(skel.run(skel.farm(inc), range(20)), (function() local t = {} for i = 1, 20 do t[i] = i + 1 end return t end)()))
local squares = skel.map(range, sq, sum)
assert(same(skel.run(squares, {1, 2, 3, 4}), {1, 5, 14, 30}))
local fib = skel.dc(function(n) return n < 2 end, function(n) return n end,
  function(n) return {n - 1, n - 2} end, function(r) return r[1] + r[2] end)
assert(same(skel.run(fib, {0, 1, 10, 15}), {0, 1, 55, 610}))
local nested = skel.farm(skel.pipeline(inc, skel.map(range, skel.pipeline(sq, inc), sum), skel.dc(
  function(n) return n < 10 end, function(n) return n end,
  function(n) return {n // 2, n - n // 2} end, function(r) return r[1] + r[2] end)))
-- inc, then sum over 1..n+1 of (i^2 + 1), then split and re-added: the same number.
local function expected(x) local n = x + 1 local t = 0 for i = 1, n do t = t + i * i + 1 end return t end
local got = skel.run(nested, range(8))
for i = 1, 8 do assert(got[i] == expected(i), ("nested task %d: %s"):format(i, tostring(got[i]))) end
assert(#skel.run(squares, {}) == 0, "no tasks, no results")
assert(same(skel.run(skel.map(function() return {} end, sq, function(r, n) return n end), {7}), {0}), "a split into no parts")

-- Results in task order, whatever order tasks end in.
local slow_first = skel.run(function(x) require("synodic").sleep((6 - x) * 0.01) return x end, range(5))
assert(same(slow_first, range(5)))

-- The streaming evaluator: results as they complete; tasks added meanwhile.
local ev = skel.evaluator(skel.pipeline(sq, inc))
for i = 1, 5 do ev:add_task(i) end
local inputs, seen, count = range(5), {}, 0
for i, r in ev:results() do
  assert(r == inputs[i] ^ 2 + 1 and not seen[i])
  seen[i], count = true, count + 1
  if count == 3 then inputs[ev:add_task(10)] = 10 end
end
assert(count == 6 and seen[6], "a task added while results came was run")
local st = ev:stats()[s.node()]
assert(st.done >= 12 and st.in_flight == 0 and st.bytes_caller > 0 and st.bytes_nodes == 0)

-- Each optimisation off: the same results.
for _, opts in ipairs({{lookahead = false}, {lazy = false}, {balance = false}, {lookahead = false, lazy = false, balance = false}}) do
  assert(same(skel.run(nested, range(8), opts), got))
  assert(same(skel.run(fib, {10, 12}, opts), {55, 144}))
end

-- Lookahead and farm workers bound what is in flight.
local function most_in_flight(program, opts)
  opts.trace = true
  local e = skel.evaluator(program, opts)
  for i = 1, 12 do e:add_task(i) end
  for _ in e:results() do end
  local most = 0
  for _, h in ipairs(e:history()) do most = math.max(most, h[3]) end
  return most
end
local napping = function(x) require("synodic").sleep(0.005) return x end
assert(most_in_flight(napping, {lookahead = false}) == 1)
local m = most_in_flight(napping, {lookahead = {min = 1, max = 3}})
assert(m >= 2 and m <= 3, m)
assert(most_in_flight(skel.farm(napping, {workers = 2}), {}) <= 2)

-- Errors: the run ends naming the task, or errors are returned.
local picky = function(x) if x == 3 then error("three is bad") end return x end
local ok, err = pcall(skel.run, picky, range(5))
assert(not ok and err:find("skel: task 3 failed: ", 1, true) and err:find("three is bad", 1, true), err)
local results, errors = skel.run(picky, range(5), {errors = "return"})
assert(results[2] == 2 and results[3] == nil and errors[3]:find("three is bad", 1, true) and errors[4] == nil)

-- Bad arguments.
local function fails(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok and err:find(pattern, 1, true), err)
end
fails("bad argument #1 to 'seq' (function expected, got number)", skel.seq, 42)
fails("bad argument #2 to 'pipeline' (skeleton or function expected, got string)", skel.pipeline, sq, "x")
fails("bad argument #3 to 'map' (function expected, got nil)", skel.map, range, sq)
fails("farm: workers must be a positive integer", skel.farm, sq, {workers = 0})
fails("skel: lookahead needs integers 1 <= min <= max", skel.evaluator, sq, {lookahead = {min = 3, max = 2}})
fails("skel: no such node: nowhere@nohost", skel.evaluator, sq, {nodes = {"nowhere@nohost"}})
fails("bad argument #2 to 'run' (list of tasks expected, got number)", skel.run, sq, 5)
fails("map: split must return a list of parts, got number", skel.run, skel.map(function() return 5 end, sq, sum), {1})
print("skel ok")
