-- synodic.socket: LuaSocket's TCP and UDP API (SPEC §10), so that code
-- written for LuaSocket runs unchanged, over the native calls of
-- synodic.socket.raw. Each call that would block waits for its socket in
-- the node's netpoller (raw.wait): only the calling process waits, never
-- its worker thread. Receive buffering and patterns live here, as in
-- LuaSocket's buffer.c.

local raw = require "synodic.socket.raw"
local s = require "synodic"

local M = { _VERSION = "LuaSocket 3.0-synodic" }

local CHUNK = 65536
local find, sub, gsub, concat = string.find, string.sub, string.gsub, table.concat

-- Seconds left before `deadline` (nil: no deadline).
local function left(deadline)
  if not deadline then return nil end
  local t = deadline - raw.gettime()
  return t > 0 and t or 0
end

local function deadline_of(self)
  return self.timeout and raw.gettime() + self.timeout or nil
end

-- Waits for `sock` to be ready for "r" or "w" before `deadline`.
local function await(sock, how, deadline)
  local t = left(deadline)
  if t == 0 then return nil, "timeout" end
  return raw.wait(sock, how, t)
end

local tcp = {}
tcp.__index = tcp
tcp.__name = "tcp"

local function new_tcp(sock, class, family)
  return setmetatable({ sock = sock, class = class, family = family or "inet", buf = "", timeout = nil }, tcp)
end

function tcp:__tostring()
  return "tcp{" .. self.class .. "}: " .. tostring(self.sock)
end

local function check(self, fname, class)
  if getmetatable(self) ~= tcp or (class and self.class ~= class) then
    error(("bad argument #1 to '%s' (tcp{%s} expected, got %s)"):format(fname, class or "any",
      getmetatable(self) == tcp and "tcp{" .. self.class .. "}" or type(self)), 3)
  end
end

function tcp:settimeout(t, _mode)
  self.timeout = (t and t >= 0) and t or nil
  return 1
end

function tcp:getfd() return self.sock end
function tcp:dirty() return #self.buf > 0 end
function tcp:close()
  raw.close(self.sock)
  self.class = "closed"
  return 1
end
function tcp:shutdown(how) return raw.shutdown(self.sock, how) end
function tcp:getsockname() return raw.sockname(self.sock) end
function tcp:getpeername() return raw.peername(self.sock) end
function tcp:setoption(name, value) return raw.setoption(self.sock, name, value) end
function tcp:setfd() error("setfd is not supported", 2) end

-- Connects to the first address of `host` that answers.
function tcp:connect(host, port)
  check(self, "connect", "master")
  local deadline = deadline_of(self)
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  for _, ip in ipairs(ips) do
    local family = find(ip, ":", 1, true) and "inet6" or "inet"
    if family ~= self.family then
      raw.close(self.sock)
      self.sock, err = raw.socket("tcp", family)
      if not self.sock then return nil, err end
      self.family = family
    end
    local ok
    ok, err = raw.connect(self.sock, ip, port)
    if ok == false then
      ok, err = await(self.sock, "w", deadline)
      if ok then ok, err = raw.connected(self.sock) end
    end
    if ok then
      self.class = "client"
      return 1
    end
    if err == "timeout" then break end
  end
  return nil, err
end

function tcp:bind(host, port)
  check(self, "bind", "master")
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  local ip = ips[1]
  local family = find(ip, ":", 1, true) and "inet6" or "inet"
  if family ~= self.family then
    raw.close(self.sock)
    self.sock, err = raw.socket("tcp", family)
    if not self.sock then return nil, err end
    self.family = family
  end
  return raw.bind(self.sock, ip, port)
end

function tcp:listen(backlog)
  check(self, "listen", "master")
  local ok, err = raw.listen(self.sock, backlog or 32)
  if ok then self.class = "server" end
  return ok, err
end

-- Too many open files: the listener pauses (doubling, at most 1 s) and
-- goes on; one line per episode says so.
local function backoff(self, pause)
  if pause == 0.01 then
    io.stderr:write(("synodic: %s: too many open files; accepting again after a pause\n"):format(tostring(self)))
  end
  s.sleep(pause)
  return math.min(pause * 2, 1)
end

function tcp:accept()
  check(self, "accept", "server")
  local deadline = deadline_of(self)
  local pause = 0.01
  while true do
    local c, err = raw.accept(self.sock)
    if c then
      return new_tcp(c, "client", self.family)
    elseif c == false then
      local ok, werr = await(self.sock, "r", deadline)
      if not ok then return nil, werr end
    elseif err == "too many open files" and (not deadline or left(deadline) > 0) then
      pause = backoff(self, pause)
    else
      return nil, err
    end
  end
end

-- Reads more into the buffer: true, or nil and why.
local function fill(self, deadline)
  while true do
    local data, err = raw.recv(self.sock, CHUNK)
    if data then
      self.buf = self.buf .. data
      return true
    elseif data == false then
      local ok, werr = await(self.sock, "r", deadline)
      if not ok then return nil, werr end
    else
      return nil, err
    end
  end
end

local function receive_line(self, deadline)
  while true do
    local at = find(self.buf, "\n", 1, true)
    if at then
      local line = sub(self.buf, 1, at - 1)
      self.buf = sub(self.buf, at + 1)
      return (gsub(line, "\r", ""))
    end
    local ok, err = fill(self, deadline)
    if not ok then
      local partial = gsub(self.buf, "\r", "")
      self.buf = ""
      return nil, err, partial
    end
  end
end

local function receive_all(self, deadline)
  local parts = { self.buf }
  self.buf = ""
  while true do
    local data, err = raw.recv(self.sock, CHUNK)
    if data then
      parts[#parts + 1] = data
    elseif data == false then
      local ok, werr = await(self.sock, "r", deadline)
      if not ok then return nil, werr, concat(parts) end
    elseif err == "closed" then
      return concat(parts)
    else
      return nil, err, concat(parts)
    end
  end
end

local function receive_count(self, n, deadline)
  if #self.buf >= n then
    local got = sub(self.buf, 1, n)
    self.buf = sub(self.buf, n + 1)
    return got
  end
  local parts, have = { self.buf }, #self.buf
  self.buf = ""
  while have < n do
    local data, err = raw.recv(self.sock, math.min(CHUNK, math.max(n - have, 4096)))
    if data then
      parts[#parts + 1] = data
      have = have + #data
    elseif data == false then
      local ok, werr = await(self.sock, "r", deadline)
      if not ok then return nil, werr, concat(parts) end
    else
      return nil, err, concat(parts)
    end
  end
  local all = concat(parts)
  self.buf = sub(all, n + 1)
  return sub(all, 1, n)
end

function tcp:receive(pattern, prefix)
  check(self, "receive", "client")
  pattern = pattern or "*l"
  prefix = prefix or ""
  local deadline = deadline_of(self)
  local data, err, partial
  if pattern == "*l" or pattern == "l" then
    data, err, partial = receive_line(self, deadline)
  elseif pattern == "*a" or pattern == "a" then
    data, err, partial = receive_all(self, deadline)
  elseif math.type(pattern) == "integer" or (type(pattern) == "number" and pattern == math.floor(pattern)) then
    data, err, partial = receive_count(self, math.max(0, math.tointeger(pattern) - #prefix), deadline)
  else
    error("bad argument #1 to 'receive' (invalid receive pattern)", 2)
  end
  if data then return prefix .. data end
  return nil, err, prefix .. (partial or "")
end

-- Like receive(n) but returns what has arrived (at least one byte, at
-- most n): for proxies and parsers that take what comes.
function tcp:receivesome(n)
  check(self, "receivesome", "client")
  if #self.buf > 0 then
    local got = sub(self.buf, 1, n)
    self.buf = sub(self.buf, #got + 1)
    return got
  end
  local deadline = deadline_of(self)
  while true do
    local data, err = raw.recv(self.sock, n or CHUNK)
    if data then return data end
    if data ~= false then return nil, err end
    local ok, werr = await(self.sock, "r", deadline)
    if not ok then return nil, werr end
  end
end

-- Sends data[i..j]; returns the index of the last byte sent, or nil,
-- err and that index. Waits while the peer's window is full.
function tcp:send(data, i, j)
  check(self, "send", "client")
  local len = #data
  i = i or 1
  j = j or len
  if i < 0 then i = math.max(len + i + 1, 1) elseif i == 0 then i = 1 end
  if j < 0 then j = len + j + 1 elseif j > len then j = len end
  if j < i then return i - 1 end
  local part = (i == 1 and j == len) and data or sub(data, i, j)
  local sent, total = 0, #part
  local deadline = deadline_of(self)
  while sent < total do
    local n, err = raw.send(self.sock, part, sent + 1)
    if n then
      sent = sent + n
    elseif n == false then
      local ok, werr = await(self.sock, "w", deadline)
      if not ok then return nil, werr, i - 1 + sent end
    else
      return nil, err, i - 1 + sent
    end
  end
  return i - 1 + sent
end

function M.tcp()
  local sock, err = raw.socket("tcp", "inet")
  if not sock then return nil, err end
  return new_tcp(sock, "master", "inet")
end
M.tcp4 = M.tcp

function M.tcp6()
  local sock, err = raw.socket("tcp", "inet6")
  if not sock then return nil, err end
  return new_tcp(sock, "master", "inet6")
end

function M.connect(host, port, timeout_or_local, lport)
  local c, err = M.tcp()
  if not c then return nil, err end
  if type(timeout_or_local) == "number" then c:settimeout(timeout_or_local) end
  local ok
  ok, err = c:connect(host, port)
  if not ok then
    c:close()
    return nil, err
  end
  c:settimeout(nil)
  return c
end
M.connect4 = M.connect

function M.bind(host, port, backlog)
  local srv, err = M.tcp()
  if not srv then return nil, err end
  local ok
  ok, err = srv:bind(host, port)
  if ok then ok, err = srv:listen(backlog) end
  if not ok then
    srv:close()
    return nil, err
  end
  return srv
end

-- UDP -----------------------------------------------------------------------

local udp = {}
udp.__index = udp
udp.__name = "udp"

function udp:__tostring()
  return "udp{" .. self.class .. "}: " .. tostring(self.sock)
end

function udp:settimeout(t) self.timeout = (t and t >= 0) and t or nil; return 1 end
function udp:close() raw.close(self.sock); self.class = "closed"; return 1 end
function udp:getsockname() return raw.sockname(self.sock) end
function udp:getpeername() return raw.peername(self.sock) end
function udp:setoption(name, value) return raw.setoption(self.sock, name, value) end
function udp:getfd() return self.sock end

function udp:setsockname(host, port)
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  return raw.bind(self.sock, ips[1], port)
end

function udp:setpeername(host, port)
  if host == "*" then
    -- As LuaSocket: back to unconnected (an AF_UNSPEC connect).
    self.class = "unconnected"
    self.peer = nil
    return 1
  end
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  local ok
  ok, err = raw.connect(self.sock, ips[1], port)
  if ok == nil then return nil, err end
  self.class = "connected"
  self.peer = { ips[1], port }
  return 1
end

function udp:sendto(data, host, port)
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  local deadline = deadline_of(self)
  while true do
    local n, serr = raw.sendto(self.sock, data, ips[1], port)
    if n then return 1 end
    if n ~= false then return nil, serr end
    local ok, werr = await(self.sock, "w", deadline)
    if not ok then return nil, werr end
  end
end

function udp:send(data)
  if not self.peer then return nil, "not connected" end
  return self:sendto(data, self.peer[1], self.peer[2])
end

function udp:receivefrom(size)
  local deadline = deadline_of(self)
  while true do
    local data, ip, port = raw.recvfrom(self.sock, size or 8192)
    if data then return data, ip, port end
    if data ~= false then return nil, ip end
    local ok, werr = await(self.sock, "r", deadline)
    if not ok then return nil, werr end
  end
end

function udp:receive(size)
  local data, err = self:receivefrom(size)
  return data, data == nil and err or nil
end

function M.udp()
  local sock, err = raw.socket("udp", "inet")
  if not sock then return nil, err end
  return setmetatable({ sock = sock, class = "unconnected" }, udp)
end
M.udp4 = M.udp

function M.udp6()
  local sock, err = raw.socket("udp", "inet6")
  if not sock then return nil, err end
  return setmetatable({ sock = sock, class = "unconnected" }, udp)
end

-- The rest of LuaSocket's base ---------------------------------------------

M.gettime = raw.gettime

function M.sleep(t)
  if t and t > 0 then s.sleep(t) end
end

M.dns = {
  toip = function(host)
    local ips, err = raw.resolve(host)
    if not ips then return nil, err end
    return ips[1], { name = host, alias = {}, ip = ips }
  end,
  gethostname = function()
    local f = io.open("/proc/sys/kernel/hostname")
    local name = f and f:read("l") or "localhost"
    if f then f:close() end
    return name
  end,
}

function M.skip(d, ...)
  return select(d + 1, ...)
end

function M.newtry(finalizer)
  return function(...)
    local ok = ...
    if ok then return ... end
    if finalizer then pcall(finalizer) end
    error({ (select(2, ...)) }, 0)
  end
end

M.try = M.newtry()

function M.protect(f)
  return function(...)
    local results = table.pack(pcall(f, ...))
    if results[1] then return table.unpack(results, 2, results.n) end
    local e = results[2]
    if type(e) == "table" then return nil, e[1] end
    error(e, 0)
  end
end

return M
