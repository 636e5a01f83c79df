-- The Lithium paper's application: true-colour pictures through a
-- two-stage pipeline, a blur then an oil-paint effect (area filters over
-- five pixels each way), as a skeleton program. The filters are C
-- (examples/skel/filters.c, see docs/skeletons.md to build it); Lua only
-- moves the pictures, as synodic.buffer values.
--
-- usage: synodic run [--nodes N] examples/skel/images.lua [count] [width]
--          [height] [words...]
--   count   pictures (default 30), width x height (default 640 x 480)
--   words, in any order:
--     optimised (default: lookahead, lazy binding, load balancing), plain
--     (none of them) or sequential (one process, no skeleton);
--     remote: only the other nodes compute (this one coordinates, as the
--     paper's client did);
--     FILE.ppm: writes the first result there, to look at
-- Prints the mode, the time and a checksum of all results (the same in
-- every mode).
local s = require "synodic"
local skel = require "synodic.skel"

local count = math.tointeger(tonumber(arg[1])) or 30
local width = math.tointeger(tonumber(arg[2])) or 640
local height = math.tointeger(tonumber(arg[3])) or 480
local mode, remote, out = "optimised", false, nil
for i = 4, #arg do
  local word = arg[i]
  if word == "optimised" or word == "plain" or word == "sequential" then
    mode = word
  elseif word == "remote" then
    remote = true
  elseif word:match("%.ppm$") then
    out = word
  else
    error("unknown word " .. word .. ": optimised, plain, sequential, remote or FILE.ppm", 0)
  end
end
local nodes = s.nodes()
if remote then
  nodes = {}
  for _, n in ipairs(s.nodes()) do if n ~= s.node() then nodes[#nodes + 1] = n end end
  if #nodes == 0 then error("remote: there is no other node", 0) end
end

local ok, filters = pcall(require, "filters")
if not ok then
  error("the filters module is not built: cc -O2 -shared -fPIC -I vendor/lua-5.4.8 -I include " ..
    "examples/skel/filters.c -o filters.so (and put it on LUA_CPATH_5_4)", 0)
end

-- The stages run in the nodes' pools, so each requires the module itself.
local function blur(img)
  local f = require "filters"
  return {f.blur(img.pixels, img.w, img.h, 5), w = img.w, h = img.h}
end
local function oil(img)
  local f = require "filters"
  return {pixels = f.oil(img[1], img.w, img.h, 5, 20), w = img.w, h = img.h}
end

local pictures = {}
for i = 1, count do
  pictures[i] = {pixels = filters.picture(width, height, i), w = width, h = height}
end

local function run(pictures)
  if mode == "sequential" then
    local results = {}
    for i, p in ipairs(pictures) do results[i] = oil(blur(p)) end
    return results
  end
  local plain = mode == "plain"
  return skel.run(skel.pipeline(blur, oil), pictures, {
    nodes = nodes,
    lookahead = not plain and {min = 2, max = 6} or false,
    lazy = not plain,
    balance = not plain,
    progress = true,
  })
end

-- Untimed, two tiny pictures: the pools' workers start and load the
-- module, as this process already has.
run({{pixels = filters.picture(16, 16, 1), w = 16, h = 16}, {pixels = filters.picture(16, 16, 2), w = 16, h = 16}})
local started = s.clock()
local results = run(pictures)
local took = s.clock() - started

local sum = 0
for _, r in ipairs(results) do sum = (sum * 31 + filters.checksum(r.pixels)) % (1 << 53) end
print(("%s: %d pictures %dx%d, blur then oil, on %d node(s): %.2f s, checksum %d"):format(
  mode, count, width, height, mode == "sequential" and 1 or #nodes, took, sum))

if out then
  local f = assert(io.open(out, "wb"))
  f:write(("P6\n%d %d\n255\n"):format(width, height), results[1].pixels:bytes())
  f:close()
end
