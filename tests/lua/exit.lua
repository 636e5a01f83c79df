-- s.exit ends the calling process whatever protects it: pcall, xpcall, a
-- coroutine, a callback of a C function that cannot yield. Its DOWN carries
-- the reason given, and code after it never runs.
local s = require "synodic"
local me = s.self()

local function ends_with(reason, body)
  local p = s.spawn(function()
    body()
    s.send(me, "went on")
  end)
  s.monitor(p)
  local tag, who, why = s.receive()
  assert(tag == "DOWN" and who == p, "the process went on after exit: " .. tostring(tag))
  assert(why == reason, "reason: " .. tostring(why))
end

ends_with("plain", function() s.exit("plain") end)
ends_with("pcall", function() print(pcall(s.exit, "pcall")) end)
ends_with("inner", function() pcall(function() s.exit("inner") end) end)
ends_with("xpcall", function() xpcall(s.exit, debug.traceback, "xpcall") end)
ends_with("gsub", function() pcall(string.gsub, "a", "a", function() s.exit("gsub") end) end)
ends_with("sort", function()
  pcall(table.sort, {3, 2, 1}, function(a, b) s.exit("sort") return a < b end)
end)
ends_with("coroutine", function()
  local co = coroutine.create(function() s.exit("coroutine") end)
  print(coroutine.resume(co))
end)
ends_with("wrapped in sort", function()
  local co = coroutine.wrap(function() pcall(s.exit, "wrapped in sort") end)
  pcall(table.sort, {1, 2, 3}, function(a, b) co() return a < b end)
end)
ends_with("where", function()
  local linda = require "synodic.linda"
  local ts = linda.new()
  ts:out(1)
  pcall(ts.rdp, ts, linda.where(function() s.exit("where") end))
end)
ends_with("normal", function() pcall(s.exit) end)
-- A to-be-closed variable still closes on the way out.
local closed = false
local p = s.spawn(function()
  local x <close> = setmetatable({}, {__close = function() s.send(me, "closed") end})
  pcall(string.gsub, "a", "a", function() s.exit("with close") end)
end)
s.monitor(p)
assert(s.receive() == "closed")
assert(select(3, s.receive()) == "with close")
print("exit ok")
