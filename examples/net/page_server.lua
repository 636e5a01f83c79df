-- The luaproc paper's page server: an HTTP server made of lightweight
-- processes serving a dynamic page, the numbers 1 to 5,000, one per line.
--
--   synodic run examples/net/page_server.lua [PORT [POOL]]
--
-- Without POOL, a process is spawned for each connection; with POOL, that
-- many processes are made at start and each accepts and serves
-- connections itself (the paper's pre-created processes). `/hello` answers
-- 13 bytes (the I/O path alone). It prints its port, then serves until
-- killed.
local s = require "synodic"
local http = require "synodic.http"

local concat = table.concat

local function page()
  local t = {}
  for i = 1, 5000 do t[i] = i end
  t[5001] = ""
  return concat(t, "\n")
end

local port, pool = tonumber(arg[1]) or 8080, tonumber(arg[2])
local srv = assert(http.serve {
  port = port,
  pool = pool,
  handler = function(req)
    if req.path == "/hello" then return 200, "hello world!\n" end
    return 200, page(), { ["Content-Type"] = "text/html" }
  end,
})
print(srv.port)
io.stdout:flush()
s.receive()
