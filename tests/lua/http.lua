-- HTTP (SPEC §10): http.serve and http.request against each other, and
-- the server against raw requests: keep-alive, pipelining, chunked bodies
-- both ways, HTTP/1.0, limits answered (400, 408, 413, 431), a handler's
-- error answered 500 while the server goes on, and close.
local s = require "synodic"
local http = require "synodic.http"
local socket = require "synodic.socket"

local srv = assert(http.serve {
  port = 0,
  max_header_bytes = 4096,
  max_body_bytes = 1000,
  read_timeout = 0.3,
  handler = function(req)
    if req.path == "/boom" then error("boom on purpose") end
    if req.path == "/nostatus" then return end
    if req.path == "/stream" then
      local i = 0
      return 200, function()
        i = i + 1
        if i <= 3 then return "part" .. i .. ";" end
      end
    end
    if req.path == "/echo" then
      return 201, req.body, { ["X-Method"] = req.method, ["X-Query"] = req.query or "" }
    end
    return 200, "hello " .. req.path
  end,
})
assert(math.type(srv.port) == "integer" and srv.port > 0)
local base = "http://127.0.0.1:" .. srv.port

-- The client against the server.
local status, body, headers = http.get(base .. "/x")
assert(status == 200 and body == "hello /x", body)
assert(headers["content-length"] == "8")
status, body, headers = http.request { url = base .. "/echo?a=1&b=2", method = "PUT", body = "payload", headers = { ["X-Mine"] = "1" } }
assert(status == 201 and body == "payload" and headers["x-method"] == "PUT" and headers["x-query"] == "a=1&b=2")
status, body, headers = http.get(base .. "/stream")
assert(status == 200 and body == "part1;part2;part3;" and headers["transfer-encoding"] == "chunked")
status, body = http.request { url = base .. "/x", method = "HEAD" }
assert(status == 200 and body == "")

-- A handler's error is a 500; the server goes on.
status, body = http.get(base .. "/boom")
assert(status == 500 and body:find("internal server error"))
status = http.get(base .. "/nostatus")
assert(status == 500)
assert(http.get(base .. "/after") == 200)

-- Raw requests: what a client sends, byte for byte.
local function exchange(bytes, close_after)
  local c = assert(socket.connect("127.0.0.1", srv.port))
  c:settimeout(5)
  assert(c:send(bytes))
  if close_after then c:shutdown("send") end
  local all = c:receive("*a")
  c:close()
  return all
end

-- Pipelining: three requests in one write, answered in order, on one connection.
local all = exchange("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
local order = {}
for path in all:gmatch("hello (/%d)") do order[#order + 1] = path end
assert(table.concat(order, ",") == "/1,/2,/3", all)

-- A chunked request body.
all = exchange("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
assert(all:find("^HTTP/1.1 201") and all:find("\r\n\r\nhello world$"), all)

-- HTTP/1.0: closes after the answer unless asked to keep alive.
all = exchange("GET /old HTTP/1.0\r\n\r\n")
assert(all:find("^HTTP/1.0 200") and all:find("Connection: close") and all:find("hello /old$"), all)

-- Limits, each answered and the connection closed.
assert(exchange("NOT A REQUEST\r\n\r\n"):find("^HTTP/1.1 400"))
assert(exchange("GET / HTTP/1.1\r\nX-Big: " .. string.rep("a", 5000) .. "\r\n\r\n"):find("^HTTP/1.1 431"))
assert(exchange("POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"):find("^HTTP/1.1 413"))
assert(exchange("POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n"):find("^HTTP/1.1 400"))
-- Half a request, then nothing: 408 after the read timeout.
local t0 = s.clock()
assert(exchange("GET / HTTP/1.1\r\nHost"):find("^HTTP/1.1 408"))
assert(s.clock() - t0 >= 0.25)
-- Half a request, then the client goes: nothing to answer, nothing breaks.
assert(exchange("GET / HTTP/1.1\r\nHost", true) == "")
-- An idle keep-alive connection is closed quietly after the timeout.
do
  local c = assert(socket.connect("127.0.0.1", srv.port))
  c:settimeout(5)
  assert(c:receive("*a") == "")
  c:close()
end
assert(http.get(base .. "/still") == 200, "the server still serves")

-- Many clients at once, each in its process.
do
  local me = s.self()
  for i = 1, 50 do
    s.spawn(function(url, me, i)
      local http = require "synodic.http"
      local st, b = http.get(url .. "/c" .. i)
      s.send(me, st == 200 and b == "hello /c" .. i)
    end, base, me, i)
  end
  for _ = 1, 50 do assert(s.receive() == true) end
end

-- A server that never answers: the client's timeout.
do
  local mute = assert(socket.bind("127.0.0.1", 0))
  local _, mport = mute:getsockname()
  local t0 = s.clock()
  local none, why = http.request { url = "http://127.0.0.1:" .. mport .. "/", timeout = 0.2 }
  assert(none == nil and why == "timeout", tostring(why))
  assert(s.clock() - t0 >= 0.15)
  mute:close()
end

-- Client errors.
local none, why = http.get("http://127.0.0.1:1/")
assert(none == nil and why == "connection refused", why)
none, why = http.get("ftp://example/")
assert(none == nil and why:find("unsupported scheme"))
none, why = http.get("not a url")
assert(none == nil and why:find("bad url"))

-- Once close returns, new connections are refused.
local port = srv.port
assert(srv:close())
none, why = socket.connect("127.0.0.1", port)
assert(none == nil and why == "connection refused", tostring(why))
print("http ok")
