---@meta synodic.socket
-- Sockets on the scheduler, with LuaSocket's API (SPEC §10).

---A TCP or UDP socket object (LuaSocket's methods: accept, receive, send,
---settimeout, close, shutdown, getsockname, getpeername, setoption, tls,
---connect, bind, listen; UDP: setsockname, setpeername, sendto, receivefrom).
---@class synodic.socket.object: userdata

---@class synodic.socket
---@field dns table toip, tohostname, gethostname
local socket = {}

---A connected TCP client, or nil, err.
---@param host string
---@param port integer
---@param timeout? number
---@return synodic.socket.object?, string?
function socket.connect(host, port, timeout) end
---`connect` over IPv4.
---@return synodic.socket.object?, string?
function socket.connect4(host, port, timeout) end
---A listening TCP server (port 0: any free port), or nil, err.
---@param host string
---@param port integer
---@param backlog? integer
---@param tls? {cert_file: string, key_file: string}
---@return synodic.socket.object?, string?
function socket.bind(host, port, backlog, tls) end
---An unconnected TCP object.
---@return synodic.socket.object
function socket.tcp() end
---@return synodic.socket.object
function socket.tcp4() end
---@return synodic.socket.object
function socket.tcp6() end
---A UDP object.
---@return synodic.socket.object
function socket.udp() end
---@return synodic.socket.object
function socket.udp4() end
---@return synodic.socket.object
function socket.udp6() end
---Sockets ready to read and to write, as LuaSocket's.
---@param recvt? table
---@param sendt? table
---@param timeout? number
---@return table, table, string?
function socket.select(recvt, sendt, timeout) end
---Seconds since the epoch.
---@return number
function socket.gettime() end
---Blocks only the calling process.
---@param seconds number
function socket.sleep(seconds) end
---LuaSocket's error helpers.
---@return function
function socket.newtry(finalizer) end
---@return function
function socket.protect(f) end
function socket.try(...) end
---Drops the first `n` values.
function socket.skip(n, ...) end

return socket
