-- Every row of SPEC §5 on one space, from the calling process, with helper
-- processes on the node `far`: `require("linda_rows")(ts, far)` asserts
-- each, and leaves the space empty. The cluster tests run it with the
-- space's home on another node than the caller's, so that every operation
-- crosses the network.
local s = require "synodic"
local linda = require "synodic.linda"

return function(ts, far)
  local me = s.self()
  assert(ts:count(linda.any, linda.any) == 0, "the rows start on an empty space")

  -- out / take / in: oldest first, fields keep their type.
  ts:out("job", 1) ts:out("job", 2) ts:out("job", 3.5)
  local tag, n = ts:take("job", linda.any)
  assert(tag == "job" and n == 1, "oldest first")
  assert(select(2, ts["in"](ts, "job", linda.int)) == 2, "in is take")
  assert(math.type(select(2, ts:take("job", linda.number))) == "float")

  -- Formals of every kind, and values of every kind that cross.
  local buf = require("synodic.buffer").fromtable({1, 2, 3}, "u8")
  ts:out("v", 1) ts:out("v", 2.5) ts:out("v", "str") ts:out("v", true) ts:out("v", {1, {2}}) ts:out("v", buf) ts:out("v", me)
  assert(select(2, ts:rdp("v", linda.int)) == 1)
  assert(select(2, ts:rdp("v", linda.float)) == 2.5)
  assert(ts:count("v", linda.number) == 2)
  assert(select(2, ts:rdp("v", linda.string)) == "str")
  assert(select(2, ts:rdp("v", linda.boolean)) == true)
  assert(select(2, ts:rdp("v", linda.table))[2][1] == 2)
  local b = select(2, ts:rdp("v", linda.buffer))
  assert(#b == 3 and b[3] == 3, "a buffer field")
  assert(select(2, ts:rdp("v", me)) == me, "a pid field, matched as an actual")
  assert(ts:count("v", linda.any) == 7)
  assert(ts:count("v", {1, {2}}) == 0, "tables never match as actuals")
  assert(ts:count("v", 1.0) == 1, "1.0 == 1 as in Lua")
  assert(ts:count(linda.any) == 0 and ts:count("v", linda.any, linda.any) == 0, "arity must match")
  assert(#ts:take_all("v", linda.any) == 7)

  -- rd leaves the tuple; inp / rdp give no values when nothing matches.
  assert(select("#", ts:inp("none")) == 0 and select("#", ts:rdp("none")) == 0)
  ts:out("config", 42)
  assert(select(2, ts:rd("config", linda.int)) == 42)
  assert(ts:count("config", linda.int) == 1, "rd leaves the tuple")
  assert(select(2, ts:inp("config", linda.int)) == 42)
  assert(select("#", ts:inp("config", linda.int)) == 0, "inp removed it")

  -- A blocked take on another node is woken by an out from here.
  s.spawn_on(far, function(ts, boss)
    local s, linda = require "synodic", require "synodic.linda"
    s.send(boss, "ready")
    s.send(boss, "taken", select(2, ts:take("later", linda.string)))
  end, ts, me)
  assert(s.receive_match("ready", 10))
  ts:out("later", "hello")
  assert(select(2, s.receive_match("taken", 10)) == "hello")

  -- Timed forms: no values when the time runs out, the tuple when it comes;
  -- a timed-out taker swallows no later tuple.
  local t0 = s.clock()
  assert(select("#", ts:take_within(0.05, "never")) == 0)
  assert(s.clock() - t0 >= 0.045)
  assert(select("#", ts:rd_within(0, "never")) == 0, "0 seconds polls")
  s.spawn_on(far, function(ts) require("synodic").sleep(0.02) ts:out("soon", 1) end, ts)
  assert(select(2, ts:take_within(10, "soon", linda.int)) == 1)
  assert(select("#", ts:take_within(0.01, "late")) == 0)
  ts:out("late", 7)
  assert(select(2, ts:inp("late", linda.int)) == 7)

  -- where(pred): matched here, by the caller's own function.
  for i = 1, 10 do ts:out("n", i) end
  local even = linda.where(function(x) return x % 2 == 0 end)
  assert(ts:count("n", even) == 5)
  assert(select(2, ts:take("n", even)) == 2, "oldest passing tuple")
  assert(select(2, ts:rdp("n", linda.where(function(x) return x > 8 end))) == 9)
  assert(select(2, ts:take("n", linda.where(function(x) return x > 8 end))) == 9)
  local all = ts:take_all("n", even)
  assert(#all == 4 and all[1][2] == 4 and all[4][2] == 10)
  assert(select("#", ts:take_within(0.02, "n", linda.where(function(x) return x > 100 end))) == 0)
  -- A blocked where-taker wakes when a passing tuple comes.
  s.spawn_on(far, function(ts, boss)
    local s, linda = require "synodic", require "synodic.linda"
    s.send(boss, "ready")
    s.send(boss, "big", select(2, ts:take("big", linda.where(function(x) return x > 100 end))))
  end, ts, me)
  assert(s.receive_match("ready", 10))
  ts:out("big", 5)
  ts:out("big", 500)
  assert(select(2, s.receive_match("big", 10)) == 500)
  assert(ts:count("big", linda.any) == 1, "the small one stays")
  local ok, err = pcall(ts.take, ts, "big", linda.where(function() error("pred fails") end))
  assert(not ok and err:find("pred fails"), err)

  -- Wide tuples and templates (more fields than a native function's 20
  -- free stack slots): matched with a where-predicate (the candidate's
  -- fields are pushed to be checked) and with many actual fields.
  local wide = {"wide"}
  for i = 2, 300 do wide[i] = i end
  ts:out(table.unpack(wide))
  local tmpl = {"wide"}
  for i = 2, 299 do tmpl[i] = i end
  tmpl[300] = linda.where(function(x) return x == 300 end)
  local got = table.pack(ts:rdp(table.unpack(tmpl)))
  assert(got.n == 300 and got[300] == 300 and got[150] == 150, "a wide tuple, matched with a where")
  tmpl[300] = 300
  got = table.pack(ts:take(table.unpack(tmpl)))
  assert(got.n == 300 and got[2] == 2, "a wide template of actual fields")

  -- eval: the fields are computed in a new process, then the tuple is out.
  ts:eval("sq", function() return 7 * 7 end, "done")
  local _, sq, done = ts:take("sq", linda.int, linda.string)
  assert(sq == 49 and done == "done")

  -- Bad input: refused with its reason, and the space untouched.
  ok, err = pcall(ts.out, ts, "bad", nil, 3)
  assert(not ok and err:find("field 2 is nil"), err)
  ok, err = pcall(ts.take, ts)
  assert(not ok and err:find("at least one field"), err)
  ok, err = pcall(ts.out, ts, coroutine.create(print))
  assert(not ok and err:find("cannot send value of type thread"), err)

  -- take_all: oldest first; clear empties the space in one call.
  for i = 1, 5 do ts:out("t", i) end
  local list = ts:take_all("t", linda.int)
  assert(#list == 5 and list[1][2] == 1 and list[5][2] == 5)
  ts:out("x", 1) ts:out("y", 1, 2)
  ts:clear()
  assert(ts:count("big", linda.any) == 0 and ts:count("x", linda.any) == 0 and ts:count("y", linda.any, linda.any) == 0)
end
