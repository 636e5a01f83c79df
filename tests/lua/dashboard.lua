-- The dashboard's contract (SPEC §12, docs/dashboard.md): /api/ and its
-- JSON answers, /metrics in Prometheus's text format, the live stream,
-- what is refused (an action without a session, a wrong proof, a used
-- nonce, an unknown page, a method not served), the tuple scope driven
-- through the API, and an answer while every worker is busy.
-- (Logging in with the right proof is the browser test's: the page
-- computes it; crates/cli/tests/dashboard.rs.)
local s = require "synodic"
local http = require "synodic.http"
local socket = require "synodic.socket"
local linda = require "synodic.linda"
local cjson = require "cjson"

local dash = assert(require("synodic.dashboard").start { port = 0, key = string.rep("ab", 32) })
assert(dash.url:match("^http://127%.0%.0%.1:%d+/$"), dash.url)

local function get(path)
  local status, body, headers = http.request { url = dash.url .. path:sub(2), timeout = 10 }
  return status, body, headers
end
local function get_json(path)
  local status, body, headers = get(path)
  assert(status == 200, path .. ": " .. tostring(status) .. " " .. tostring(body))
  assert(headers["content-type"] == "application/json", path)
  return cjson.decode(body)
end
local function post(path, body, cookie)
  return http.request { url = dash.url .. path:sub(2), method = "POST", body = body or "", timeout = 10,
    headers = { ["Content-Type"] = "application/x-www-form-urlencoded", Cookie = cookie } }
end

-- Something to see: a space with two classes and a waiting take.
local jobs = linda.open("jobs")
jobs:out("job", 1)
jobs:out("job", 2)
jobs:out("result", "x")
local waiter = s.spawn(function()
  local l = require "synodic.linda"
  l.open("jobs"):take("answer", l.int)
end)
s.register("the-waiter", waiter)

-- The page and its files come from the node.
local status, page, headers = get("/")
assert(status == 200 and headers["content-type"]:match("^text/html") and page:match("<script src=\"/app.js\">"), page)
assert(not page:match("https?://[^\"]*%.js"), "no script from the network")
assert(get("/app.js") == 200 and get("/style.css") == 200)

-- /api/ lists the endpoints.
local index = get_json("/api/")
assert(#index.endpoints >= 10)

-- Nodes.
local nodes = get_json("/api/nodes")
assert(#nodes == 1 and nodes[1].node == s.node() and nodes[1].up == true and nodes[1].state == "up", cjson.encode(nodes))
for _, field in ipairs { "processes", "rss", "cpu", "messages", "workers", "load", "pool_queued", "pool_idle", "time" } do
  assert(type(nodes[1][field]) == "number", field)
end
assert(nodes[1].rss > 0 and type(nodes[1].links) == "table")

-- Processes: the top ones by memory, paginated, with what they wait on.
-- (Figures are live: a process may grow between the two pages, the
-- dashboard's own handler first; the pair is asked again until it agrees.)
local paged = false
for _ = 1, 5 do
  local top = get_json("/api/processes?by=memory&limit=2")
  assert(top.by == "memory" and top.total >= 4 and #top.processes == 2, cjson.encode(top))
  assert(top.processes[1].memory >= top.processes[2].memory)
  local rest = get_json("/api/processes?by=memory&limit=2&offset=2")
  assert(#rest.processes >= 1)
  if rest.processes[1].memory <= top.processes[2].memory then paged = true break end
end
assert(paged, "the second page follows the first")
local all = get_json("/api/processes?limit=1000")
local found
for _, p in ipairs(all.processes) do
  if p.names[1] == "the-waiter" then found = p end
end
assert(found and found.state == "waiting" and found.on == "tuple" and found.node == s.node(), cjson.encode(all))
assert(found.fn:match("dashboard%.lua:%d+: in function"), "its current function: " .. tostring(found.fn))

-- Inspect: the stack of that process.
local inspected = get_json("/api/process?node=" .. s.node() .. "&pid=" .. found.pid)
assert(inspected.stack:match("take"), inspected.stack)
assert(get("/api/process?node=" .. s.node() .. "&pid=<0.999.0>") == 404)
assert(get("/api/process?pid=" .. found.pid) == 404, "no node named: a clear answer, not a handler's error")

-- Spaces: classes, counts, the waiter and its template.
local spaces = get_json("/api/spaces")
assert(#spaces == 1, cjson.encode(spaces))
local sp = spaces[1]
assert(sp.name == "jobs" and sp.tuples == 3 and sp.waiting == 1 and sp.outs == 3, cjson.encode(sp))
assert(#sp.classes == 2 and sp.classes[1].first == '"job"' and sp.classes[1].count == 2, cjson.encode(sp.classes))
assert(sp.waiters[1].template == '("answer", ?int)' and sp.waiters[1].mode == "take" and sp.waiters[1].pid == found.pid)

-- Dump one class.
local tuples = get_json("/api/tuples?node=" .. s.node() .. "&id=" .. sp.id .. "&arity=2&first=%22job%22")
assert(#tuples == 2 and tuples[1] == '("job", 1)' and tuples[2] == '("job", 2)', cjson.encode(tuples))

-- A class whose first field needs escapes is dumped as well; a first field
-- that is code is refused, never run (a reader needs no session).
local function urlencode(text) return (text:gsub("[^%w]", function(c) return string.format("%%%02X", c:byte()) end)) end
linda.open("odd"):out('say "hi"\n\0', 7)
local odd
for _, sp in ipairs(get_json("/api/spaces")) do if sp.name == "odd" then odd = sp end end
local dumped = get_json("/api/tuples?node=" .. s.node() .. "&id=" .. odd.id .. "&arity=2&first=" .. urlencode(odd.classes[1].first))
assert(#dumped == 1, cjson.encode(dumped))
local code = '"a" .. ("x"):rep(99) .. "b"'
assert(get("/api/tuples?node=" .. s.node() .. "&id=" .. odd.id .. "&arity=2&first=" .. urlencode(code)) == 404)

-- Skeleton runs and entities, each with what it says of itself.
local entity = require "synodic.entity"
entity.spawn { name = "ticker", frame_rate = 100, persist = { tick = function() end } }
s.spawn(function(boss)
  local s, skel = require "synodic", require "synodic.skel"
  local tasks = {}
  for i = 1, 6 do tasks[i] = i end
  skel.run(skel.farm(function(x) require("synodic").sleep(0.2) return x end), tasks)
  s.send(boss, "run over")
end, s.self())
local runs
repeat
  runs = get_json("/api/runs")
until #runs.skeletons == 1 and runs.skeletons[1].stats:match("in flight") and #runs.entities == 1 and runs.entities[1].stats:match("frames")
assert(runs.skeletons[1].stats:match("^run %d+: %d/6 tasks done"), runs.skeletons[1].stats)
assert(runs.entities[1].stats:match("^entity ticker: %d+ frames, [%d.]+ frames/s %(rate 100%.0/s%)"), runs.entities[1].stats)

-- The scope, read.
local scope = get_json("/api/scope")
assert(scope.stopped == false and #scope.held == 0 and scope.steps == 0)

-- /metrics: Prometheus's text format, counters in _total.
local mstatus, metrics, mheaders = get("/metrics")
assert(mstatus == 200 and mheaders["content-type"]:match("^text/plain; version=0%.0%.4"))
local types = {}
for line in metrics:gmatch("[^\n]+") do
  local name, kind = line:match("^# TYPE (%S+) (%S+)$")
  if name then
    types[name] = kind
    assert(kind ~= "counter" or name:match("_total$"), name .. ": a counter's name ends in _total")
  elseif not line:match("^# HELP ") then
    local metric, labels, value = line:match("^([%a_:][%w_:]*){(.-)} (%S+)$")
    assert(metric and types[metric] and tonumber(value), "not a sample line: " .. line)
    assert(labels:match('^node="[^"]+"'), line)
  end
end
assert(types.synodic_messages_delivered_total == "counter" and types.synodic_resident_memory_bytes == "gauge")
assert(metrics:match('synodic_space_tuples{node="[^"]+",space="jobs"} 3'), metrics)
assert(metrics:match('synodic_space_tuples{node="[^"]+",space="odd"} 1'), metrics)
-- The example Grafana dashboard charts only metrics that are served.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$")
local grafana = assert(io.open(here .. "/../../docs/grafana-dashboard.json")):read("a")
local charted = 0
for _, panel in ipairs(cjson.decode(grafana).panels) do
  for _, target in ipairs(panel.targets) do
    local metric = target.expr:match("synodic_[%w_]+")
    assert(types[metric], "docs/grafana-dashboard.json charts " .. tostring(metric) .. ", which /metrics does not serve")
    charted = charted + 1
  end
end
assert(charted >= 10)
assert(metrics:match('synodic_space_operations_total{node="[^"]+",space="jobs",op="out"} 3'), metrics)

-- The live stream sends its first event at once.
local conn = assert(socket.connect("127.0.0.1", dash.port))
conn:settimeout(10)
assert(conn:send("GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n"))
local seen = ""
repeat
  local chunk, err, partial = conn:receive(1)
  seen = seen .. (chunk or partial or "")
  assert(chunk or partial ~= "", "the event stream: " .. tostring(err))
until seen:match("data: {.-}\n")
assert(seen:match("text/event%-stream"), seen)
conn:close()

-- Refused: actions without a session, a wrong proof, an unknown nonce,
-- an unknown page, a method not served.
local st, body = post("/api/scope/stop")
assert(st == 401 and cjson.decode(body).error:match("log in"), body)
st = post("/api/kill", "pid=" .. found.pid, "synodic_session=0123456789abcdef")
assert(st == 401)
local nonce = get_json("/api/challenge").nonce
assert(#nonce == 32)
st, body = post("/api/login", "nonce=" .. nonce .. "&proof=" .. string.rep("00", 32))
assert(st == 403, body)
st = post("/api/login", "nonce=" .. nonce .. "&proof=" .. string.rep("00", 32))
assert(st == 403, "a nonce is used once")
assert(get("/api/nothing") == 404)
assert(http.request { url = dash.url .. "api/nodes", method = "PUT", body = "", timeout = 10 } == 405)
assert(s.whereis("the-waiter") == waiter, "nothing was killed")
assert(s.receive_match("run over", 10), "the skeleton run ended")
assert(#get_json("/api/runs").skeletons == 0, "a run over is no longer listed")
assert(not get_json("/api/scope").stopped, "nothing was stopped")

-- It answers while every worker is busy (preemption gives its handler a turn).
local busy = {}
for i = 1, 4 do busy[i] = s.spawn(function() while true do end end) end
local t = s.clock()
assert(#get_json("/api/nodes") == 1)
local took = s.clock() - t
assert(took < 3, string.format("the dashboard took %.2f s to answer under load", took))

for _, p in ipairs(busy) do s.kill(p) end
dash.close()
print("dashboard ok")
