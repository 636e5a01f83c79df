-- synodic.socket: LuaSocket's TCP and UDP API (SPEC §10), so that code
-- written for LuaSocket runs unchanged, over the native calls of
-- synodic.socket.raw. Each call that would block waits for its socket in
-- the node's netpoller (raw.wait): only the calling process waits, never
-- its worker thread. Receive buffering and patterns live here, as in
-- LuaSocket's buffer.c.
--
-- A socket object is the native userdata itself (so it can be sent to
-- another process of the node); these are its methods, and what a handle
-- keeps (class, timeout, unread bytes) is in its state table (raw.state).

local raw = require "synodic.socket.raw"
local s = require "synodic"

local M = { _VERSION = "LuaSocket 3.0-synodic" }

local CHUNK = 65536
-- Deadlines count on the node's monotonic clock, not the wall clock.
local clock = s.clock
local state = raw.state
local find, sub, gsub, concat = string.find, string.sub, string.gsub, table.concat

-- Seconds left before `deadline` (nil: no deadline).
local function left(deadline)
  if not deadline then return nil end
  local t = deadline - clock()
  return t > 0 and t or 0
end

local function deadline_of(st)
  return st.timeout and clock() + st.timeout or nil
end

-- Waits for `sock` to be ready for "r" or "w" before `deadline`.
local function await(sock, how, deadline)
  local t = left(deadline)
  if t == 0 then return nil, "timeout" end
  return raw.wait(sock, how, t)
end

local tcp = {}

local function check(self, fname, class)
  local ok, st = pcall(state, self)
  if not ok or (class and st.class ~= class) then
    error(("bad argument #1 to '%s' (tcp{%s} expected, got %s)"):format(fname, class or "any",
      ok and "tcp{" .. st.class .. "}" or type(self)), 3)
  end
  return st
end

function tcp:settimeout(t, _mode)
  state(self).timeout = (t and t >= 0) and t or nil
  return 1
end

function tcp:getfd() return self end
function tcp:dirty() return #state(self).buf > 0 end
function tcp:close()
  raw.close(self)
  return 1
end
function tcp:shutdown(how) return raw.shutdown(self, how) end
function tcp:getsockname() return raw.sockname(self) end
function tcp:getpeername() return raw.peername(self) end
function tcp:setoption(name, value) return raw.setoption(self, name, value) end
function tcp:setfd() error("setfd is not supported", 2) end
function tcp:getfamily() return state(self).family or "inet" end

-- The addresses of `host` of the socket's family.
local function addresses(self, host)
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  local v6 = (state(self).family == "inet6")
  local mine = {}
  for _, ip in ipairs(ips) do
    if (find(ip, ":", 1, true) ~= nil) == v6 then mine[#mine + 1] = ip end
  end
  if #mine == 0 then return nil, "host not found" end
  return mine
end

-- Connects to the first address of `host` that answers.
function tcp:connect(host, port)
  local st = check(self, "connect", "master")
  local deadline = deadline_of(st)
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  for _, ip in ipairs(ips) do
    local ok
    ok, err = raw.connect(self, ip, port)
    if ok == false then
      ok, err = await(self, "w", deadline)
      if ok then ok, err = raw.connected(self) end
    end
    if ok then
      st.class = "client"
      return 1
    end
    if err == "timeout" then break end
  end
  return nil, err
end

function tcp:bind(host, port)
  check(self, "bind", "master")
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  return raw.bind(self, ips[1], port)
end

function tcp:listen(backlog)
  local st = check(self, "listen", "master")
  -- A deeper queue than LuaSocket's 32: with a process per connection,
  -- bursts of hundreds of connections are normal.
  local ok, err = raw.listen(self, backlog or 1024)
  if ok then st.class = "server" end
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
  local st = check(self, "accept", "server")
  local deadline = deadline_of(st)
  local pause = 0.01
  while true do
    local c, err = raw.accept(self)
    if c then
      local cst = state(c)
      cst.class, cst.family = "client", st.family
      return c
    elseif c == false then
      local ok, werr = await(self, "r", deadline)
      if not ok then return nil, werr end
    elseif err == "too many open files" and (not deadline or left(deadline) > 0) then
      pause = backoff(self, pause)
    else
      return nil, err
    end
  end
end

-- Reads more into the buffer: true, or nil and why.
local function fill(self, st, deadline)
  while true do
    local data, err = raw.recv(self, CHUNK)
    if data then
      st.buf = st.buf .. data
      return true
    elseif data == false then
      local ok, werr = await(self, "r", deadline)
      if not ok then return nil, werr end
    else
      return nil, err
    end
  end
end

local function receive_line(self, st, deadline)
  while true do
    local at = find(st.buf, "\n", 1, true)
    if at then
      local line = sub(st.buf, 1, at - 1)
      st.buf = sub(st.buf, at + 1)
      return (gsub(line, "\r", ""))
    end
    local ok, err = fill(self, st, deadline)
    if not ok then
      local partial = gsub(st.buf, "\r", "")
      st.buf = ""
      return nil, err, partial
    end
  end
end

local function receive_all(self, st, deadline)
  local parts = { st.buf }
  st.buf = ""
  while true do
    local data, err = raw.recv(self, CHUNK)
    if data then
      parts[#parts + 1] = data
    elseif data == false then
      local ok, werr = await(self, "r", deadline)
      if not ok then return nil, werr, concat(parts) end
    elseif err == "closed" then
      return concat(parts)
    else
      return nil, err, concat(parts)
    end
  end
end

local function receive_count(self, st, n, deadline)
  if #st.buf >= n then
    local got = sub(st.buf, 1, n)
    st.buf = sub(st.buf, n + 1)
    return got
  end
  local parts, have = { st.buf }, #st.buf
  st.buf = ""
  while have < n do
    local data, err = raw.recv(self, math.min(CHUNK, math.max(n - have, 4096)))
    if data then
      parts[#parts + 1] = data
      have = have + #data
    elseif data == false then
      local ok, werr = await(self, "r", deadline)
      if not ok then return nil, werr, concat(parts) end
    else
      return nil, err, concat(parts)
    end
  end
  local all = concat(parts)
  st.buf = sub(all, n + 1)
  return sub(all, 1, n)
end

function tcp:receive(pattern, prefix)
  local st = check(self, "receive", "client")
  pattern = pattern or "*l"
  prefix = prefix or ""
  local deadline = deadline_of(st)
  local data, err, partial
  if pattern == "*l" or pattern == "l" then
    data, err, partial = receive_line(self, st, deadline)
  elseif pattern == "*a" or pattern == "a" then
    data, err, partial = receive_all(self, st, deadline)
  elseif type(pattern) == "number" and pattern == math.floor(pattern) then
    data, err, partial = receive_count(self, st, math.max(0, math.tointeger(pattern) - #prefix), deadline)
  else
    error("bad argument #1 to 'receive' (invalid receive pattern)", 2)
  end
  if data then return prefix .. data end
  return nil, err, prefix .. (partial or "")
end

-- What has arrived (at least one byte, at most n): for proxies and
-- parsers that take what comes (OpenResty's receiveany).
function tcp:receiveany(n)
  local st = check(self, "receiveany", "client")
  n = n or CHUNK
  if #st.buf > 0 then
    local got = sub(st.buf, 1, n)
    st.buf = sub(st.buf, #got + 1)
    return got
  end
  local deadline = deadline_of(st)
  while true do
    local data, err = raw.recv(self, n)
    if data then return data end
    if data ~= false then return nil, err end
    local ok, werr = await(self, "r", deadline)
    if not ok then return nil, werr end
  end
end

-- Sends data[i..j]; returns the index of the last byte sent, or nil,
-- err and that index. Waits while the peer's window is full.
function tcp:send(data, i, j)
  local st = check(self, "send", "client")
  data = tostring(data)
  local len = #data
  i = i or 1
  j = j or len
  if i < 0 then i = math.max(len + i + 1, 1) elseif i == 0 then i = 1 end
  if j < 0 then j = len + j + 1 elseif j > len then j = len end
  if j < i then return i - 1 end
  local part = (i == 1 and j == len) and data or sub(data, i, j)
  local sent, total = 0, #part
  local deadline = deadline_of(st)
  while sent < total do
    local n, err = raw.send(self, part, sent + 1)
    if n then
      sent = sent + n
    elseif n == false then
      local ok, werr = await(self, "w", deadline)
      if not ok then return nil, werr, i - 1 + sent end
    else
      return nil, err, i - 1 + sent
    end
  end
  return i - 1 + sent
end

local function new_socket(kind, family)
  local sock, err = raw.socket(kind, family)
  if not sock then return nil, err end
  local st = state(sock)
  st.family = family
  return sock
end

function M.tcp() return new_socket("tcp", "inet") end
M.tcp4 = M.tcp
function M.tcp6() return new_socket("tcp", "inet6") end

-- A connected client: the first address of `host` that answers, IPv4 or IPv6.
function M.connect(host, port, timeout)
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  for _, ip in ipairs(ips) do
    local c
    c, err = new_socket("tcp", find(ip, ":", 1, true) and "inet6" or "inet")
    if not c then return nil, err end
    if type(timeout) == "number" then c:settimeout(timeout) end
    local ok
    ok, err = c:connect(ip, port)
    if ok then
      c:settimeout(nil)
      return c
    end
    c:close()
  end
  return nil, err
end
M.connect4 = M.connect

function M.bind(host, port, backlog)
  local ips, err = raw.resolve(host)
  if not ips then return nil, err end
  local srv
  srv, err = new_socket("tcp", find(ips[1], ":", 1, true) and "inet6" or "inet")
  if not srv then return nil, err end
  local ok
  ok, err = srv:bind(ips[1], port)
  if ok then ok, err = srv:listen(backlog) end
  if not ok then
    srv:close()
    return nil, err
  end
  return srv
end

-- UDP -----------------------------------------------------------------------

local udp = {}

function udp:settimeout(t) state(self).timeout = (t and t >= 0) and t or nil; return 1 end
function udp:close() raw.close(self); return 1 end
function udp:getsockname() return raw.sockname(self) end
function udp:getpeername() return raw.peername(self) end
function udp:setoption(name, value) return raw.setoption(self, name, value) end
function udp:getfd() return self end

function udp:setsockname(host, port)
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  return raw.bind(self, ips[1], port)
end

function udp:setpeername(host, port)
  local st = state(self)
  if host == "*" then
    st.class, st.peer = "unconnected", nil
    return 1
  end
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  local ok
  ok, err = raw.connect(self, ips[1], port)
  if ok == nil then return nil, err end
  st.class, st.peer = "connected", { ips[1], port }
  return 1
end

function udp:sendto(data, host, port)
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  local deadline = deadline_of(state(self))
  while true do
    local n, serr = raw.sendto(self, data, ips[1], port)
    if n then return 1 end
    if n ~= false then return nil, serr end
    local ok, werr = await(self, "w", deadline)
    if not ok then return nil, werr end
  end
end

function udp:send(data)
  local peer = state(self).peer
  if not peer then return nil, "not connected" end
  return self:sendto(data, peer[1], peer[2])
end

function udp:receivefrom(size)
  local deadline = deadline_of(state(self))
  while true do
    local data, ip, port = raw.recvfrom(self, size or 8192)
    if data then return data, ip, port end
    if data ~= false then return nil, ip end
    local ok, werr = await(self, "r", deadline)
    if not ok then return nil, werr end
  end
end

function udp:receive(size)
  local data, err = self:receivefrom(size)
  if data then return data end
  return nil, err
end

function M.udp() return new_socket("udp", "inet") end
M.udp4 = M.udp
function M.udp6() return new_socket("udp", "inet6") end

raw.methods(tcp, udp)

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
