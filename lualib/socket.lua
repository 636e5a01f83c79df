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
