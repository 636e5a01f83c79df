-- synodic.dashboard: the live web dashboard (SPEC §12), served by an HTTP
-- server of this node (synodic.http) whose handlers gather what they show
-- from every node when asked (synodic.dashboard.data): while no page is
-- open, nothing is sampled and nothing runs but an idle acceptor.
--
-- Started by `synodic run|node --dashboard ADDR`, or by a program:
--   local dash = require("synodic.dashboard").start { host = "127.0.0.1", port = 0, key = KEY }
--   print(dash.url)
--
-- Reading needs nothing. What changes the program (kill, stop, step,
-- continue, break) needs a session, got by proving the cookie: the page
-- asks for a nonce (GET /api/challenge), the user types the cookie, and the
-- browser sends HMAC-SHA256(HMAC-SHA256(cookie, "synodic dashboard"), nonce)
-- (POST /api/login); the node checks it against its key (the inner HMAC,
-- which the command line derives from the cookie) and answers with a
-- session cookie (HttpOnly, SameSite=Strict). The cookie itself is never
-- in a URL, in the page, or on the wire. Without a key (a program that
-- gave none) the dashboard is read-only.
--
-- One process (the keeper, `keeper` below) holds the nonces and sessions;
-- the handlers ask it by message.

local s = require "synodic"
local http = require "synodic.http"
local control = require "synodic.control"
local data = require "synodic.dashboard.data"

local M = {}

local MAX_NONCES, MAX_SESSIONS = 64, 64

-- The keeper: nonces (each used once) and sessions, bounded; oldest go first.
local function keeper(key)
  local s = require "synodic"
  local control = require "synodic.control"
  local nonces, sessions = {}, {}
  local function remember(list, value, max)
    list[#list + 1] = value
    if #list > max then table.remove(list, 1) end
  end
  local function drop(list, value)
    for i, v in ipairs(list) do
      if v == value then table.remove(list, i); return true end
    end
    return false
  end
  while true do
    local what, from, a, b = s.receive()
    if what == "nonce" then
      local nonce = control.token()
      remember(nonces, nonce, MAX_NONCES)
      s.send(from, "dashboard.keeper", nonce)
    elseif what == "login" then
      local token
      if key ~= "" and type(a) == "string" and drop(nonces, a) and control.proof_ok(key, a, b or "") then
        token = control.token()
        remember(sessions, token, MAX_SESSIONS)
      end
      s.send(from, "dashboard.keeper", token)
    elseif what == "check" then
      local ok = false
      for _, t in ipairs(sessions) do ok = ok or t == a end
      s.send(from, "dashboard.keeper", ok, key ~= "")
    elseif what == "stop" then
      return
    end
  end
end

local function ask(keeper_pid, what, ...)
  s.send(keeper_pid, what, s.self(), ...)
  return select(2, s.receive_match("dashboard.keeper", 5))
end

-- Form fields (`a=1&b=2`, percent-encoded) as a table.
local function form(text)
  local out = {}
  for k, v in (text or ""):gmatch("([^&=]+)=([^&]*)") do
    local function dec(x) return (x:gsub("%+", " "):gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)) end
    out[dec(k)] = dec(v)
  end
  return out
end

local function session_of(req)
  return (req.headers.cookie or ""):match("synodic_session=(%x+)")
end

local JSON = { ["Content-Type"] = "application/json", ["Cache-Control"] = "no-store" }

local function reply(value, status)
  return status or 200, data.json(value), JSON
end

local function failed(status, why)
  return status, data.json({ error = why }), JSON
end

-- GET routes: path -> function(query) returning a value for JSON.
local READ = {
  ["/api/nodes"] = function() return data.nodes() end,
  ["/api/processes"] = function(q) return data.processes(q.by, tonumber(q.limit), tonumber(q.offset)) end,
  ["/api/process"] = function(q)
    local stack, why = data.stack(q.node, q.pid)
    if not stack then return nil, why end
    return { pid = q.pid, node = q.node, stack = stack }
  end,
  ["/api/spaces"] = function() return data.spaces() end,
  ["/api/tuples"] = function(q)
    return data.tuples(q.node, tonumber(q.id), tonumber(q.arity), q.first, tonumber(q.max))
  end,
  ["/api/scope"] = function() return data.scope("view") end,
  ["/api/runs"] = function(q) return data.runs(tonumber(q.max)) end,
}

-- POST routes (a session needed): path -> function(fields).
local ACT = {
  ["/api/kill"] = function(f)
    local pid = control.pid(f.pid or "")
    if not pid then return nil, "no pid " .. tostring(f.pid) end
    s.kill(pid, f.why or "killed from the dashboard")
    return { killed = f.pid }
  end,
  ["/api/scope/stop"] = function() return data.scope("stop") end,
  ["/api/scope/continue"] = function() return data.scope("continue") end,
  ["/api/scope/step"] = function(f) return data.scope("step", f.pid, f.node) end,
  ["/api/scope/break"] = function(f)
    local cond = f.condition
    if cond and cond ~= "" then
      local ok, err = load("return (" .. cond .. ")", "=break condition", "t", {})
      if not ok then return nil, err end
    end
    return data.scope("break", cond ~= "" and cond or nil)
  end,
}

-- The index of /api/ (the contract is docs/dashboard.md).
local INDEX = {
  "GET /api/nodes", "GET /api/processes?by=cpu|memory|mailbox&limit=N&offset=N", "GET /api/process?node=NODE&pid=PID",
  "GET /api/spaces", "GET /api/tuples?node=NODE&id=ID&arity=N&first=FIRST&max=N", "GET /api/scope", "GET /api/runs?max=N", "GET /api/events",
  "GET /api/challenge", "POST /api/login", "POST /api/kill", "POST /api/scope/stop", "POST /api/scope/step",
  "POST /api/scope/continue", "POST /api/scope/break", "GET /metrics",
}

-- Server-sent events: the nodes and the scope, every `every` seconds, while
-- the page is open (the stream ends when the page goes).
local function events(every)
  local first = true
  return function()
    if not first then s.sleep(every) end
    first = false
    return "data: " .. data.json({ time = s.clock(), nodes = data.nodes(), scope = data.scope("view") }) .. "\n\n"
  end
end

-- Serves one request; `keeper_pid` holds the sessions.
function M.handle(req, keeper_pid)
  local path, q = req.path, form(req.query)
  if req.method == "GET" or req.method == "HEAD" then
    local body, kind = control.asset(path)
    if body then return 200, body, { ["Content-Type"] = kind, ["Cache-Control"] = "no-cache" } end
    if path == "/metrics" then
      return 200, data.metrics(), { ["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8" }
    end
    if path == "/api" or path == "/api/" then return reply({ endpoints = INDEX }) end
    if path == "/api/challenge" then return reply({ nonce = ask(keeper_pid, "nonce") }) end
    if path == "/api/session" then
      local ok, can = ask(keeper_pid, "check", session_of(req))
      return reply({ authenticated = ok, actions = can })
    end
    if path == "/api/events" then
      -- At most a sample every half second, whatever the page asks.
      return 200, events(math.max(0.5, tonumber(q.every) or 1)), { ["Content-Type"] = "text/event-stream", ["Cache-Control"] = "no-store" }
    end
    local route = READ[path]
    if not route then return failed(404, "no such page: " .. path) end
    local value, why = route(q)
    if value == nil then return failed(404, why or "not found") end
    return reply(value)
  end
  if req.method ~= "POST" then return failed(405, req.method .. " is not served here") end
  local fields = form(req.body)
  if path == "/api/login" then
    local token = ask(keeper_pid, "login", fields.nonce, fields.proof)
    if not token then return failed(403, "the proof of the cookie is wrong (or the nonce was used)") end
    return 200, data.json({ authenticated = true }),
      { ["Content-Type"] = "application/json", ["Set-Cookie"] = "synodic_session=" .. token .. "; HttpOnly; SameSite=Strict; Path=/" }
  end
  local route = ACT[path]
  if not route then return failed(404, "no such action: " .. path) end
  -- A form posted from another site carries no session (SameSite=Strict);
  -- the Origin check refuses the rest.
  local origin = req.headers.origin
  if origin and origin ~= "http://" .. (req.headers.host or "") then return failed(403, "a request from another origin") end
  if not ask(keeper_pid, "check", session_of(req)) then return failed(401, "log in with the cookie first") end
  local value, why = route(fields)
  if value == nil then return failed(400, why or "refused") end
  return reply(value)
end

-- Starts the dashboard: `opts.host` (default 127.0.0.1), `opts.port`
-- (0: any free), `opts.key` (hex; none: read-only). Returns a table with
-- `url`, `host`, `port` and `close()`, or nil and why.
function M.start(opts)
  opts = opts or {}
  local host = opts.host or "127.0.0.1"
  local keeper_pid = s.spawn(keeper, opts.key or "")
  local srv, err = http.serve {
    host = host, port = opts.port or 0, acceptors = 2, read_timeout = 60,
    handler = function(req) return require("synodic.dashboard").handle(req, keeper_pid) end,
  }
  if not srv then
    s.send(keeper_pid, "stop")
    return nil, err
  end
  local shown = host:find(":") and "[" .. host .. "]" or host
  return {
    host = host, port = srv.port, url = string.format("http://%s:%d/", shown, srv.port),
    close = function() srv:close(); s.send(keeper_pid, "stop") end,
  }
end

-- The entry of `--dashboard ADDR`: `text` is "ADDR KEY".
function M.main(text)
  local addr, key = text:match("^(%S+)%s*(%x*)$")
  local host, port = (addr or ""):match("^%[?([^%]]*)%]?:(%d+)$")
  if not host then
    io.stderr:write(string.format("synodic: --dashboard %s: expected HOST:PORT\n", tostring(addr)))
    return
  end
  local dash, err = M.start { host = host, port = tonumber(port), key = key }
  if not dash then
    io.stderr:write(string.format("synodic: dashboard on %s: %s\n", addr, tostring(err)))
    return
  end
  io.stderr:write("synodic: dashboard on " .. dash.url .. "\n")
  io.stderr:flush()
  s.receive() -- lives as long as the node (its server's processes are its own)
end

return M
