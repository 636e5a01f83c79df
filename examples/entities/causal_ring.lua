-- Causal ring (VEOS §5): k tokens pass around a ring of n entities; an
-- entity that receives a token passes it on, so there are only ever k
-- messages in flight (the ring's own flow control).
-- usage: synodic run examples/entities/causal_ring.lua [entities] [tokens] [rounds]
local s = require "synodic"
local entity = require "synodic.entity"
local n = math.tointeger(tonumber(arg[1])) or 8
local k = math.tointeger(tonumber(arg[2])) or 3
local rounds = math.tointeger(tonumber(arg[3])) or 100

local ring = {}
for i = 1, n do
  ring[i] = entity.spawn{
    init = function(self, main, i) self.main, self.i, self.passed = main, i, 0 end,
    args = {s.self(), i},
    methods = {
      link = function(self, next) self.next = next end,
      token = function(self, t, hops)
        self.passed = self.passed + 1
        if hops == 0 then return require("synodic").send(self.main, "token home", t) end
        require("synodic.entity").send(self.next, "token", t, hops - 1)
      end,
      passed = function(self) return self.passed end,
    },
  }
end
for i = 1, n do entity.send(ring[i], "link", ring[i % n + 1]) end
for t = 1, k do entity.send(ring[1], "token", t, n * rounds) end
for _ = 1, k do s.receive_match("token home") end
local total = 0
for i = 1, n do total = total + entity.call(ring[i], "passed") end
assert(total == k * (n * rounds + 1))
print(string.format("causal ring: %d entities, %d tokens, %d rounds each: %d method calls", n, k, rounds, total))
for i = 1, n do entity.kill(ring[i]) end
