-- Named, private and default spaces; handles sent to other processes;
-- eval; count, take_all and clear.
local s = require "synodic"
local linda = require "synodic.linda"
local me = s.self()

-- Named spaces are shared by name; handles compare equal.
local a = linda.open("shared")
assert(a == linda.open("shared") and a ~= linda.open("other"))
assert(linda.default == linda.open("default"))
s.spawn(function() linda.open("shared"):out("from child", 1) end)
assert(select(2, a:take("from child", linda.int)) == 1)

-- A private space reaches another process as a handle.
local private = linda.new()
s.spawn(function(ts) ts:out("via handle", ts == ts) end, private)
assert(select(2, private:take("via handle", linda.boolean)) == true)
local ok, err = pcall(linda.open, 12)
assert(not ok and err:find("space name expected"), err)
ok, err = pcall(private.out, "not a space", 1)
assert(not ok and err:find("tuple space expected"), err)

-- eval: function fields run in a new process, then the tuple is out.
private:eval("square", 7, function() return 7 * 7 end)
local tag, n, sq = private:take("square", linda.int, linda.int)
assert(tag == "square" and n == 7 and sq == 49)

-- count, take_all (oldest first), clear.
for i = 1, 5 do private:out("k", i) end
private:out("other", 1)
assert(private:count("k", linda.int) == 5)
local all = private:take_all("k", linda.int)
assert(#all == 5 and all[1][2] == 1 and all[5][2] == 5 and all[3][1] == "k")
assert(private:count("k", linda.int) == 0 and private:count("other", linda.int) == 1)
private:clear()
assert(private:count("other", linda.int) == 0)
print("linda_spaces ok")
