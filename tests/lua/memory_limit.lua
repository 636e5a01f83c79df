-- A process's memory limit (s.spawn_opt{max_memory = bytes}): a process
-- over it ends alone, with reason "memory limit", whatever protects it; the
-- messages waiting in its mailbox count against it; memory a program sizes
-- outside Lua's own allocations (buffers, huge messages) is bounded too and
-- fails as an error.
local s = require "synodic"
local buffer = require "synodic.buffer"
local me = s.self()
local MB = 1 << 20

local function ends_over_limit(body, what)
  local p = s.spawn_opt({max_memory = MB}, body)
  s.monitor(p)
  local tag, who, reason = s.receive_match("DOWN")
  assert(who == p and reason == "memory limit", what .. ": " .. tostring(reason))
end

-- Growing past the limit, with or without pcall.
ends_over_limit(function()
  local t = {}
  for i = 1, 1e7 do t[i] = string.rep("x", 100) .. i end
end, "a growing table")
ends_over_limit(function()
  local t = {}
  pcall(function() for i = 1, 1e7 do t[i] = {i} end end)
  s.send(me, "went on after pcall")
end, "under pcall")
-- Buffers count.
ends_over_limit(function()
  local ok = pcall(buffer.new, 4 * MB, "u8")
  -- The error is raised; the process ends at its next yield.
  s.sleep(0)
  s.send(me, "went on with a buffer", ok)
end, "a buffer")
-- Messages waiting in the mailbox count: a process that does not read.
local flooded = s.spawn_opt({max_memory = MB}, function() s.receive_match("never") end)
s.monitor(flooded)
local block = string.rep("y", 10000)
for _ = 1, 200 do s.send(flooded, block) end
local _, who, reason = s.receive_match("DOWN")
assert(who == flooded and reason == "memory limit", tostring(reason))
-- A peak that was collected no longer counts: a full collection gives back
-- the heap's chunks it left empty, so a long-lived process is not held to
-- its past peak (the tables of each round take ~0.45 MB of chunks).
local peaked = s.spawn_opt({max_memory = MB}, function()
  for _ = 1, 3 do
    local t = {}
    for i = 1, 6000 do t[i] = {i} end
    t = nil
    collectgarbage()
  end
  s.send(me, "after peaks", #buffer.new(700 * 1024, "u8"))
end)
s.monitor(peaked)
local tag, got = s.receive_match(function(m) return m == "after peaks" or m == "DOWN" end)
assert(tag == "after peaks" and got == 700 * 1024, "a collected peak still counted against the limit")
s.receive_match("DOWN")
-- Nothing else was hurt, and a process under its limit lives on.
local fine = s.spawn_opt({max_memory = 4 * MB}, function()
  local t = {}
  for i = 1, 1000 do t[i] = {i} end
  s.send(me, "fine", #t)
end)
assert(select(2, s.receive_match("fine")) == 1000)
assert(select("#", s.receive_match("went on after pcall", 0)) == 0)
assert(select("#", s.receive_match("went on with a buffer", 0)) == 0)

-- A limit too small for a Lua state at all.
local tiny = s.spawn_opt({max_memory = 100}, function() end)
s.monitor(tiny)
assert(select(3, s.receive_match("DOWN")) == "memory limit")

-- Bad options are one clear error.
local ok, err = pcall(s.spawn_opt, {max_memory = -1}, function() end)
assert(not ok and err:find("max_memory must be a positive number of bytes"), err)
ok, err = pcall(s.spawn_opt, {max_mem = 1}, function() end)
assert(not ok and err:find("unknown option 'max_mem'"), err)

-- Sizes a program chooses never abort the node: they fail as errors.
ok, err = pcall(buffer.new, 1 << 34)
assert(not ok and err:find("not enough memory"), err)
print("memory_limit ok")
