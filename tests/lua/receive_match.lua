-- Selective receive (SPEC §2): s.receive_match(filter [, timeout]) takes the
-- oldest message whose first value equals filter (or that filter, a
-- function, accepts); every other message stays queued, in order.
local s = require "synodic"
local me = s.self()

local function drain()
  local all = {}
  while true do
    local v = table.pack(s.receive(0))
    if v.n == 0 then return all end
    all[#all + 1] = v[1]
  end
end

-- Tagged replies in any order; the rest keeps its order.
for _, tag in ipairs{"a", "b", "c", "b", "d"} do s.send(me, tag, tag .. "!") end
local tag, v = s.receive_match("b")
assert(tag == "b" and v == "b!")
assert(s.receive_match("d") == "d")
assert(table.concat(drain(), " ") == "a c b", "the others stay, in order")

-- Lua's == on plain values: 1 equals 1.0, and pids, booleans work.
s.send(me, 1.0, "float one")
s.send(me, true, "yes")
s.send(me, me, "from me")
assert(select(2, s.receive_match(1)) == "float one")
assert(select(2, s.receive_match(me)) == "from me")
assert(select(2, s.receive_match(true)) == "yes")

-- A function filter sees all the values.
for i = 1, 10 do s.send(me, "n", i) end
local _, n = s.receive_match(function(t, x) return t == "n" and x > 7 end)
assert(n == 8)
assert(#drain() == 9)

-- DOWN messages interleaved with replies.
local workers = {}
for i = 1, 3 do
  workers[i] = s.spawn(function(i) s.send(me, "reply", i) end, i)
  s.monitor(workers[i])
end
local downs, replies = 0, 0
for _ = 1, 3 do
  local _, who = s.receive_match("DOWN")
  assert(who == workers[1] or who == workers[2] or who == workers[3])
  downs = downs + 1
end
for _ = 1, 3 do
  local t, i = s.receive_match("reply")
  replies = replies + i
end
assert(downs == 3 and replies == 6 and #drain() == 0)

-- Timeouts: no values, and the mailbox as it was.
s.send(me, "other")
local t0 = s.clock()
assert(select("#", s.receive_match("never", 0.05)) == 0, "a timeout returns no values")
assert(s.clock() - t0 >= 0.045)
assert(select("#", s.receive_match("never", 0)) == 0)
-- Blocking: the wanted message comes after others; they stay.
s.spawn(function()
  s.send(me, "first")
  s.send(me, "second")
  s.sleep(0.02)
  s.send(me, "wanted", 42)
end)
assert(select(2, s.receive_match("wanted", 5)) == 42)
assert(table.concat(drain(), " ") == "other first second")

-- Errors: a bad filter; a failing filter (its message stays); receiving
-- inside a filter.
local ok, err = pcall(s.receive_match, {})
assert(not ok and err:find("plain value or a function expected"), err)
s.send(me, "kept")
ok, err = pcall(s.receive_match, function() error("filter failed") end)
assert(not ok and err:find("filter failed"), err)
ok, err = pcall(s.receive_match, function() return s.receive(0) end)
assert(not ok and err:find("inside a receive_match filter"), err)
assert(s.receive(0) == "kept", "the message a filter failed on is still there")
print("receive_match ok")
