-- The code entities spawned alike share (crates/lua/src/vm/template_code.rs):
-- from the second spawn of the same code on, an entity starts as a copy of
-- a template whose functions' prototypes are loaded once for the node, and
-- its strings are looked up among theirs. A program can tell nothing: a
-- string an entity receives or makes is its code's constant where the text
-- is the same (equality, table keys), errors name their lines, collections
-- leave the code alone, and the entity holds closures, not prototypes.
local s = require "synodic"
local entity = require "synodic.entity"

local words = {}
for i = 1, 150 do words[i] = "word" .. i end
local big = load("return function() return {" .. table.concat(words, "=1, ") .. "=1} end")()

local methods = {
  is_needle = function(self, x) return x == "needle" end,
  made = function(self) local a = "nee" return (a .. "dle") == "needle" end,
  lookup = function(self, k) local t = {needle = 1, [("hay") .. "stack"] = 2} return t[k] end,
  fail = function(self) error("boom") end,
  churn = function(self)
    for i = 1, 2000 do local t = {tostring(i), "needle" .. i} end
    collectgarbage() collectgarbage("step", 0) collectgarbage()
    return "needle"
  end,
  big = function(self) return big().word77 end,
  heap = function() collectgarbage() return collectgarbage("count") * 1024 end,
}

-- The first spawn decodes the code; the second builds the template; the
-- rest are copies of it.
local es = {}
for i = 1, 6 do es[i] = entity.spawn{methods = methods} end
for i, e in ipairs(es) do
  assert(entity.call(e, "is_needle", "needle") == true, "a received string is the constant (entity " .. i .. ")")
  assert(entity.call(e, "is_needle", "needles") == false, "and only that one")
  assert(entity.call(e, "made"), "a string made at run time is the constant")
  assert(entity.call(e, "lookup", "needle") == 1 and entity.call(e, "lookup", "haystack") == 2, "table keys either way")
  local ok, err = pcall(entity.call, e, "fail")
  assert(not ok and tostring(err):find("template_code.lua:%d+: boom"), "an error names its line: " .. tostring(err))
  assert(entity.call(e, "churn") == "needle", "collections leave the code alone")
  assert(entity.call(e, "big") == 1, "a large function runs")
  assert(entity.call(e, "made") and entity.call(e, "is_needle", "needle"), "and all still holds after them")
end

-- The large function's prototype (150 constants, ~4 KB) is the node's:
-- a copy holds a closure of it.
local heap = entity.call(es[#es], "heap")
print(string.format("a copy's state: %.0f bytes", heap))
assert(heap < 7000, "a copy holds its code's prototypes: " .. heap .. " bytes")

for _, e in ipairs(es) do entity.kill(e) end
print("template_code ok")
