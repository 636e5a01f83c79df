-- synodic-args: --workers 2
-- A process that cannot yield holds its worker's thread: a busy loop in a
-- callback of string.gsub, a table.sort comparator, a __tostring called by
-- tostring, a linda where-predicate; or a C function that blocks (here
-- os.execute waiting for its child). With as many of them as workers, the
-- others still run: the monitor declares those workers stuck and spare
-- threads take over their other processes.
local s = require "synodic"
local testkit = require "testkit"
local linda = require "synodic.linda"
local me = s.self()

local function spin() while true do end end
local stuck = {
  function() string.gsub("x", "x", function() s.send(me, "stuck") spin() end) end,
  function() table.sort({3, 2, 1}, function(a, b) s.send(me, "stuck") spin() end) end,
  function() tostring(setmetatable({}, {__tostring = function() s.send(me, "stuck") spin() end})) end,
  function()
    local ts = linda.new()
    ts:out("x", 1)
    ts:rdp("x", linda.where(function() s.send(me, "stuck") spin() end))
  end,
  function() s.send(me, "stuck") os.execute("sleep 1") end,
}
for _, f in ipairs(stuck) do s.spawn(f) end
for _ = 1, #stuck do assert(s.receive() == "stuck") end

-- More stuck processes than workers, and still a ping-pong pair runs.
testkit.ping_pong(100)
print("stuck_workers ok")
