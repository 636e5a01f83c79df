-- synodic.http: an HTTP/1.1 server and client (SPEC §10). The work is
-- done by the node's shared functions of synodic.http.core
-- (lualib/http_core.lua: connections, bodies, keep-alive, limits, the
-- client); this module starts servers (step 1 there) and gives them their
-- methods.

local s = require "synodic"
local socket = require "synodic.socket"
local core = require "synodic.http.core"
local sockraw = require "synodic.socket.raw"

local M = { request = core.request, get = core.get, reason = core.reason }

local Server = {}
Server.__index = Server

-- Stops accepting: once it returns, new connections are refused (the
-- listener closes for every acceptor, which then ends).
function Server:close()
  sockraw.close(self.listener, true)
  return true
end

function Server:__tostring()
  return string.format("http server on %s:%d", self.host, self.port)
end

function M.serve(opts)
  if type(opts) ~= "table" or type(opts.handler) ~= "function" then
    error("bad argument #1 to 'serve' (a table with a handler function expected)", 2)
  end
  local host = opts.host or "127.0.0.1"
  local tls = (opts.cert_file or opts.key_file) and { cert_file = opts.cert_file, key_file = opts.key_file } or nil
  local listener, err = socket.bind(host, opts.port or 0, opts.backlog, tls)
  if not listener then return nil, err end
  local _, port = listener:getsockname()
  local config = {
    max_header_bytes = opts.max_header_bytes or 65536,
    max_body_bytes = opts.max_body_bytes or 8388608,
    read_timeout = opts.read_timeout or 30,
    pool = opts.pool and true or nil,
  }
  -- One acceptor by default: a connection wakes every process waiting
  -- in accept, and with two the second woke for nothing each time (at one
  -- connection with `ab`, 3,470-3,640 req/s with one against 3,030-3,230
  -- with two; the same with more connections: bench/http/README.md).
  local acceptors = {}
  for i = 1, opts.pool or opts.acceptors or 1 do
    acceptors[i] = s.spawn(core.acceptor, listener, opts.handler, config)
  end
  return setmetatable({ host = host, port = port, listener = listener, acceptors = acceptors }, Server)
end

return M
