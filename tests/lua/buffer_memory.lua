-- A process that receives large buffers and drops them frees them when it
-- next blocks, though its own Lua heap hardly grows (a buffer's bytes live
-- outside it), and their memory serves the next ones: 40 buffers of 24 MB
-- through a process leave the node far below the 960 MB they add up to.
-- A collector the program stopped stays stopped.
local s = require "synodic"
local buffer = require "synodic.buffer"
local testkit = require "testkit"
local me = s.self()
local MB = 1 << 20

local function stream(count, size, collector)
  local sink = s.spawn(function(boss, collector)
    local s = require "synodic"
    collectgarbage(collector)
    while true do
      local n = #s.receive()
      s.send(boss, n)
    end
  end, me, collector)
  for _ = 1, count do
    s.send(sink, buffer.new(size, "u8"))
    assert(s.receive(10) == size, "the sink got its buffer")
  end
end

local start = testkit.rss_kb()
local before = start
stream(40, 24 * MB, "restart")
local grown = (testkit.rss_kb() - before) // 1024
print(string.format("RSS grew %d MB over 40 buffers of 24 MB", grown))
assert(grown < 400, "dropped buffers are kept: +" .. grown .. " MB")

-- With its collector stopped, the sink keeps every buffer it got: 240 MB
-- live. (Measured from the start: the memory the first sink's buffers
-- left to the allocator serves some of these.)
stream(10, 24 * MB, "stop")
grown = (testkit.rss_kb() - start) // 1024
assert(grown >= 200, "a stopped collector ran: +" .. grown .. " MB")
print("buffer_memory ok")
