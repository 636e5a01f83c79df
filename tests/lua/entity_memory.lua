-- What an entity costs its node: 20,000 entities forked as bench/entities
-- forks them (an init and two methods), measured by resident memory. Each
-- starts as one copy of its template in the allocator's 4 KB class (with
-- its process record, its mailbox and its handle here, ~5.1 KB in all); a copy that grows past
-- that class (it took 5 KB until the string metatable was made on first
-- use) shows here as ~6.4 KB.
local s = require "synodic"
local entity = require "synodic.entity"
local testkit = require "testkit"
local N = 20000

local send = s.send
local methods = {
  ping = function() return 1 end,
  async = function(self, from) send(from, "pong") end,
}
local made = {}
local function fork() made[#made + 1] = entity.spawn{init = function() end, methods = methods} end
for _ = 1, 100 do fork() end  -- the template is built, the allocator warm
collectgarbage()
local before = testkit.rss_kb()
for _ = 1, N do fork() end
local per = (testkit.rss_kb() - before) / N
print(string.format("KB per entity: %.2f", per))
assert(per < 5.7, ("an entity takes %.2f KB (its copy no longer fits the allocator's 4 KB class?)"):format(per))
-- Used, they still answer.
assert(entity.call(made[1], "ping") == 1 and entity.call(made[#made], "ping") == 1)
for _, e in ipairs(made) do entity.kill(e) end
print("entity_memory ok")
