-- synodic.socket: LuaSocket's TCP and UDP API (SPEC §10), so that code
-- written for LuaSocket runs unchanged. The calls and the sockets'
-- methods are the node's shared functions of synodic.socket.core
-- (lualib/socket_core.lua); this module adds what LuaSocket has that
-- needs a table or a closure of its own: the dns table, try, newtry and
-- protect, and the aliases.

local core = require "synodic.socket.core"
local raw = require "synodic.socket.raw"

local M = { _VERSION = "LuaSocket 3.0-synodic" }

M.tcp, M.tcp6, M.udp, M.udp6 = core.tcp, core.tcp6, core.udp, core.udp6
M.tcp4, M.udp4 = core.tcp, core.udp
M.connect, M.connect4, M.bind = core.connect, core.connect, core.bind
M.gettime, M.sleep, M.skip = raw.gettime, core.sleep, core.skip

M.dns = {
  toip = core.toip,
  gethostname = function()
    local f = io.open("/proc/sys/kernel/hostname")
    local name = f and f:read("l") or "localhost"
    if f then f:close() end
    return name
  end,
}

-- LuaSocket's select: the sockets of `recvt` ready to read and of `sendt`
-- ready to write, each as an array that is also a set; "timeout" when
-- none is. A socket with bytes already received and not read is ready.
-- Only the calling process waits (the node's netpoller).
function M.select(recvt, sendt, timeout)
  recvt, sendt = recvt or {}, sendt or {}
  local buffered = {}
  for i, sk in ipairs(recvt) do
    local dirty = sk.dirty
    if dirty and dirty(sk) then buffered[#buffered + 1] = i end
  end
  if #buffered > 0 or (timeout and timeout < 0) then timeout = #buffered > 0 and 0 or nil end
  local rr, ww = raw.select(recvt, sendt, timeout)
  local seen, readable, writable = {}, {}, {}
  for _, list in ipairs { buffered, rr } do
    for _, i in ipairs(list) do
      if not seen[i] then
        seen[i] = true
        readable[#readable + 1] = recvt[i]
        readable[recvt[i]] = true
      end
    end
  end
  for _, i in ipairs(ww) do
    writable[#writable + 1] = sendt[i]
    writable[sendt[i]] = true
  end
  if #readable == 0 and #writable == 0 then return readable, writable, "timeout" end
  return readable, writable
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
