---@meta synodic.http
-- HTTP/1.1 server and client on the scheduler (SPEC §10).

---@class synodic.http.server
---@field port integer
local server = {}
---Stops accepting.
function server:close() end

---@class synodic.http
local http = {}

---Starts a server and returns it at once; `handler(req)` runs per connection.
---@param opts {host?: string, port?: integer, handler: fun(req: table): (integer, string|nil, table|nil), max_header_bytes?: integer, max_body_bytes?: integer, read_timeout?: number, cert_file?: string, key_file?: string}
---@return synodic.http.server?, string?
function http.serve(opts) end

---A client call: status, body, headers, or nil, err.
---@param req {url: string, method?: string, headers?: table, body?: string, timeout?: number}
---@return integer?, string?, table?
function http.request(req) end

---`http.request{url = url}`.
---@param url string
---@return integer?, string?, table?
function http.get(url) end

---The reason phrase of a status code.
---@param status integer
---@return string
function http.reason(status) end

return http
