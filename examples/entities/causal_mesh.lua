-- Fully connected causal mesh (VEOS §5): every entity sends its value to
-- every other; once it has heard from all of them for a frame, it computes
-- its next value (here the mean of all) and sends that. Hearing from all
-- the others is the token: the entities go in lock-step without a clock.
-- usage: synodic run examples/entities/causal_mesh.lua [entities] [frames]
local s = require "synodic"
local entity = require "synodic.entity"
local n = math.tointeger(tonumber(arg[1])) or 6
local frames = math.tointeger(tonumber(arg[2])) or 20

local mesh = {}
for i = 1, n do
  mesh[i] = entity.spawn{
    init = function(self, main, i, frames) self.main, self.i, self.v, self.f, self.frames, self.heard = main, i, i * 1.0, 0, frames, {} end,
    args = {s.self(), i, frames},
    methods = {
      start = function(self, peers)
        self.peers = peers
        for _, p in ipairs(peers) do require("synodic.entity").send(p, "update", self.f, self.v) end
      end,
      update = function(self, f, v)
        local h = self.heard[f] or {n = 0, sum = 0}
        self.heard[f] = h
        h.n, h.sum = h.n + 1, h.sum + v
        -- A frame is done once every other entity has been heard from.
        while self.heard[self.f] and self.heard[self.f].n == #self.peers do
          local done = self.heard[self.f]
          self.heard[self.f] = nil
          self.v = (done.sum + self.v) / (#self.peers + 1)
          self.f = self.f + 1
          if self.f == self.frames then
            return require("synodic").send(self.main, "settled", self.i, self.v)
          end
          for _, p in ipairs(self.peers) do require("synodic.entity").send(p, "update", self.f, self.v) end
        end
      end,
    },
  }
end
for i = 1, n do
  local peers = {}
  for j = 1, n do if j ~= i then peers[#peers + 1] = mesh[j] end end
  entity.send(mesh[i], "start", peers)
end
local mean = (n + 1) / 2
for _ = 1, n do
  local _, _, v = s.receive_match("settled")
  assert(math.abs(v - mean) < 1e-9, v)
end
print(string.format("causal mesh: %d entities, %d frames in lock-step, all agree on %.1f", n, frames, mean))
for i = 1, n do entity.kill(mesh[i]) end
