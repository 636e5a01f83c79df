---@meta synodic.dashboard
-- The live web dashboard (docs/dashboard.md). `synodic run --dashboard
-- ADDR` starts one; a program may start its own.

---@class synodic.dashboard
local dashboard = {}

---@class synodic.dashboard.server
---@field url string   "http://127.0.0.1:PORT/"
---@field host string
---@field port integer
---@field close fun()  stops serving

---Starts a dashboard: `host` (default "127.0.0.1"), `port` (0: any free),
---`key` (hex: HMAC-SHA256 of "synodic dashboard" under the cookie; none:
---read-only). Returns the server, or nil and why.
---@param opts? {host?: string, port?: integer, key?: string}
---@return synodic.dashboard.server?, string?
function dashboard.start(opts) end

---Serves one HTTP request (the server's handler); `keeper` holds the sessions.
---@param req table
---@param keeper synodic.pid
---@return integer, string|function, table
function dashboard.handle(req, keeper) end

---The entry of `--dashboard ADDR`: `text` is "ADDR KEY"; serves until the node ends.
---@param text string
function dashboard.main(text) end

return dashboard
