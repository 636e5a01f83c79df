-- An HTTP reverse proxy: every request goes to the upstream server, and
-- its answer comes back, each connection in a process of its own.
--
--   synodic run examples/net/proxy.lua UPSTREAM_URL [PORT]
--   e.g. synodic run examples/net/proxy.lua http://127.0.0.1:8080 8000
--
-- Hop-by-hop headers are not passed on. It prints its port, then serves
-- until killed.
local s = require "synodic"
local http = require "synodic.http"

local upstream = assert(arg[1], "usage: proxy.lua UPSTREAM_URL [PORT]"):gsub("/$", "")

local HOP = { connection = true, ["keep-alive"] = true, ["transfer-encoding"] = true, te = true,
  trailer = true, upgrade = true, ["proxy-authorization"] = true, ["proxy-authenticate"] = true,
  host = true, ["content-length"] = true }

local function forward(req)
  local headers = {}
  for name, value in pairs(req.headers) do
    if not HOP[name] then headers[name] = value end
  end
  headers["X-Forwarded-For"] = "synodic-proxy"
  local target = upstream .. req.path .. (req.query and "?" .. req.query or "")
  local status, body, answer = http.request { url = target, method = req.method, headers = headers,
    body = req.body ~= "" and req.body or nil, timeout = 30 }
  if not status then return 502, "bad gateway: " .. tostring(body) .. "\n" end
  local back = {}
  for name, value in pairs(answer) do
    if not HOP[name] then back[name] = value end
  end
  return status, body, back
end

local srv = assert(http.serve { port = tonumber(arg[2]) or 0, handler = forward })
print(srv.port)
io.stdout:flush()
s.receive()
