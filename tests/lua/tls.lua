-- TLS (SPEC §10), with rustls: an HTTPS server and client, certificates
-- verified by default (a CA given with ca_file; the system's otherwise),
-- verify = false only when asked, a name that does not match refused, TLS
-- on raw sockets both ways, and a server that goes on after a client that
-- does not speak TLS. Certificates: tests/lua/fixtures/tls (README there).
local s = require "synodic"
local http = require "synodic.http"
local socket = require "synodic.socket"

local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local ca, cert, key = dir .. "/fixtures/tls/ca.pem", dir .. "/fixtures/tls/cert.pem", dir .. "/fixtures/tls/key.pem"

local srv = assert(http.serve { port = 0, cert_file = cert, key_file = key, handler = function(req)
  return 200, req.method .. " " .. req.path .. " " .. #req.body
end })
local base = "https://localhost:" .. srv.port

-- Verified against the CA that signed the server's certificate.
local status, body = http.request { url = base .. "/a", ca_file = ca }
assert(status == 200 and body == "GET /a 0", tostring(body))
-- A megabyte each way.
local big = string.rep("m", 1 << 20)
status, body = http.request { url = base .. "/up", ca_file = ca, body = big }
assert(status == 200 and body == "POST /up " .. (1 << 20), tostring(body))
-- Verified by default against the system's authorities, which do not know this CA.
local none, why = http.get(base .. "/b")
assert(none == nil and why:find("invalid peer certificate") and why:find("UnknownIssuer"), why)
-- Not verified, when asked.
status = http.request { url = "https://127.0.0.1:" .. srv.port .. "/c", verify = false }
assert(status == 200)
-- A certificate for another name is refused.
do
  local c = assert(socket.connect("127.0.0.1", srv.port))
  local ok, err = c:tls { server_name = "example.com", ca_file = ca }
  assert(ok == nil and err:find("invalid peer certificate") and err:find("not valid for name"), tostring(err))
  c:close()
end
-- A client that does not speak TLS is turned away; the server goes on.
do
  local c = assert(socket.connect("127.0.0.1", srv.port))
  c:settimeout(5)
  c:send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
  local data, err = c:receive("*a")
  assert(data == nil or not data:find("200"), "no plain answer from a TLS server")
  c:close()
  assert(http.request { url = base .. "/after", ca_file = ca } == 200)
end
srv:close()

-- TLS on raw sockets: a listener made with certificates, a client's tls{}.
do
  local l = assert(socket.bind("127.0.0.1", 0, { cert_file = cert, key_file = key }))
  local _, port = l:getsockname()
  local me = s.self()
  s.spawn(function(l, me)
    local c = assert(l:accept())
    local line = assert(c:receive())
    assert(c:send(line:upper() .. "\n"))
    s.send(me, "served", c:receive(5))
    c:close()
  end, l, me)
  local c = assert(socket.connect("localhost", port))
  assert(c:tls { ca_file = ca } == 1)
  assert(c:send("over tls\n"))
  assert(c:receive() == "OVER TLS")
  assert(c:send("12345"))
  local tag, got = s.receive()
  assert(tag == "served" and got == "12345")
  local d, e = c:receive()
  assert(d == nil and e == "closed")
  c:close()
  l:close()
end

-- Bad options are answers, not crashes.
do
  local l = assert(socket.bind("127.0.0.1", 0))
  local ok, err = l:tls { cert_file = "/no/such/file.pem", key_file = key }
  assert(ok == nil and err:find("/no/such/file.pem"), tostring(err))
  ok, err = l:tls { cert_file = cert }
  assert(ok == nil and err:find("both cert_file and key_file"), tostring(err))
  l:close()
end
print("tls ok")
