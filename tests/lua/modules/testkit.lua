-- What several test scripts share: `local testkit = require "testkit"`
-- (the test harness puts tests/lua/modules on the path, LUA_PATH_5_4).
local s = require "synodic"
local M = {}

-- The node's resident memory, in KB.
function M.rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local kb = f:read("a"):match("VmRSS:%s*(%d+)")
  f:close()
  return tonumber(kb)
end

-- Bounces a counter `rounds` times between the caller and a new process;
-- returns when every round is done (a test of whether processes still run).
function M.ping_pong(rounds)
  local me = s.self()
  local ponger = s.spawn(function()
    while true do
      local from, n = s.receive()
      s.send(from, n + 1)
    end
  end)
  local n = 0
  for _ = 1, rounds do
    s.send(ponger, me, n)
    n = s.receive()
  end
  assert(n == rounds, n)
end

-- Waits until `cond()` holds, looking every `step` seconds (default 0.02);
-- fails naming `what` if `limit` seconds pass first. Returns the time it took.
function M.wait_until(what, limit, cond, step)
  local t = s.clock()
  while not cond() do
    assert(s.clock() - t < limit, "no " .. what .. " within " .. limit .. " s")
    s.sleep(step or 0.02)
  end
  return s.clock() - t
end

-- The nodes of the cluster other than this one, in order.
function M.other_nodes()
  local others = {}
  for _, n in ipairs(s.nodes()) do
    if n ~= s.node() then others[#others + 1] = n end
  end
  return others
end

-- The first node of the cluster other than this one.
function M.other_node()
  return M.other_nodes()[1] or error("a cluster of one node")
end

-- A process on `node` that sends back whatever it gets: `send(echo, me,
-- ...)` comes back as `...`; `"stop"` ends it.
function M.echo_on(node)
  return s.spawn_on(node, function()
    local s = require "synodic"
    while true do
      local msg = table.pack(s.receive())
      if msg[2] == "stop" then return end
      s.send(msg[1], table.unpack(msg, 2, msg.n))
    end
  end)
end

-- Returns once `n` callers wait on the space `name` of this node (its
-- home), as the tuple scope shows them. (Nothing announces a queued
-- waiter, so this looks every millisecond.)
function M.await_waiting(name, n)
  local control = require "synodic.control"
  while true do
    for _, sp in ipairs(control.spaces()) do
      if sp.name == name and sp.waiting >= n then return end
    end
    s.sleep(0.001)
  end
end

return M
