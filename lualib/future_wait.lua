-- s.wait(futures [, n [, timeout]]) (SPEC §6, as Ray's ray.wait): returns
-- two lists, the first `n` futures found ready (default 1; all of them if
-- fewer are given) in the order they became ready, and the others in the
-- order given. With a timeout, returns when it passes, however many are
-- ready. A future not ready yet is watched by a small process that waits
-- in its `get` and tells the caller: nothing polls. The watchers of the
-- futures not taken are ended before it returns.
local s = require "synodic"

local serial = 0

return function(futures, n, timeout)
  if type(futures) ~= "table" then error("bad argument #1 to 'wait' (list of futures expected, got " .. type(futures) .. ")", 2) end
  for i, f in ipairs(futures) do
    if not s._is_future(f) then error("bad argument #1 to 'wait' (item " .. i .. " is not a future)", 2) end
  end
  n = n or 1
  if math.type(n) ~= "integer" or n < 0 then error("bad argument #2 to 'wait' (a count of futures expected)", 2) end
  if timeout ~= nil and type(timeout) ~= "number" then error("bad argument #3 to 'wait' (number of seconds expected)", 2) end
  n = math.min(n, #futures)
  local ready, taken = {}, {}
  for i, f in ipairs(futures) do
    if #ready >= n then break end
    if f:ready() then
      ready[#ready + 1] = f
      taken[i] = true
    end
  end
  if #ready < n then
    serial = serial + 1
    local tag = "$wait." .. tostring(s.self()) .. "." .. serial
    local watchers = {}
    for i, f in ipairs(futures) do
      if not taken[i] then
        watchers[i] = s.spawn(function(f, me, tag, i)
          pcall(f.get, f) -- a task that failed is ready too
          require("synodic").send(me, tag, i)
        end, f, s.self(), tag, i)
      end
    end
    local deadline = timeout and s.clock() + timeout
    while #ready < n do
      local left = deadline and math.max(0, deadline - s.clock())
      local got, i = s.receive_match(tag, left)
      if not got then break end
      ready[#ready + 1] = futures[i]
      taken[i] = true
      watchers[i] = nil
    end
    for _, w in pairs(watchers) do s.kill(w, "normal") end
    -- A watcher that told us before it was killed left a note: dropped.
    while s.receive_match(tag, 0) do end
  end
  local rest = {}
  for i, f in ipairs(futures) do
    if not taken[i] then rest[#rest + 1] = f end
  end
  return ready, rest
end
