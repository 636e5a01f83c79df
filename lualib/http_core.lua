-- synodic.http.core: the functions behind synodic.http (SPEC §10): an
-- HTTP/1.1 server's connections and a client, on synodic.socket.
--
-- The server, step by step:
--   1. `serve` (lualib/http.lua) binds the listener in the caller (so a bad
--      address fails there) and starts acceptor processes that share it;
--   2. an acceptor (`acceptor`) takes each connection and spawns a process
--      for it (or, with `pool = N`, N processes each accept and serve
--      connections themselves: the luaproc paper's pre-created processes);
--   3. the connection's process (`connection`) reads a head (parsed by
--      synodic.http.raw, httparse), then the body (by length or chunked),
--      calls the handler, writes the response, and goes on with the next
--      request of the connection (keep-alive, pipelining) until either
--      side closes;
--   4. a bad request is answered (400, 408, 413, 431) and the connection
--      closed; a handler's error is a 500, reported with its pid.
-- Heads are parsed natively; what is policy (limits, keep-alive, bodies)
-- is here.
--
-- A frozen module (see lualib/socket_core.lua): its functions are the
-- node's, shared by every process, so a process serving a connection
-- holds only its own state. A connection's reader is a plain table `r`
-- (conn, buf, pos) that these functions take.

local s = require "synodic"
local socket = require "synodic.socket.core"
local raw = require "synodic.http.raw"
local sockraw = require "synodic.socket.raw"

local M = {}

local find, sub, lower, format, concat, match, gmatch, upper = string.find, string.sub, string.lower, string.format, table.concat, string.match, string.gmatch, string.upper
local clock, spawn, self_pid = s.clock, s.spawn, s.self
local parse_request, parse_response = raw.parse_request, raw.parse_response
local connect, warn, sock_state = socket.connect, sockraw.warn, sockraw.state
-- The socket methods this module uses, called directly (not through the
-- socket's __index): the hot path of every request.
local receiveany, send = socket.tcp_class.__index.receiveany, socket.tcp_class.__index.send
local pcall, pairs, tostring, tonumber, type, setmetatable = pcall, pairs, tostring, tonumber, type, setmetatable
local mtype, maxinteger = math.type, math.maxinteger
local collect = collectgarbage
-- Seconds without a request before a kept-alive connection's process collects.
local IDLE <const> = 1

-- Reason phrases, one per line after the status (a string, not a table:
-- this module's values are shared, and a table could be written).
local REASONS <const> = [[
100 Continue
101 Switching Protocols
200 OK
201 Created
202 Accepted
204 No Content
206 Partial Content
301 Moved Permanently
302 Found
303 See Other
304 Not Modified
307 Temporary Redirect
308 Permanent Redirect
400 Bad Request
401 Unauthorized
403 Forbidden
404 Not Found
405 Method Not Allowed
408 Request Timeout
409 Conflict
411 Length Required
413 Content Too Large
414 URI Too Long
415 Unsupported Media Type
429 Too Many Requests
431 Request Header Fields Too Large
500 Internal Server Error
501 Not Implemented
502 Bad Gateway
503 Service Unavailable
504 Gateway Timeout
]]

-- The reason phrase of `status`.
function M.reason(status)
  if status == 200 then return "OK" end
  return match(REASONS, "%f[%d]" .. status .. " ([^\n]*)") or "Unknown"
end
local reason = M.reason

-- A connection's reader: what has arrived and not been used yet ------------

local function reader(conn)
  return { conn = conn, st = sock_state(conn), buf = "", pos = 1 }
end

-- Reads more before `deadline` (nil: none): true, or nil and why.
local function read_more(self, deadline)
  local t = deadline and deadline - clock()
  if t and t <= 0 then return nil, "timeout" end
  self.st.timeout = t
  local data, err = receiveany(self.conn, 65536)
  if not data then return nil, err end
  if self.pos > 1 then
    self.buf, self.pos = sub(self.buf, self.pos) .. data, 1
  else
    self.buf = self.buf .. data
  end
  return true
end

local function pending(self)
  return #self.buf - self.pos + 1
end

-- A head: `parse(buf, pos)`'s results, or nil and why ("closed" before
-- any byte of it, "timeout", "too large", a parse error).
local function read_head(self, parse, max_bytes, deadline)
  while true do
    local next_pos, a, b, c, d = parse(self.buf, self.pos)
    if next_pos then
      if next_pos - self.pos > max_bytes then return nil, "too large" end
      self.pos = next_pos
      return next_pos, a, b, c, d
    elseif next_pos == false then
      return nil, a
    end
    if pending(self) > max_bytes then return nil, "too large" end
    local ok, err = read_more(self, deadline)
    if not ok then
      if err == "closed" and pending(self) > 0 then err = "truncated" end
      return nil, err
    end
  end
end

-- Exactly `n` bytes.
local function read_take(self, n, deadline)
  while pending(self) < n do
    local ok, err = read_more(self, deadline)
    if not ok then return nil, err end
  end
  local got = sub(self.buf, self.pos, self.pos + n - 1)
  self.pos = self.pos + n
  return got
end

-- A line ending in CRLF (or LF), without it.
local function read_line(self, deadline, max_bytes)
  while true do
    local at = find(self.buf, "\n", self.pos, true)
    if at then
      local line = sub(self.buf, self.pos, at - 1)
      self.pos = at + 1
      if sub(line, -1) == "\r" then line = sub(line, 1, -2) end
      return line
    end
    if pending(self) > max_bytes then return nil, "too large" end
    local ok, err = read_more(self, deadline)
    if not ok then return nil, err end
  end
end

-- Everything until the peer closes.
local function read_rest(self, deadline, max_bytes)
  while true do
    if pending(self) > max_bytes then return nil, "too large" end
    local ok, err = read_more(self, deadline)
    if not ok then
      if err ~= "closed" then return nil, err end
      local all = sub(self.buf, self.pos)
      self.buf, self.pos = "", 1
      return all
    end
  end
end

-- A body framed by `headers`: chunked, by length, or (`to_close`, a
-- response) until the connection closes. Returns it, or nil and why
-- ("too large", "bad length", "bad chunk", "timeout", "closed").
local function read_body(self, headers, max_bytes, deadline, to_close)
  local te = headers["transfer-encoding"]
  if te and find(lower(te), "chunked", 1, true) then
    local parts, total = {}, 0
    while true do
      local line, err = read_line(self, deadline, 1024)
      if not line then return nil, err == "too large" and "bad chunk" or err end
      local size = tonumber(line:match("^%s*(%x+)"), 16)
      if not size then return nil, "bad chunk" end
      if size == 0 then
        -- Trailers, up to an empty line.
        repeat
          line, err = read_line(self, deadline, 8192)
          if not line then return nil, err end
        until line == ""
        return concat(parts)
      end
      total = total + size
      if total > max_bytes then return nil, "too large" end
      local chunk
      chunk, err = read_take(self, size, deadline)
      if not chunk then return nil, err end
      parts[#parts + 1] = chunk
      line, err = read_line(self, deadline, 2)
      if line ~= "" then return nil, line and "bad chunk" or err end
    end
  end
  local length = headers["content-length"]
  if length then
    local n = length:match("^%s*(%d+)%s*$")
    n = n and tonumber(n)
    if not n then return nil, "bad length" end
    if n > max_bytes then return nil, "too large" end
    return read_take(self, n, deadline)
  end
  if to_close then return read_rest(self, deadline, max_bytes) end
  return ""
end

-- Writing ---------------------------------------------------------------------

-- Whether the token `word` is in a comma-separated header value.
local function has_token(value, word)
  if not value then return false end
  for token in value:gmatch("[^,%s]+") do
    if lower(token) == word then return true end
  end
  return false
end

local function bodiless(status, method)
  return method == "HEAD" or status == 204 or status == 304 or (status >= 100 and status < 200)
end

-- Writes a response; `close`: the connection ends after it.
local function respond(conn, status, body, headers, method, close, minor)
  if headers == nil and type(body) == "string" and status >= 200 and status ~= 204 and status ~= 304 and method ~= "HEAD" then
    -- The common answer, in one string: no table, no pieces.
    return send(conn, format("HTTP/1.%d %d %s\r\n%sContent-Length: %d\r\n%s\r\n%s", minor, status, reason(status),
      close and "Connection: close\r\n" or minor == 0 and "Connection: keep-alive\r\n" or "",
      #body, #body > 0 and "Content-Type: text/plain; charset=utf-8\r\n" or "", body))
  end
  local out = { format("HTTP/1.%d %d %s\r\n", minor, status, reason(status)) }
  local has_length, has_type = false, false
  if headers then
    for name, value in pairs(headers) do
      local lname = lower(name)
      if lname == "content-length" then has_length = true
      elseif lname == "content-type" then has_type = true
      elseif lname == "connection" or lname == "transfer-encoding" then goto skip end
      out[#out + 1] = name .. ": " .. tostring(value) .. "\r\n"
      ::skip::
    end
  end
  if close then
    out[#out + 1] = "Connection: close\r\n"
  elseif minor == 0 then
    out[#out + 1] = "Connection: keep-alive\r\n"
  end
  local streamed = type(body) == "function"
  if streamed and minor == 0 then
    -- HTTP/1.0 has no chunks: the body goes until the connection closes.
    local parts = {}
    for part in body do parts[#parts + 1] = part end
    body, streamed = concat(parts), false
  end
  if streamed then
    out[#out + 1] = "Transfer-Encoding: chunked\r\n\r\n"
    local ok, err = conn:send(concat(out))
    if not ok then return nil, err end
    if bodiless(status, method) then return true end
    for part in body do
      if #part > 0 then
        ok, err = conn:send(format("%x\r\n%s\r\n", #part, part))
        if not ok then return nil, err end
      end
    end
    return conn:send("0\r\n\r\n")
  end
  body = body == nil and "" or tostring(body)
  if not has_length and not (status == 204 or status == 304 or status < 200) then
    out[#out + 1] = "Content-Length: " .. #body .. "\r\n"
  end
  if not has_type and #body > 0 then out[#out + 1] = "Content-Type: text/plain; charset=utf-8\r\n" end
  out[#out + 1] = "\r\n"
  if not bodiless(status, method) then out[#out + 1] = body end
  return send(conn, concat(out))
end

-- The server -----------------------------------------------------------------

-- The status that answers a head that could not be read.
local function answer(why)
  if why == "too large" or why == "too many headers" then return 431 end
  if why == "timeout" then return 408 end
  return 400
end

-- Answers a request that cannot be served, then the connection closes.
local function refuse(conn, status, why)
  respond(conn, status, why .. "\n", { ["Content-Type"] = "text/plain; charset=utf-8" }, "GET", true, 1)
  conn:shutdown("send")
end

local function report(err)
  warn(format("synodic: http handler error in process %s: %s", tostring(self_pid()), tostring(err)))
end

-- Serves the requests of one connection until either side closes. The
-- limits come as numbers, not as the server's table: each connection's
-- process would hold a copy of the table and of its keys.
function M.connection(conn, handler, read_timeout, max_header_bytes, max_body_bytes)
  local r = reader(conn)
  while true do
    -- Step 3: the head. An idle connection that closes or times out
    -- before sending anything just ends.
    local deadline = clock() + read_timeout
    local fresh = pending(r) == 0
    local next_pos, method, target, minor, headers
    if fresh and read_timeout > IDLE then
      -- A connection idle for a while first lets go of what its last
      -- request left (the garbage of a large answer stays otherwise, as
      -- long as the connection is kept alive).
      next_pos, method, target, minor, headers = read_head(r, parse_request, max_header_bytes, clock() + IDLE)
      if not next_pos and method == "timeout" and pending(r) == 0 then
        collect()
        next_pos, method, target, minor, headers = read_head(r, parse_request, max_header_bytes, deadline)
      end
    else
      next_pos, method, target, minor, headers = read_head(r, parse_request, max_header_bytes, deadline)
    end
    if not next_pos then
      local why = method
      if why == "closed" or (why == "timeout" and fresh and pending(r) == 0) then break end
      if why ~= "truncated" and why ~= "closed" then
        refuse(conn, answer(why), why == "timeout" and "request timeout" or why)
      end
      break
    end
    local path, query = target, nil
    local q = find(target, "?", 1, true)
    if q then path, query = sub(target, 1, q - 1), sub(target, q + 1) end
    if has_token(headers.expect, "100-continue") then conn:send("HTTP/1.1 100 Continue\r\n\r\n") end
    local body, why = read_body(r, headers, max_body_bytes, deadline, false)
    if not body then
      if why ~= "closed" then
        refuse(conn, why == "too large" and 413 or why == "timeout" and 408 or 400, why)
      end
      break
    end
    local close = (minor == 0 and not has_token(headers.connection, "keep-alive")) or has_token(headers.connection, "close")
    local req = { method = method, path = path, query = query, headers = headers, body = body, version = minor == 0 and "1.0" or "1.1" }
    local ok, status, rbody, rheaders = pcall(handler, req)
    if not ok then
      report(status)
      status, rbody, rheaders = 500, "internal server error\n", nil
    elseif mtype(status) ~= "integer" or status < 100 or status > 999 then
      report("the handler returned no status (got " .. tostring(status) .. ")")
      status, rbody, rheaders = 500, "internal server error\n", nil
    end
    -- Answers take as long as the client takes to read them (read_timeout
    -- is for requests): a stalled reader holds only this process.
    r.st.timeout = nil
    local sent, err = respond(conn, status, rbody, rheaders, method, close, minor)
    if not sent or close then break end
    -- Keep the buffer small across a long-lived connection.
    if r.pos > 1 then r.buf, r.pos = sub(r.buf, r.pos), 1 end
    -- This request's values would stay in the frame's registers (and so
    -- alive) while the connection waits for the next one.
    req, headers, body, rbody, rheaders, target, path, query, method, status = nil
  end
  conn:close()
end

-- Step 2: takes connections from the shared listener until it closes.
local connection = M.connection

function M.acceptor(listener, handler, config)
  while true do
    local conn, err = listener:accept()
    if not conn then
      if err == "closed" then return end
      warn("synodic: http accept: " .. tostring(err))
    elseif config.pool then
      connection(conn, handler, config.read_timeout, config.max_header_bytes, config.max_body_bytes)
    else
      spawn(connection, conn, handler, config.read_timeout, config.max_header_bytes, config.max_body_bytes)
    end
  end
end

-- The client -----------------------------------------------------------------

-- scheme, host, port, target of an http:// URL.
local function parse_url(url)
  local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
  if not scheme then return nil, "bad url: " .. tostring(url) end
  scheme = lower(scheme)
  if scheme ~= "http" and scheme ~= "https" then return nil, "unsupported scheme: " .. scheme end
  local authority, target = rest:match("^([^/?#]*)(.*)$")
  target = target:gsub("#.*$", "")
  if target == "" then target = "/" elseif sub(target, 1, 1) == "?" then target = "/" .. target end
  local host, port = authority:match("^%[(.+)%]:?(%d*)$")
  if not host then host, port = authority:match("^([^:]*):?(%d*)$") end
  if not host or host == "" then return nil, "bad url: " .. url end
  return scheme, host, tonumber(port) or (scheme == "https" and 443 or 80), target, authority
end

function M.request(t)
  if type(t) == "string" then t = { url = t } end
  local scheme, host, port, target, authority = parse_url(t.url or "")
  if not scheme then return nil, host end
  local method = upper(t.method or (t.body and "POST" or "GET"))
  local deadline = t.timeout and clock() + t.timeout
  local conn, err = connect(host, port, t.timeout)
  if not conn then return nil, err end
  if scheme == "https" then
    conn:settimeout(t.timeout)
    local ok
    ok, err = conn:tls { server_name = host, ca_file = t.ca_file, verify = t.verify }
    if not ok then conn:close(); return nil, err end
  end
  local body = t.body and tostring(t.body) or nil
  local out = { format("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, authority) }
  local given = {}
  for name, value in pairs(t.headers or {}) do
    given[lower(name)] = true
    out[#out + 1] = name .. ": " .. tostring(value) .. "\r\n"
  end
  if body and not given["content-length"] then out[#out + 1] = "Content-Length: " .. #body .. "\r\n" end
  if not given["user-agent"] then out[#out + 1] = "User-Agent: synodic\r\n" end
  out[#out + 1] = "\r\n"
  out[#out + 1] = body
  conn:settimeout(t.timeout)
  local ok
  ok, err = conn:send(concat(out))
  if not ok then conn:close(); return nil, err end
  local r = reader(conn)
  local status, headers
  repeat
    local next_pos, code, _reason, _minor, hdrs = read_head(r, parse_response, 65536, deadline)
    if not next_pos then conn:close(); return nil, code == "truncated" and "closed" or code end
    status, headers = code, hdrs
  until status >= 200 or status == 101
  local rbody
  if bodiless(status, method) then
    rbody = ""
  else
    rbody, err = read_body(r, headers, t.max_body_bytes or maxinteger, deadline, true)
    if not rbody then conn:close(); return nil, err end
  end
  conn:close()
  return status, rbody, headers
end

local request = M.request

function M.get(url)
  return request { url = url }
end

return M
