-- A real C module from Debian (lua-cjson) loaded from several processes.
local s = require "synodic"
local me = s.self()
for i = 1, 3 do
  -- Monitored, so a process that cannot load the module fails the script at once.
  s.monitor(s.spawn(function(parent, i)
    local cjson = require "cjson"
    local text = cjson.encode({n = i, list = {1, 2, 3}})
    s.send(parent, cjson.decode(text).n, #cjson.decode(text).list)
  end, me, i))
end
local seen, ended = {}, 0
while ended < 3 do
  local n, pid, why = s.receive()
  if n == "DOWN" then
    assert(why == "normal", "a process failed: " .. tostring(why))
    ended = ended + 1
  else
    assert(pid == 3)
    seen[n] = true
  end
end
assert(seen[1] and seen[2] and seen[3])
print("cjson ok")
