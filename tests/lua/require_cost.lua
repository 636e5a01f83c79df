-- require of a built-in module costs next to nothing: a process that does
-- `local s = require "synodic"` itself stays as small as one that gets the
-- module as an upvalue (it used to take ~6 KB more, opening the package
-- library). 20,000 idle processes of each kind, measured by resident memory.
local s = require "synodic"
local testkit = require "testkit"
local me = s.self()
local N = 20000

local rss_kb = testkit.rss_kb

local function grow(member)
  collectgarbage()
  local before = rss_kb()
  for _ = 1, N do s.spawn(member, me) end
  for _ = 1, N do s.receive() end
  return (rss_kb() - before) / N
end

local with_upvalue = grow(function(main) s.send(main, "up") s.receive() end)
local with_require = grow(function(main)
  local s = require "synodic"
  s.send(main, "up")
  s.receive()
end)
print(string.format("KB per idle process: %.2f with an upvalue, %.2f with require", with_upvalue, with_require))
assert(with_require < 6.5, "an idle process that requires synodic takes more than 6.5 KB (the benchmark measures it exactly)")
assert(with_require < with_upvalue + 1, "require costs a process more than 1 KB")
print("require_cost ok")
