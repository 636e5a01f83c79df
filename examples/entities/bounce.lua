-- Bounce, the VEOS paper's billiard simulation (section 6): fifteen balls,
-- a renderer and a console, all entities. The balls form a fully connected
-- causal mesh: each frame a ball sends its position and velocity to every
-- other ball, works out its collisions as their updates come in (elastic,
-- equal masses), and once it has heard from all of them moves and sends
-- the next frame's update, and one more, one way, to the renderer.
--
-- The renderer assembles each frame and writes an HTML page that plays
-- the run back (open it in a browser), and an SVG picture of the last
-- frame; the console prints the frame rate now and then and ends the run.
--
-- Placements (the paper's four): sequential (all on this node),
-- distributed (balls on a second node), wholesale (as distributed, plus
-- an entity beside the balls that bundles their updates for the renderer
-- into one message per frame), parallel (balls over a second and a third
-- node). Run the last three with --nodes 2 or 3.
-- usage: synodic run [--nodes N] examples/entities/bounce.lua [frames] [placement] [out.html] [wrap]
local s = require "synodic"
local entity = require "synodic.entity"

local FRAMES = math.tointeger(tonumber(arg[1])) or 300
local PLACEMENT = arg[2] or "sequential"
local OUT = arg[3] or "bounce.html"
local WRAP = arg[4] == "wrap" -- a table without cushions (opposite edges meet): momentum is kept too
local BALLS, W, H, R, DT = 15, 100.0, 50.0, 2.0, 0.03

-- Where each entity runs.
local nodes = s.nodes()
local function place(i) -- ball i
  if PLACEMENT == "sequential" then return s.node() end
  local far = {}
  for _, n in ipairs(nodes) do if n ~= s.node() then far[#far + 1] = n end end
  assert(#far >= 1, PLACEMENT .. " needs --nodes 2 or more")
  if PLACEMENT == "parallel" then return far[(i - 1) % math.min(2, #far) + 1] end
  return far[1]
end

-- The console: reports the frame rate every `every` frames; ends the run.
local console = entity.spawn{
  init = function(self, main, frames) self.main, self.frames, self.t0 = main, frames, require("synodic").clock() end,
  args = {s.self(), FRAMES},
  methods = {
    shown = function(self, f)
      local s = require "synodic"
      if f % 100 == 0 and f > 0 and f < self.frames then
        io.write(string.format("frame %d, %.1f frames/s\n", f, f / (s.clock() - self.t0)))
      end
      if f == self.frames then s.send(self.main, "done", f / (s.clock() - self.t0)) end
    end,
  },
}

-- Collects ball i's state for frame f; returns the whole frame once every
-- ball's is in (the renderer and the wholesale bundler both collect).
local function assemble(self, f, i, state)
  local p = self.pending[f] or {n = 0}
  self.pending[f] = p
  p[i], p.n = state, p.n + 1
  if p.n < self.balls then return nil end
  self.pending[f] = nil
  return p
end

-- The renderer: one frame is complete when every ball's update for it came.
local renderer = entity.spawn{
  name = "renderer",
  init = function(self, console, balls)
    self.console, self.balls, self.pending, self.frames = console, balls, {}, {}
    -- A complete frame: kept, and the console told.
    function self.show(me, f, all)
      me.frames[f] = all
      require("synodic.entity").send(me.console, "shown", f)
    end
  end,
  args = {console, BALLS},
  methods = {
    ball = function(self, f, i, x, y, vx, vy, hits)
      local p = assemble(self, f, i, {x, y, vx, vy, hits})
      if p then self:show(f, p) end
    end,
    -- A bundle: every ball's update of one frame in one message.
    bundle = function(self, f, all) self:show(f, all) end,
    frames = function(self) return self.frames end,
  },
}

-- Wholesale: an entity beside the balls bundles their updates per frame.
local bundler
if PLACEMENT == "wholesale" then
  bundler = entity.spawn{node = place(1),
    init = function(self, renderer, balls) self.renderer, self.balls, self.pending = renderer, balls, {} end,
    args = {renderer, BALLS},
    methods = {ball = function(self, f, i, x, y, vx, vy, hits)
      local p = assemble(self, f, i, {x, y, vx, vy, hits})
      if p then require("synodic.entity").send(self.renderer, "bundle", f, p) end
    end},
  }
end

-- The balls.
local ball_methods = {
  start = function(self, peers)
    self.peers = peers
    self:send_update()
    -- Updates of balls that started first may be here already.
    self:advance()
  end,
  -- A neighbour's state for frame f: a collision changes this ball's velocity.
  update = function(self, f, x, y, vx, vy)
    local h = self.heard[f] or {n = 0}
    self.heard[f] = h
    h.n = h.n + 1
    h[h.n] = {x, y, vx, vy}
    self:advance()
  end,
}
local ball_init = function(self, i, n, w, h, r, dt, frames, wrap, sink)
  self.i, self.n, self.w, self.h, self.r, self.dt, self.frames, self.wrap, self.sink = i, n, w, h, r, dt, frames, wrap, sink
  self.f, self.heard, self.collisions = 0, {}, 0
  -- A grid of balls with seeded random velocities.
  local cols = 5
  self.x = (w / (cols + 1)) * ((i - 1) % cols + 1)
  self.y = (h / 4) * ((i - 1) // cols + 1)
  local rnd = (i * 7919) % 101 / 101
  local angle = rnd * 2 * math.pi
  self.vx, self.vy = 10 * math.cos(angle), 10 * math.sin(angle)
  local entity = require "synodic.entity"
  -- The difference of two coordinates, across the edge on a table without cushions.
  local function delta(a, b, size)
    local d = a - b
    if self.wrap then
      if d > size / 2 then d = d - size elseif d < -size / 2 then d = d + size end
    end
    return d
  end
  -- An elastic collision of equal masses: the velocity components along
  -- the line of centres are exchanged, if the balls approach each other.
  local function collide(state, other)
    local dx, dy = delta(other[1], state.x0, self.w), delta(other[2], state.y0, self.h)
    local d2 = dx * dx + dy * dy
    if d2 >= (2 * self.r) ^ 2 or d2 == 0 then return end
    local rvx, rvy = other[3] - state.vx0, other[4] - state.vy0
    local along = (rvx * dx + rvy * dy) / d2
    if along >= 0 then return end
    self.vx, self.vy = self.vx + along * dx, self.vy + along * dy
    self.collisions = self.collisions + 1
  end
  function self.send_update(me)
    me.x0, me.y0, me.vx0, me.vy0 = me.x, me.y, me.vx, me.vy
    for _, p in ipairs(me.peers) do entity.send(p, "update", me.f, me.x, me.y, me.vx, me.vy) end
    entity.send(me.sink, "ball", me.f, me.i, me.x, me.y, me.vx, me.vy, me.collisions)
  end
  function self.advance(me)
    while me.peers and me.f < me.frames and me.heard[me.f] and me.heard[me.f].n == #me.peers do
      for _, other in ipairs(me.heard[me.f]) do collide(me, other) end
      me.heard[me.f] = nil
      me.x, me.y = me.x + me.vx * me.dt, me.y + me.vy * me.dt
      if me.wrap then
        me.x, me.y = me.x % me.w, me.y % me.h
      else
        if me.x < me.r then me.x, me.vx = 2 * me.r - me.x, math.abs(me.vx) end
        if me.x > me.w - me.r then me.x, me.vx = 2 * (me.w - me.r) - me.x, -math.abs(me.vx) end
        if me.y < me.r then me.y, me.vy = 2 * me.r - me.y, math.abs(me.vy) end
        if me.y > me.h - me.r then me.y, me.vy = 2 * (me.h - me.r) - me.y, -math.abs(me.vy) end
      end
      me.f = me.f + 1
      me:send_update()
    end
  end
end

local balls = {}
for i = 1, BALLS do
  balls[i] = entity.spawn{node = place(i), init = ball_init, methods = ball_methods,
    args = {i, BALLS, W, H, R, DT, FRAMES, WRAP, bundler or renderer}}
end
local t0 = s.clock()
for i = 1, BALLS do
  local peers = {}
  for j = 1, BALLS do if j ~= i then peers[#peers + 1] = balls[j] end end
  entity.send(balls[i], "start", peers)
end
local _, fps = s.receive_match("done")
local frames = entity.call(renderer, "frames")
-- Each ball counts its side of every collision it has had.
local collisions = 0
for i = 1, BALLS do collisions = collisions + frames[FRAMES][i][5] end
collisions = collisions // 2

-- Momentum and energy of each frame, for the test.
local function totals(fr)
  local px, py, e = 0, 0, 0
  for i = 1, BALLS do
    local b = fr[i]
    px, py, e = px + b[3], py + b[4], e + (b[3] ^ 2 + b[4] ^ 2) / 2
  end
  return px, py, e
end
local px0, py0, e0 = totals(frames[0])
local px1, py1, e1 = totals(frames[FRAMES])

-- The page: every frame's balls, played back on a canvas.
local out = assert(io.open(OUT, "w"))
out:write("<!doctype html><meta charset=utf-8><title>Bounce</title>",
  "<body style='background:#222;color:#ddd;font:14px sans-serif'>",
  string.format("<p>Bounce: %d balls, %d frames (%s), %.1f frames/s</p>", BALLS, FRAMES, PLACEMENT, fps),
  string.format("<canvas id=c width=%d height=%d style='background:#0a5c2e;border:8px solid #5b3a1a'></canvas>", W * 8, H * 8),
  "<script>const F=[")
for f = 0, FRAMES do
  local parts = {}
  for i = 1, BALLS do parts[i] = string.format("%.2f,%.2f", frames[f][i][1], frames[f][i][2]) end
  out:write("[", table.concat(parts, ","), "],")
end
out:write(string.format("];const R=%g,S=8,c=document.getElementById('c').getContext('2d');let f=0;", R),
  "function draw(){c.clearRect(0,0,c.canvas.width,c.canvas.height);const b=F[f];",
  "for(let i=0;i<b.length;i+=2){c.beginPath();c.arc(b[i]*S,b[i+1]*S,R*S,0,7);",
  "c.fillStyle='hsl('+(i*12)+',80%,60%)';c.fill();}f=(f+1)%F.length;requestAnimationFrame(draw);}draw();</script>")
out:close()

-- The last frame as a picture.
local svg = assert(io.open((OUT:gsub("%.html$", "") .. ".svg"), "w"))
svg:write(string.format("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'><rect width='100%%' height='100%%' fill='#0a5c2e'/>", W * 8, H * 8))
for i = 1, BALLS do
  local b = frames[FRAMES][i]
  svg:write(string.format("<circle class='ball' cx='%.1f' cy='%.1f' r='%g' fill='hsl(%d,80%%,60%%)'/>", b[1] * 8, b[2] * 8, R * 8, i * 24))
end
svg:write("</svg>\n")
svg:close()

print(string.format("bounce: %d balls, %d frames, %s, %.1f frames/s, %d collisions; momentum (%.6f, %.6f) -> (%.6f, %.6f), energy %.6f -> %.6f; wrote %s",
  BALLS, FRAMES, PLACEMENT, fps, collisions, px0, py0, px1, py1, e0, e1, OUT))
for _, b in ipairs(balls) do entity.kill(b) end
for _, e in ipairs({renderer, console, bundler}) do entity.kill(e) end
