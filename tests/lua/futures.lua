-- synodic-args: --workers 2
-- Futures on one node (SPEC §6): s.async runs f in the node's pool and
-- returns at once; get waits for f's results (all of them), raises f's
-- error again with its message, gives no values on timeout; ready tells
-- without waiting; a future passed to another async is resolved where that
-- task runs; futures cross processes; the pool has as many workers as the
-- node has worker threads, yet tasks that wait for tasks never hold it; a
-- result is freed once no handle to it is left.
local s = require "synodic"
local me = s.self()

-- Results, errors, timeouts, ready.
local f = s.async(function(a, b) return a + b, a * b, nil end, 3, 4)
local sum, product, none = f:get()
assert(sum == 7 and product == 12 and none == nil)
assert(select("#", f:get()) == 3, "every result, nils included")
assert(f:ready() and f:node() == s.node())
assert(tostring(f):match("^future: "), tostring(f))
local bad = s.async(function() error("boom") end)
local ok, err = pcall(bad.get, bad)
assert(not ok and err:match("futures.lua:%d+: boom$"), err)
local tabled = s.async(function() error({code = 42}) end)
ok, err = pcall(tabled.get, tabled)
assert(not ok and type(err) == "table" and err.code == 42, "a non-string error comes back as it was")
local slow = s.async(function() require("synodic").sleep(0.3) return "late" end)
assert(not slow:ready())
assert(select("#", slow:get(0.01)) == 0, "a timeout gives no values")
assert(select("#", slow:get(0)) == 0, "a zero timeout polls")
assert(slow:get() == "late")

-- Bad calls say what is wrong.
ok, err = pcall(s.async, 42)
assert(not ok and err:find("bad argument #1 to 'async' (function expected, got number)", 1, true), err)
ok, err = pcall(s.async_on, "nowhere@nohost", function() end)
assert(not ok and err:find("no such node: nowhere@nohost", 1, true), err)
ok, err = pcall(s.async, function() end, coroutine.create(print))
assert(not ok and err:find("async: cannot send value of type thread (at [2])", 1, true), err)
local unsendable = s.async(function() return coroutine.create(print) end)
ok, err = pcall(unsendable.get, unsendable)
assert(not ok and err:find("the results cannot be sent", 1, true), err)

-- A future as an argument: resolved where the task runs.
local base = s.async(function() return 10 end)
assert(s.async(function(x, y) return x * y end, base, 3):get() == 30)
local failed = s.async(function(x) return x end, bad)
ok, err = pcall(failed.get, failed)
assert(not ok and err:find("boom", 1, true), err)

-- Futures cross processes, and several processes may wait for one.
local shared = s.async(function() require("synodic").sleep(0.05) return "shared" end)
for _ = 1, 3 do
  s.spawn(function(fut, boss) require("synodic").send(boss, "got", fut:get()) end, shared, me)
end
for _ = 1, 3 do
  local tag, value = s.receive(5)
  assert(tag == "got" and value == "shared")
end

-- The pool: at most one worker per worker thread, reused across tasks.
local seen, count = {}, 0
local pids = {}
for i = 1, 200 do pids[i] = s.async(function() return tostring(require("synodic").self()) end) end
for i = 1, 200 do
  local pid = pids[i]:get()
  if not seen[pid] then seen[pid], count = true, count + 1 end
end
assert(count >= 1 and count <= 2, count .. " pool workers for 2 worker threads")

-- Tasks that wait for tasks queued behind them do not hold the pool.
local outer = {}
for i = 1, 4 do
  outer[i] = s.async(function(i)
    local s = require "synodic"
    return s.async(function(i) return i * 2 end, i):get() + 1
  end, i)
end
for i = 1, 4 do assert(outer[i]:get(5) == i * 2 + 1, "a task waiting for a task held the pool") end

-- A result is freed once no handle to it is left.
collectgarbage()
local held = s._futures_held()
local kept = {}
for i = 1, 50 do
  kept[i] = s.async(function() return require("synodic.buffer").new(1 << 16, "u8") end)
  kept[i]:get()
end
assert(s._futures_held() >= 50)
kept = nil
collectgarbage()
-- (Pool workers may drop handles of earlier tests meanwhile: at most as many.)
assert(s._futures_held() <= held, "results left: " .. s._futures_held() - held)
-- One nobody holds a handle to is dropped when it comes.
held = s._futures_held()
s.async(function() require("synodic").sleep(0.02) return "unwanted" end)
collectgarbage()
s.sleep(0.1)
assert(s._futures_held() <= held, "an unwanted result was kept")
print("futures ok")
