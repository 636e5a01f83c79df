-- synodic.socket.core: the functions behind synodic.socket (SPEC §10):
-- LuaSocket's TCP and UDP methods and calls, over the native calls of
-- synodic.socket.raw. Each call that would block waits for its socket in
-- the node's netpoller (raw.wait): only the calling process waits, never
-- its worker thread. Receive buffering and patterns live here, as in
-- LuaSocket's buffer.c.
--
-- A socket object is the native userdata itself (so it can be sent to
-- another process of the node); `tcp_methods.NAME` and `udp_methods.NAME`
-- here are its methods (its class, at the end), and what a handle keeps
-- (class, timeout, unread bytes) is in its state table (raw.state).
--
-- This module is the node's, not a process's (a frozen module, as
-- lualib/entity_loop.lua explains): its main chunk runs once, and every
-- process shares its functions, so a process serving one connection holds
-- none of them (they were ~10 KB of every such process). So its functions
-- keep nothing between calls, and their upvalues are only C functions,
-- strings, numbers and functions of this module. Whatever needs a table
-- or a closure of its own (LuaSocket's dns table, try, protect) is in
-- lualib/socket.lua.

local raw = require "synodic.socket.raw"
local s = require "synodic"
local raw_socket, raw_connect, raw_connected, raw_bind, raw_listen, raw_accept =
  raw.socket, raw.connect, raw.connected, raw.bind, raw.listen, raw.accept
local raw_recv, raw_send, raw_sendto, raw_recvfrom, raw_shutdown = raw.recv, raw.send, raw.sendto, raw.recvfrom, raw.shutdown
local raw_sockname, raw_peername, raw_setoption, raw_close, raw_wait, raw_resolve =
  raw.sockname, raw.peername, raw.setoption, raw.close, raw.wait, raw.resolve
local raw_gettime, raw_warn, raw_tls, raw_handshake, raw_dup = raw.gettime, raw.warn, raw.tls, raw.handshake, raw.dup
local sleep = s.sleep
local pcall, error, type, tostring, ipairs, select = pcall, error, type, tostring, ipairs, select
local min, max, floor, tointeger = math.min, math.max, math.floor, math.tointeger
local format = string.format

local core = {}
-- The sockets' methods, by kind. (Only the main chunk names these tables:
-- a function that kept one could not be shared.)
local tcp_methods, udp_methods = {}, {}

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
  return raw_wait(sock, how, t)
end


-- The state of `self` (`state` raises for what is not a socket), checked
-- to be of `class`.
local function check(self, fname, class)
  local st = state(self)
  if class and st.class ~= class then
    error(format("bad argument #1 to '%s' (tcp{%s} expected, got tcp{%s})", fname, class, st.class), 3)
  end
  return st
end

function tcp_methods.settimeout(self, t, _mode)
  state(self).timeout = (t and t >= 0) and t or nil
  return 1
end

function tcp_methods.getfd(self) return self end
function tcp_methods.dirty(self) return #state(self).buf > 0 end
function tcp_methods.close(self)
  raw_close(self)
  return 1
end
function tcp_methods.shutdown(self, how) return raw_shutdown(self, how) end
function tcp_methods.getsockname(self) return raw_sockname(self) end
function tcp_methods.getpeername(self) return raw_peername(self) end
function tcp_methods.setoption(self, name, value) return raw_setoption(self, name, value) end
function tcp_methods.setfd(self) error("setfd is not supported", 2) end
function tcp_methods.getfamily(self) return state(self).family or "inet" end

-- The addresses of `host` of the socket's family.
local function addresses(self, host)
  local ips, err = raw_resolve(host)
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
function tcp_methods.connect(self, host, port)
  local st = check(self, "connect", "master")
  local deadline = deadline_of(st)
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  for _, ip in ipairs(ips) do
    local ok
    ok, err = raw_connect(self, ip, port)
    if ok == false then
      ok, err = await(self, "w", deadline)
      if ok then ok, err = raw_connected(self) end
    end
    if ok then
      st.class, st.host = "client", host
      return 1
    end
    if err == "timeout" then break end
  end
  return nil, err
end

function tcp_methods.bind(self, host, port)
  check(self, "bind", "master")
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  return raw_bind(self, ips[1], port)
end

function tcp_methods.listen(self, backlog)
  local st = check(self, "listen", "master")
  -- A deeper queue than LuaSocket's 32: with a process per connection,
  -- bursts of hundreds of connections are normal.
  local ok, err = raw_listen(self, backlog or 1024)
  if ok then st.class = "server" end
  return ok, err
end

-- Too many open files: the listener pauses (doubling, at most 1 s) and
-- goes on; one line per episode says so.
local function backoff(self, pause)
  if pause == 0.01 then
    local ip, port = raw_sockname(self)
    raw_warn(format("synodic: listener %s:%s: too many open files; accepting again after a pause", tostring(ip), tostring(port)))
  end
  sleep(pause)
  return min(pause * 2, 1)
end

function tcp_methods.accept(self)
  local st = check(self, "accept", "server")
  local deadline = deadline_of(st)
  local pause = 0.01
  while true do
    local c, err = raw_accept(self)
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
    local data, err = raw_recv(self, CHUNK)
    if data then
      st.buf = st.buf .. data
      return true
    elseif data == false then
      local ok, werr = await(self, err or "r", deadline)
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
    local data, err = raw_recv(self, CHUNK)
    if data then
      parts[#parts + 1] = data
    elseif data == false then
      local ok, werr = await(self, err or "r", deadline)
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
    local data, err = raw_recv(self, min(CHUNK, max(n - have, 4096)))
    if data then
      parts[#parts + 1] = data
      have = have + #data
    elseif data == false then
      local ok, werr = await(self, err or "r", deadline)
      if not ok then return nil, werr, concat(parts) end
    else
      return nil, err, concat(parts)
    end
  end
  local all = concat(parts)
  st.buf = sub(all, n + 1)
  return sub(all, 1, n)
end

function tcp_methods.receive(self, pattern, prefix)
  local st = check(self, "receive", "client")
  pattern = pattern or "*l"
  prefix = prefix or ""
  local deadline = deadline_of(st)
  local data, err, partial
  if pattern == "*l" or pattern == "l" then
    data, err, partial = receive_line(self, st, deadline)
  elseif pattern == "*a" or pattern == "a" then
    data, err, partial = receive_all(self, st, deadline)
  elseif type(pattern) == "number" and pattern == floor(pattern) then
    data, err, partial = receive_count(self, st, max(0, tointeger(pattern) - #prefix), deadline)
  else
    error("bad argument #1 to 'receive' (invalid receive pattern)", 2)
  end
  if data then return prefix .. data end
  return nil, err, prefix .. (partial or "")
end

-- What has arrived (at least one byte, at most n): for proxies and
-- parsers that take what comes (OpenResty's receiveany).
function tcp_methods.receiveany(self, n)
  local st = check(self, "receiveany", "client")
  n = n or CHUNK
  if #st.buf > 0 then
    local got = sub(st.buf, 1, n)
    st.buf = sub(st.buf, #got + 1)
    return got
  end
  local deadline = deadline_of(st)
  while true do
    local data, err = raw_recv(self, n)
    if data then return data end
    if data ~= false then return nil, err end
    local ok, werr = await(self, err or "r", deadline)
    if not ok then return nil, werr end
  end
end

-- A second handle on this connection (a descriptor of its own), for a
-- process that writes while another reads. Not LuaSocket's: Synodic's.
function tcp_methods.dup(self)
  local st = check(self, "dup", "client")
  local c, err = raw_dup(self)
  if not c then return nil, err end
  local cst = state(c)
  cst.class, cst.family, cst.host = "client", st.family, st.host
  return c
end

-- TLS on this socket (SPEC §10): a client gets `{server_name =, ca_file =,
-- verify = true}` (server_name: the host it connected to) and its
-- handshake is done here, so a refused certificate is this call's error;
-- a listener or an accepted connection gets `{cert_file =, key_file =}`.
function tcp_methods.tls(self, opts)
  local st = check(self, "tls")
  opts = opts or {}
  local server = opts.cert_file or opts.key_file or st.class == "server"
  if not server and not opts.server_name then
    opts = { server_name = st.host, ca_file = opts.ca_file, verify = opts.verify }
  end
  local ok, err = raw_tls(self, opts)
  if not ok then return nil, err end
  if server then return 1 end
  local deadline = deadline_of(st)
  while true do
    local done, how = raw_handshake(self)
    if done then return 1 end
    if done == nil then return nil, how end
    local waited, werr = await(self, how, deadline)
    if not waited then return nil, werr end
  end
end

-- Sends data[i..j]; returns the index of the last byte sent, or nil,
-- err and that index. Waits while the peer's window is full.
function tcp_methods.send(self, data, i, j)
  local st = check(self, "send", "client")
  data = tostring(data)
  local len = #data
  i = i or 1
  j = j or len
  if i < 0 then i = max(len + i + 1, 1) elseif i == 0 then i = 1 end
  if j < 0 then j = len + j + 1 elseif j > len then j = len end
  if j < i then return i - 1 end
  local part = (i == 1 and j == len) and data or sub(data, i, j)
  local sent, total = 0, #part
  local deadline = deadline_of(st)
  while sent < total do
    local n, err = raw_send(self, part, sent + 1)
    if n then
      sent = sent + n
    elseif n == false then
      local ok, werr = await(self, err or "w", deadline)
      if not ok then return nil, werr, i - 1 + sent end
    else
      return nil, err, i - 1 + sent
    end
  end
  return i - 1 + sent
end

local function new_socket(kind, family)
  local sock, err = raw_socket(kind, family)
  if not sock then return nil, err end
  local st = state(sock)
  st.family = family
  return sock
end

function core.tcp() return new_socket("tcp", "inet") end
function core.tcp6() return new_socket("tcp", "inet6") end

-- A connected client: the first address of `host` that answers, IPv4 or IPv6.
function core.connect(host, port, timeout)
  local ips, err = raw_resolve(host)
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
      state(c).host = host
      return c
    end
    c:close()
  end
  return nil, err
end

function core.bind(host, port, backlog, tls)
  if type(backlog) == "table" then backlog, tls = nil, backlog end
  local ips, err = raw_resolve(host)
  if not ips then return nil, err end
  local srv
  srv, err = new_socket("tcp", find(ips[1], ":", 1, true) and "inet6" or "inet")
  if not srv then return nil, err end
  local ok
  ok, err = srv:bind(ips[1], port)
  if ok then ok, err = srv:listen(backlog) end
  if ok and tls then ok, err = srv:tls(tls) end
  if not ok then
    srv:close()
    return nil, err
  end
  return srv
end

-- UDP -----------------------------------------------------------------------


function udp_methods.settimeout(self, t) state(self).timeout = (t and t >= 0) and t or nil; return 1 end
function udp_methods.close(self) raw_close(self); return 1 end
function udp_methods.getsockname(self) return raw_sockname(self) end
function udp_methods.getpeername(self) return raw_peername(self) end
function udp_methods.setoption(self, name, value) return raw_setoption(self, name, value) end
function udp_methods.getfd(self) return self end

function udp_methods.setsockname(self, host, port)
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  return raw_bind(self, ips[1], port)
end

function udp_methods.setpeername(self, host, port)
  local st = state(self)
  if host == "*" then
    st.class, st.peer = "unconnected", nil
    return 1
  end
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  local ok
  ok, err = raw_connect(self, ips[1], port)
  if ok == nil then return nil, err end
  st.class, st.peer = "connected", { ips[1], port }
  return 1
end

function udp_methods.sendto(self, data, host, port)
  local ips, err = addresses(self, host)
  if not ips then return nil, err end
  local deadline = deadline_of(state(self))
  while true do
    local n, serr = raw_sendto(self, data, ips[1], port)
    if n then return 1 end
    if n ~= false then return nil, serr end
    local ok, werr = await(self, "w", deadline)
    if not ok then return nil, werr end
  end
end

function udp_methods.send(self, data)
  local peer = state(self).peer
  if not peer then return nil, "not connected" end
  return self:sendto(data, peer[1], peer[2])
end

function udp_methods.receivefrom(self, size)
  local deadline = deadline_of(state(self))
  while true do
    local data, ip, port = raw_recvfrom(self, size or 8192)
    if data then return data, ip, port end
    if data ~= false then return nil, ip end
    local ok, werr = await(self, "r", deadline)
    if not ok then return nil, werr end
  end
end

function udp_methods.receive(self, size)
  local data, err = self:receivefrom(size)
  if data then return data end
  return nil, err
end

function core.udp() return new_socket("udp", "inet") end
function core.udp6() return new_socket("udp", "inet6") end


-- The rest of LuaSocket's base (its tables and closures: lualib/socket.lua).

function core.sleep(t)
  if t and t > 0 then sleep(t) end
end

function core.toip(host)
  local ips, err = raw_resolve(host)
  if not ips then return nil, err end
  return ips[1], { name = host, alias = {}, ip = ips }
end

function core.skip(d, ...)
  return select(d + 1, ...)
end

-- The sockets' metatables, `tcp_class` and `udp_class`: their methods are
-- the functions of `tcp_methods` and `udp_methods` above. Like those
-- functions they are the node's, made once and shared by every process as
-- they are, so a socket costs a process its userdata alone. Nothing may
-- write them: the native side only sets them as a socket's metatable, and
-- `__metatable` keeps them from programs (getmetatable gives "socket").
-- (Their keys are names in this file's code: a string made as the module
-- loads would be the loading state's alone, and the class not shareable.)
local function class(methods)
  return {
    __index = methods, __gc = raw.finalize, __close = raw.release, __tostring = raw.tostring,
    __name = "socket", __metatable = "socket",
  }
end
core.tcp_class, core.udp_class = class(tcp_methods), class(udp_methods)

return core
