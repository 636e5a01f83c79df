-- Transmit-only (VEOS §5): sources send updates one way to a sink (a
-- renderer, a sound server); no receipts. Each source transmits once per
-- frame from a persistent procedure, for a number of frames.
-- usage: synodic run examples/entities/transmit_only.lua [sources] [frames]
local s = require "synodic"
local entity = require "synodic.entity"
local sources = math.tointeger(tonumber(arg[1])) or 3
local frames = math.tointeger(tonumber(arg[2])) or 10

local sink = entity.spawn{
  init = function(self, main, expected) self.main, self.expected, self.got, self.last, self.ordered = main, expected, 0, {}, true end,
  args = {s.self(), sources * frames},
  methods = {
    show = function(self, source, frame)
      if frame ~= (self.last[source] or 0) + 1 then self.ordered = false end
      self.last[source], self.got = frame, self.got + 1
      if self.got == self.expected then require("synodic").send(self.main, "shown", self.got, self.ordered) end
    end,
  },
}
for i = 1, sources do
  entity.spawn{
    init = function(self, sink, i, frames) self.sink, self.i, self.frames = sink, i, frames end,
    args = {sink, i, frames},
    persist = {emit = function(self)
      local entity = require "synodic.entity"
      entity.send(self.sink, "show", self.i, self.frame + 1)
      if self.frame + 1 == self.frames then entity.kill(entity.self()) end
    end},
  }
end
local _, got, ordered = s.receive_match("shown")
assert(ordered)
print(string.format("transmit-only: %d sources, %d updates at the sink, in order per source", sources, got))
entity.kill(sink)
