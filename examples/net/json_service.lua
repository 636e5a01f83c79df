-- A JSON HTTP service whose state is a tuple space shared by its handlers
-- (each connection's handler runs in its own process): a key-value store.
--
--   synodic run examples/net/json_service.lua [PORT]
--   curl -X PUT -d '{"n": 1}' 127.0.0.1:PORT/kv/a     -> {"ok":true}
--   curl 127.0.0.1:PORT/kv/a                          -> {"n":1}
--   curl 127.0.0.1:PORT/kv                            -> {"keys":["a"]}
--
-- JSON by lua-cjson (Debian's lua-cjson, a C module). It prints its port,
-- then serves until killed.
local s = require "synodic"
local http = require "synodic.http"

local function handler(req)
  local cjson = require "cjson"
  local linda = require "synodic.linda"
  local kv = linda.open("kv")
  local json = { ["Content-Type"] = "application/json" }
  local key = req.path:match("^/kv/([%w_%-]+)$")
  if req.path == "/kv" and req.method == "GET" then
    local keys = {}
    for _, t in ipairs(kv:take_all("key", linda.string)) do keys[#keys + 1] = t[2] end
    for _, k in ipairs(keys) do kv:out("key", k) end
    table.sort(keys)
    return 200, cjson.encode { keys = setmetatable(keys, cjson.array_mt) }, json
  elseif key and req.method == "GET" then
    local _, _, value = kv:rdp("value", key, linda.string)
    if not value then return 404, cjson.encode { error = "no such key" }, json end
    return 200, value, json
  elseif key and req.method == "PUT" then
    local ok = pcall(cjson.decode, req.body)
    if not ok then return 400, cjson.encode { error = "the body is not JSON" }, json end
    -- One writer at a time per key: the old value is taken, the new put.
    if not kv:inp("value", key, linda.string) then kv:out("key", key) end
    kv:out("value", key, req.body)
    return 200, cjson.encode { ok = true }, json
  end
  return 404, cjson.encode { error = "not found" }, json
end

local srv = assert(http.serve { port = tonumber(arg[1]) or 0, handler = handler })
print(srv.port)
io.stdout:flush()
s.receive()
