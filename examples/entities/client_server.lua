-- Client-server (VEOS §5): the client calls the server asynchronously and
-- does not wait; the server answers by calling the client's reply method.
-- usage: synodic run examples/entities/client_server.lua [requests]
local s = require "synodic"
local entity = require "synodic.entity"
local N = math.tointeger(tonumber(arg[1])) or 100

local server = entity.spawn{name = "squares", methods = {
  square = function(self, client, x) require("synodic.entity").send(client, "reply", x, x * x) end,
}}
local client = entity.spawn{
  init = function(self, main, n) self.main, self.n, self.got, self.sum = main, n, 0, 0 end,
  args = {s.self(), N},
  methods = {
    go = function(self)
      local entity = require "synodic.entity"
      for x = 1, self.n do entity.send("squares", "square", self.id, x) end
    end,
    -- The upcall: each answer comes to this method.
    reply = function(self, x, y)
      self.got, self.sum = self.got + 1, self.sum + y
      if self.got == self.n then require("synodic").send(self.main, "all answered", self.got, self.sum) end
    end,
  },
}
entity.send(client, "go")
local _, got, sum = s.receive_match("all answered")
assert(sum == N * (N + 1) * (2 * N + 1) // 6)
print(string.format("client-server: %d requests, %d replies by upcall, sum of squares %d", N, got, sum))
entity.kill(client)
entity.kill(server)
