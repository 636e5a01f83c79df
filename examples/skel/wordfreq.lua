-- A map: the most frequent words of a text. Each task is a text; split cuts
-- it into chunks of lines, each chunk's words are counted where it is, and
-- merge adds the counts up.
-- usage: synodic run [--nodes N] examples/skel/wordfreq.lua [file] [top]
-- (file "" or none: a text of its own)
local skel = require "synodic.skel"

local file, top = arg[1] ~= "" and arg[1] or nil, math.tointeger(tonumber(arg[2])) or 5
local text
if file then
  text = assert(io.open(file)):read("a")
else
  -- The opening of Lua's reference manual, a few times over.
  local intro = [[Lua is a powerful, efficient, lightweight, embeddable scripting language.
It supports procedural programming, object-oriented programming, functional
programming, data-driven programming, and data description.
Lua combines simple procedural syntax with powerful data description
constructs based on associative arrays and extensible semantics.
]]
  text = intro:rep(50)
end

local function split(t)
  local chunks, chunk = {}, {}
  for line in t:gmatch("[^\n]+") do
    chunk[#chunk + 1] = line
    if #chunk == 20 then chunks[#chunks + 1], chunk = table.concat(chunk, "\n"), {} end
  end
  if #chunk > 0 then chunks[#chunks + 1] = table.concat(chunk, "\n") end
  return chunks
end

local function count(chunk)
  local counts = {}
  for word in chunk:lower():gmatch("%a+") do counts[word] = (counts[word] or 0) + 1 end
  return counts
end

local function merge(all)
  local counts = {}
  for _, c in ipairs(all) do
    for word, n in pairs(c) do counts[word] = (counts[word] or 0) + n end
  end
  return counts
end

local counts = skel.run(skel.map(split, count, merge), {text})[1]
local words = {}
for word, n in pairs(counts) do words[#words + 1] = {word, n} end
table.sort(words, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
for i = 1, math.min(top, #words) do print(words[i][1], words[i][2]) end
