-- Every row of SPEC §7 from the calling process, for entities placed on
-- `node` (nil: this node): `require("entity_rows")(node, tag)` asserts each
-- (`tag` keeps the names of several runs apart).
local s = require "synodic"
local entity = require "synodic.entity"

return function(node, tag)
  local me = s.self()
  tag = tag or "local"

  -- spawn: name, init with args, methods; call returns results; self().
  local counter = entity.spawn{
    name = "counter " .. tag, node = node, args = {10},
    init = function(self, start) self.n = start end,
    methods = {
      add = function(self, k) self.n = self.n + k end,
      get = function(self) return self.n, require("synodic").node() end,
      whoami = function(self) return require("synodic.entity").self(), self.id end,
      apply = function(self, f, ...) return f(self, ...) end,
      fail = function() error("method boom") end,
      unsendable = function() return io.stdout end,
      -- An entity calling itself is served at once (a message would wait for itself).
      twice = function(self) return 2 * require("synodic.entity").call(self.id, "get") end,
      ask_missing = function(self) return require("synodic.entity").call(self.id, "nope") end,
      deep = function(self) local function inner() error("deep boom") end inner() end,
    },
    errors = me,
  }
  local n, where = entity.call(counter, "get")
  assert(n == 10 and where == (node or s.node()), "init ran with its args, on the node asked")
  local a, b = entity.call(counter, "whoami")
  assert(a == counter and b == counter, "self() is the entity's id")
  assert(entity.self() == nil, "outside an entity, self() is nil")

  -- send: asynchronous, in order; by name too.
  for _ = 1, 5 do entity.send(counter, "add", 1) end
  entity.send("counter " .. tag, "add", 100)
  assert(entity.call(counter, "get") == 115)
  -- Arguments may be code.
  assert(entity.call(counter, "apply", function(self, k) return self.n * k end, 2) == 230)

  -- Errors: raised in the caller of call; reported with the id for send; the entity goes on.
  local ok, err = pcall(entity.call, counter, "fail")
  assert(not ok and err:find("method boom"), err)
  ok, err = pcall(entity.call, counter, "nope")
  assert(not ok and err:find("no method 'nope'"), err)
  entity.send(counter, "fail")
  local _, who, text = s.receive_match("entity.error", 10)
  assert(who == counter and text:find("method 'fail'") and text:find("method boom") and text:find("counter " .. tag, 1, true), text)
  entity.send(counter, "nope")
  _, who, text = s.receive_match("entity.error", 10)
  assert(who == counter and text:find("no method 'nope'"), text)
  assert(entity.call(counter, "get") == 115, "the entity went on")
  assert(entity.call(counter, "twice") == 230, "a call to itself")
  ok, err = pcall(entity.call, counter, "ask_missing")
  assert(not ok and err:find("no method 'nope'"), err)
  -- A result that cannot be sent back is the caller's error too.
  ok, err = pcall(entity.call, counter, "unsendable")
  assert(not ok and err:find("userdata"), err)
  -- A report's traceback runs from the error down to the method, and no
  -- further (the entity's own loop is not the program's business).
  entity.send(counter, "deep")
  _, who, text = s.receive_match("entity.error", 10)
  assert(text:find("deep boom") and text:find("in local 'inner'") and text:find("entity_rows.lua"), text)
  assert(not text:find("xpcall") and not text:find("%?"), text)
  -- A failed send_flow call is acknowledged all the same.
  for _ = 1, entity.flow_limit + 2 do entity.send_flow(counter, "fail") end
  for _ = 1, entity.flow_limit + 2 do s.receive_match("entity.error", 10) end
  assert(entity.call(counter, "get") == 115, "the entity went on")

  -- define / undefine while calls arrive: calls before the define see the
  -- old method, calls after it the new one (one caller's calls stay in order).
  for _ = 1, 3 do entity.send(counter, "add", 1) end
  entity.define(counter, "get", function(self) return -self.n end)
  assert(entity.call(counter, "get") == -118)
  entity.define(counter, "double", function(self) self.n = self.n * 2 end)
  entity.send(counter, "double")
  assert(entity.call(counter, "get") == -236)
  entity.undefine(counter, "double")
  ok, err = pcall(entity.call, counter, "double")
  assert(not ok and err:find("no method 'double'"), err)

  -- send_flow: the caller waits while more than flow_limit calls are unprocessed.
  local slow = entity.spawn{node = node, methods = {
    work = function(self) self.done = (self.done or 0) + 1 require("synodic").sleep(0.005) end,
    done = function(self) return self.done end,
  }}
  local limit, N = entity.flow_limit, 40
  entity.flow_limit = 4
  local t0 = s.clock()
  for _ = 1, N do entity.send_flow(slow, "work") end
  local held = s.clock() - t0
  entity.flow_limit = limit
  assert(held >= (N - 4) * 0.005 * 0.9, "the caller was held back: " .. held)
  assert(entity.call(slow, "done") == N)

  -- persist: procedures run once per frame, in turn, each to completion;
  -- between frames the entity handles the calls that came.
  local framed = entity.spawn{node = node, frame_rate = 200,
    init = function(self) self.log = {} end,
    persist = {
      a = function(self) self.log[#self.log + 1] = "a" .. self.frame end,
      b = function(self) self.log[#self.log + 1] = "b" .. self.frame end,
    },
    methods = {
      log = function(self) return self.log end,
      frame = function(self) return self.frame end,
      set = function(self, x) self.x = x end,
      seen = function(self) return self.seen end,
    },
  }
  entity.persist(framed, "c", function(self) self.seen = self.x end)
  entity.send(framed, "set", 42)
  local f0 = entity.call(framed, "frame")
  while entity.call(framed, "frame") < f0 + 2 do s.sleep(0.005) end
  assert(entity.call(framed, "seen") == 42, "a frame sees the updates sent before it began")
  local log = entity.call(framed, "log")
  for i = 1, #log - 1, 2 do
    assert(log[i]:sub(1, 1) == "a" and log[i + 1]:sub(1, 1) == "b" and log[i]:sub(2) == log[i + 1]:sub(2), "frames in order and complete")
  end
  entity.unpersist(framed, "a")
  entity.unpersist(framed, "b")
  entity.unpersist(framed, "c")
  local stopped = #entity.call(framed, "log")
  s.sleep(0.03)
  assert(#entity.call(framed, "log") == stopped, "unpersisted procedures run no more")

  -- frame_rate caps the frames; a busy entity does not stop others.
  local capped = entity.spawn{node = node, frame_rate = 50, persist = {tick = function() end},
    methods = {frame = function(self) return self.frame end}}
  local busy = entity.spawn{node = node, persist = {spin = function() for _ = 1, 1e5 do end end}}
  local c0, t1 = entity.call(capped, "frame"), s.clock()
  s.sleep(0.2)
  local frames = entity.call(capped, "frame") - c0
  local per_second = frames / (s.clock() - t1)
  assert(per_second <= 60 and frames >= 3, "capped at 50 frames/s: " .. per_second)

  -- spawn: an entity that ends before it is ready is an error, not a wait
  -- for ever; one slow to start is watched while it starts, and then no
  -- longer (its end later sends the spawner nothing).
  ok, err = pcall(entity.spawn, {node = node, init = function() require("synodic").exit("gone") end})
  assert(not ok and err:find("ended before it was ready %(gone%)"), err)
  local sluggish = entity.spawn{node = node, init = function() require("synodic").sleep(1.2) end}
  s.monitor(sluggish)
  entity.kill(sluggish)
  s.receive_match(function(t, p) return t == "DOWN" and p == sluggish end, 10)
  entity.call(counter, "get") -- after anything else the ended entity's node sent
  assert(s.receive_match(function(t, p) return t == "DOWN" and p == sluggish end, 0) == nil, "one DOWN: the spawn's watch was removed")

  -- kill: the entity ends once it has handled what came before.
  for _, e in ipairs({counter, slow, framed, capped, busy}) do
    s.monitor(e)
    entity.kill(e)
    local _, gone = s.receive_match(function(t, p) return t == "DOWN" and p == e end, 10)
    assert(gone == e, "killed")
  end
  assert(s.whereis("counter " .. tag) == nil, "its name went with it")
end
