-- alua.spawn: counts and names, ids, the global alua in every agent.
local s = require "synodic"
assert(alua == require "synodic.alua", "the global alua is the module")
assert(alua.id == "main")

local ids = alua.spawn(3)
assert(#ids == 3 and ids[1] ~= ids[2] and ids[2] ~= ids[3])
for _, id in ipairs(ids) do
  assert(type(id) == "string" and s.whereis(id), id)
end
local named = alua.spawn{"A", "B"}
assert(named[1] == "A" and named[2] == "B")
local ok, err = pcall(alua.spawn, {"A"})
assert(not ok and err:find("taken"), err)
ok, err = pcall(alua.spawn, "three")
assert(not ok and err:find("count or a list"), err)

-- Each agent knows its id; every one replies through alua.send to main.
replies = {}
for _, id in ipairs(ids) do
  alua.send(id, [[alua.send("main", "replies[#replies + 1] = " .. string.format("%q", alua.id))]])
end
alua.send(ids[1], [[alua.send("main", "check()")]])
function check()
  if #replies < 3 then
    -- not all replies yet: ask again later, through the agent
    alua.send(alua_ids_first, [[alua.send("main", "check()")]])
    return
  end
  table.sort(replies)
  local sorted = {table.unpack(ids)}
  table.sort(sorted)
  for i = 1, 3 do assert(replies[i] == sorted[i], replies[i]) end
  print("alua_spawn ok")
  alua.exit()
end
alua_ids_first = ids[1]
