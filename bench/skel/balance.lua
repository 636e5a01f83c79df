-- bench/skel, load balancing (the Lithium paper's Figures 11 and 12): a
-- farm of equal tasks over two computing nodes, each with one worker pinned
-- to a core of its own; during a window of the run an outside program (a
-- busy loop pinned to the second node's core) takes half of that core.
-- Prints, per node, the tasks done and the mean in-flight limit before,
-- during and after the window, and draws both histories as an SVG.
-- usage: synodic run --join ADDR balance.lua FIRST SECOND HOG_AT HOG_FOR SECONDS OUT.svg
--   FIRST, SECOND: the computing nodes' names (NAME, or NAME@HOST); the
--   busy loop goes on core 1, where run.sh pinned SECOND.
local s = require "synodic"
local skel = require "synodic.skel"

local first, second = arg[1], arg[2]
local hog_at, hog_for, seconds = tonumber(arg[3]), tonumber(arg[4]), tonumber(arg[5])
local out = arg[6]

local function node_named(name)
  for _, n in ipairs(s.nodes()) do
    if n == name or n:sub(1, #name + 1) == name .. "@" then return n end
  end
  error("no node called " .. name)
end
local a, b = node_named(first), node_named(second)

-- About 20 ms of computing each.
local function work(n)
  local x = 0
  for i = 1, 1500000 do x = x + i % 7 end
  return n + x % 2
end

os.execute(("(sleep %s; exec taskset -c 1 timeout %s sh -c 'while :; do :; done') >/dev/null 2>&1 &"):format(hog_at, hog_for))
local ev = skel.evaluator(skel.farm(work), {nodes = {a, b}, trace = true, lookahead = {min = 1, max = 6}})
local started = s.clock()
local added = 0
-- Keep the farm fed for `seconds`: tasks in hand never run out.
while s.clock() - started < seconds do
  while added - ev.finished < 24 do
    added = added + 1
    ev:add_task(added)
  end
  ev:step()
end
for _ in ev:results() do end
local history = ev:history()

-- Tasks done and the mean limit per node in each window.
local windows = {{"before", 0, hog_at}, {"loaded", hog_at, hog_at + hog_for}, {"after", hog_at + hog_for, seconds}}
print("| node | window | tasks | tasks/s | mean in-flight limit |")
print("|---|---|---|---|---|")
for _, node in ipairs({a, b}) do
  for _, w in ipairs(windows) do
    local done_at_start, done_at_end, limit_time, last_t, last_limit = nil, 0, 0, w[2], nil
    for _, h in ipairs(history) do
      local t, n, _, limit, done = table.unpack(h)
      if n == node then
        if t <= w[2] then done_at_start = done end
        if t <= w[3] then done_at_end = done end
        if t >= w[2] and t <= w[3] and last_limit then limit_time = limit_time + last_limit * (t - last_t) end
        if t >= w[2] and t <= w[3] then last_t = t end
        if t <= w[3] then last_limit = limit end
      end
    end
    limit_time = limit_time + (last_limit or 0) * (w[3] - last_t)
    local tasks = done_at_end - (done_at_start or 0)
    print(("| %s | %s (%.1f-%.1f s) | %d | %.1f | %.2f |"):format(node == a and first or second, w[1], w[2], w[3], tasks, tasks / (w[3] - w[2]), limit_time / (w[3] - w[2])))
  end
end

-- The picture: tasks done (top) and in-flight limit (bottom) over time.
local W, H, pad = 760, 460, 50
local top, bottom = {y = 30, h = 240}, {y = 320, h = 100}
local most = 0
for _, h in ipairs(history) do most = math.max(most, h[5]) end
local function x(t) return pad + (W - 2 * pad) * t / seconds end
local svg = {('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'):format(W, H)}
local function add(f, ...) svg[#svg + 1] = f:format(...) end
add('<rect width="%d" height="%d" fill="white"/>', W, H)
add('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f3d9c9"/>', x(hog_at), top.y, x(hog_at + hog_for) - x(hog_at), bottom.y + bottom.h - top.y)
add('<text x="%.1f" y="%d">%s loaded from outside</text>', x(hog_at) + 4, top.y + 14, second)
for _, panel in ipairs({top, bottom}) do
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', pad, panel.y + panel.h, W - pad, panel.y + panel.h)
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>', pad, panel.y, pad, panel.y + panel.h)
end
add('<text x="%d" y="%d">tasks done (0 to %d)</text>', pad + 4, top.y - 8, most)
add('<text x="%d" y="%d">in-flight limit (0 to 6)</text>', pad + 4, bottom.y - 8)
add('<text x="%d" y="%d" text-anchor="end">%.0f s</text>', W - pad, H - 10, seconds)
add('<text x="%d" y="%d">0 s</text>', pad, H - 10)
local colours = {[a] = "#1f77b4", [b] = "#d95f02"}
for i, node in ipairs({a, b}) do
  local done, limit = {}, {}
  local last_limit
  for _, h in ipairs(history) do
    local t, n, _, l, d = table.unpack(h)
    if n == node then
      done[#done + 1] = ("%.1f,%.1f"):format(x(t), top.y + top.h - top.h * d / math.max(most, 1))
      if last_limit then limit[#limit + 1] = ("%.1f,%.1f"):format(x(t), bottom.y + bottom.h - bottom.h * last_limit / 6) end
      limit[#limit + 1] = ("%.1f,%.1f"):format(x(t), bottom.y + bottom.h - bottom.h * l / 6)
      last_limit = l
    end
  end
  add('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>', colours[node], table.concat(done, " "))
  add('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>', colours[node], table.concat(limit, " "))
  add('<text x="%d" y="%d" fill="%s">%s</text>', W - pad - 120, top.y + 20 * i, colours[node], node == a and first or second)
end
add("</svg>")
local f = assert(io.open(out, "w"))
f:write(table.concat(svg, "\n"), "\n")
f:close()
