-- Two processes that deadlock on tuples, for the dashboard's tuple scope to
-- show (docs/dashboard.md): each takes one lock, then waits for the other's.
-- The tuple scope shows the space "locks" with no lock left in it and two
-- waiters, each with the template of the lock the other holds.
-- Each gives up after `seconds` (default 1) and says what it waited for.
-- usage: synodic run [--dashboard 127.0.0.1:8080] examples/linda/deadlock.lua [seconds]
local s = require "synodic"
local linda = require "synodic.linda"
local seconds = tonumber(arg[1]) or 1

local locks = linda.open("locks")
locks:out("lock", "a")
locks:out("lock", "b")

local function transfer(boss, name, first, second, seconds)
  local s, l = require "synodic", require "synodic.linda"
  local locks = l.open("locks")
  locks:take("lock", first)
  -- Both hold their first lock before either asks for its second.
  locks:out("holding", name)
  locks:rd("holding", name == "A" and "B" or "A")
  local got = locks:take_within(seconds, "lock", second)
  s.send(boss, name, first, second, got ~= nil)
end

s.spawn(transfer, s.self(), "A", "a", "b", seconds)
s.spawn(transfer, s.self(), "B", "b", "a", seconds)
local stuck = 0
for _ = 1, 2 do
  local name, first, second, got = s.receive()
  if not got then stuck = stuck + 1 end
  print(string.format("%s held lock %q and waited for lock %q: %s", name, first, second, got and "got it" or "deadlock"))
end
print(stuck == 2 and "both waited for each other: a deadlock (see it in the dashboard's tuple scope)" or "no deadlock")
