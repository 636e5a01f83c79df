-- A real C module from Debian (lua-cjson) loaded from several processes.
local s = require "synodic"
local me = s.self()
for i = 1, 3 do
  s.spawn(function(parent, i)
    local cjson = require "cjson"
    local text = cjson.encode({n = i, list = {1, 2, 3}})
    s.send(parent, cjson.decode(text).n, #cjson.decode(text).list)
  end, me, i)
end
local seen = {}
for _ = 1, 3 do
  local n, len = s.receive()
  assert(len == 3)
  seen[n] = true
end
assert(seen[1] and seen[2] and seen[3])
print("cjson ok")
