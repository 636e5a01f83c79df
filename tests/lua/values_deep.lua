-- Values nested up to the codec's depth limit (200 levels of tables and
-- functions, docs/wire-format.md) cross intact, from a fresh process (whose
-- Lua stack is still small), as a message, as spawn arguments and in a tuple;
-- one level more is a clear error. Chains of closures (each the upvalue of the
-- next) and trees of them walk the encoder's upvalue path, chains of tables
-- its table path.
local s = require "synodic"
local linda = require "synodic.linda"
local me = s.self()

local function closure_chain(n)
  local f = function() return 0 end
  for _ = 2, n do
    local inner = f
    f = function() return inner() + 1 end
  end
  return f
end

local function closure_tree(depth)
  if depth == 1 then return function() return 1 end end
  local left, right = closure_tree(depth - 1), closure_tree(depth - 1)
  return function() return left() + right() end
end

local function table_chain(n)
  local t = {}
  for _ = 2, n do t = {next = t} end
  return t
end

local function length(t)
  local n = 1
  while t.next do n, t = n + 1, t.next end
  return n
end

local LIMIT = 200

-- Built and sent by a fresh process.
local ts = linda.new()
s.spawn(function()
  s.send(me, closure_chain(LIMIT), closure_tree(9), table_chain(LIMIT))
  ts:out("deep", closure_chain(LIMIT))
  s.spawn(function(f, g) s.send(me, "spawned", f(), g()) end, closure_chain(LIMIT), closure_tree(8))
  local ok, err = pcall(s.send, me, closure_chain(LIMIT + 1))
  s.send(me, "too deep", ok, err)
  ok, err = pcall(s.send, me, table_chain(LIMIT + 1))
  s.send(me, "too deep", ok, err)
end)

local chain, tree, tables = s.receive()
assert(chain() == LIMIT - 1, "a chain of closures arrives whole")
assert(tree() == 2 ^ 8, "a tree of closures arrives whole")
assert(length(tables) == LIMIT, "a chain of tables arrives whole")
local _, from_space = ts:take("deep", linda.any)
assert(from_space() == LIMIT - 1, "through a tuple space")
-- The grandchild's message and its parent's two come in either order.
local too_deep = 0
for _ = 1, 3 do
  local tag, a, b = s.receive()
  if tag == "spawned" then
    assert(a == LIMIT - 1 and b == 2 ^ 7, "as spawn arguments")
  else
    assert(tag == "too deep" and not a and b:find("nested deeper than 200 levels"), tostring(b))
    too_deep = too_deep + 1
  end
end
assert(too_deep == 2)
print("values_deep ok")
