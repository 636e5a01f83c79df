-- A private space (linda.new) lives while a handle to it exists anywhere:
-- in a process, in a message on its way, in a tuple of another space. When
-- none is left, it goes, with its tuples, and leaves nothing behind: a
-- million made and forgotten do not make the node grow in proportion.
-- (200,000 forgotten spaces of one tuple each used to stay for good:
-- +225 MB.)
local s = require "synodic"
local testkit = require "testkit"
local linda = require "synodic.linda"
local me = s.self()

local rss_kb = testkit.rss_kb

local function round()
  for _ = 1, 20000 do
    local ts = linda.new()
    ts:out("payload", string.rep("x", 200))
  end
  collectgarbage()
  collectgarbage()
end

round(); round()
local settled = rss_kb()
for _ = 1, 10 do round() end
local after_200k = rss_kb() - settled
for _ = 1, 40 do round() end
local after_1m = rss_kb() - settled
print(string.format("RSS grew %d KB over 200,000 forgotten spaces, %d KB over 1,000,000", after_200k, after_1m))
assert(after_1m < 40 * 1024, "forgotten spaces are not freed")
assert(after_1m < after_200k + 8 * 1024, "the node grows with the spaces made and forgotten")

-- A handle in a message keeps its space alive after the sender forgot it.
local keeper = s.spawn(function()
  local ts = s.receive()
  collectgarbage()
  s.send(me, ts:take("kept", linda.any))
end)
do
  local ts = linda.new()
  ts:out("kept", "in a message")
  s.send(keeper, ts)
end
collectgarbage(); collectgarbage()
assert(select(2, s.receive()) == "in a message")

-- A handle in a tuple keeps its space alive too.
local holder = linda.new()
do
  local inner = linda.new()
  inner:out("kept", "in a tuple")
  holder:out("space", inner)
end
collectgarbage(); collectgarbage()
local _, inner = holder:take("space", linda.any)
assert(select(2, inner:take("kept", linda.any)) == "in a tuple")
print("linda_private_gc ok")
