-- Dining philosophers in Linda: chopsticks are tuples, and n-1 "room
-- tickets" keep at least one philosopher out of the room, so the table can
-- never deadlock.
-- usage: synodic run examples/linda/philosophers.lua [philosophers] [meals]
local s = require "synodic"
local linda = require "synodic.linda"
local N = math.tointeger(tonumber(arg[1])) or 5
local MEALS = math.tointeger(tonumber(arg[2])) or 20
local table_space = linda.new()

for i = 0, N - 1 do table_space:out("chopstick", i) end
for _ = 1, N - 1 do table_space:out("room ticket") end

for i = 0, N - 1 do
  s.spawn(function(ts, i)
    for _ = 1, MEALS do
      s.sleep(0.0005) -- think
      ts:take("room ticket")
      ts:take("chopstick", i)
      ts:take("chopstick", (i + 1) % N)
      -- eat
      ts:out("chopstick", i)
      ts:out("chopstick", (i + 1) % N)
      ts:out("room ticket")
    end
    ts:out("full", i)
  end, table_space, i)
end

for _ = 1, N do table_space:take("full", linda.int) end
assert(table_space:count("chopstick", linda.int) == N and table_space:count("room ticket") == N - 1)
print(string.format("%d philosophers ate %d meals each; all %d chopsticks are back", N, MEALS, N))
